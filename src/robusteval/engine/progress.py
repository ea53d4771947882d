"""The progress display: done/total, cached, new, failed, tokens and ETA, drawn with rich."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from robusteval.types import Response


class RichProgress:
    """A ProgressSink for the engine. Use as a context manager around the run."""

    def __init__(self, description: str, console: Console | None = None, enabled: bool = True):
        self.console = console or Console(stderr=True, markup=False, emoji=False)
        self.enabled = enabled
        self.total = 0
        self.done = self.cached = self.new = self.failed = self.tokens = 0
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
            TextColumn("cached {task.fields[cached]} · new {task.fields[new]} · failed {task.fields[failed]} "
                       "· {task.fields[tokens]} tok", markup=False),
            TimeRemainingColumn(), console=self.console, disable=not enabled, transient=False,
        )
        self._task = self._progress.add_task(description, total=0, cached=0, new=0, failed=0, tokens=0)

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.stop()

    def expect(self, n: int) -> None:
        self.total += n
        self._progress.update(self._task, total=self.total)

    def record(self, response: Response) -> None:
        self.done += 1
        if response.cached:
            self.cached += 1
        elif response.ok:
            self.new += 1
            self.tokens += response.prompt_tokens + response.completion_tokens
        else:
            self.failed += 1
        self._progress.update(self._task, completed=self.done, cached=self.cached, new=self.new,
                              failed=self.failed, tokens=self.tokens)
