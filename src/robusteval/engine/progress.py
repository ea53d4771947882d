"""The progress display: one row per named stage (building variants, asking, judging...), each with
done/total, cached, new, failed, tokens and a smoothed ETA, drawn with rich.

Why the total is ``max(expected, started)``: a suite announces the requests it is about to send
(`Engine.expect`), but a helper model's requests (a rewriter's, a judge's) or a count that is only
known as answers arrive may be announced late or not at all. Counting every request the engine
starts as well keeps the total at or above what is done, so the bar never reads ``31/13``.

Why a smoothed ETA: rich's own estimate is the speed over the last 30 s, which swings with every
cached answer (instant) and every slow one. Here the ETA is the remaining count times an
exponentially weighted mean of the seconds between new (not cached) answers (`EtaEstimate`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Column

from robusteval.types import Response

ETA_WEIGHT = 0.1  # the weight of the newest interval in the mean: about the last 20 answers count


@dataclass
class EtaEstimate:
    """Seconds left, from an exponentially weighted mean of the time between new answers.

    Cached answers are not timed (they cost nothing and would make a run look faster than it is);
    the first interval is measured from the stage's start, so model loading is in the first one."""

    started: float
    weight: float = ETA_WEIGHT
    mean: float | None = None
    _last: float | None = None

    def tick(self, now: float) -> None:
        interval = now - (self._last if self._last is not None else self.started)
        self._last = now
        self.mean = interval if self.mean is None else self.weight * interval + (1 - self.weight) * self.mean

    def remaining(self, left: int) -> float | None:
        """Seconds for ``left`` more new answers; None before the first one."""
        return None if self.mean is None else max(0, left) * self.mean


def format_eta(seconds: float | None) -> str:
    """``eta 1:05:09``, ``eta 4:07`` or ``eta -`` (not known yet)."""
    if seconds is None:
        return "eta -"
    s = round(seconds)
    hours, rest = divmod(s, 3600)
    return f"eta {hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"eta {rest // 60}:{rest % 60:02d}"


@dataclass
class StageCounts:
    """What one stage has announced, started and finished."""

    name: str
    expected: int = 0
    started: int = 0
    done: int = 0
    cached: int = 0
    new: int = 0
    failed: int = 0
    tokens: int = 0

    @property
    def total(self) -> int:
        return max(self.expected, self.started, self.done)


class RichProgress:
    """A ProgressSink for the engine. Use as a context manager around the run.

    ``clock`` is injectable so that tests can drive the ETA without waiting."""

    def __init__(self, description: str, console: Console | None = None, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self.console = console or Console(stderr=True, markup=False, emoji=False)
        self.enabled = enabled
        self.description = description
        self.clock = clock
        self.stages: list[StageCounts] = []
        self.status = ""  # e.g. "loading model ...": shown beside the current stage until cleared
        # On a narrow terminal the details are cut at their end, never the stage or the counts.
        self._progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False, table_column=Column(no_wrap=True)),
            BarColumn(bar_width=10), MofNCompleteColumn(table_column=Column(no_wrap=True, min_width=7)),
            TextColumn("{task.fields[detail]}", markup=False,
                       table_column=Column(no_wrap=True, overflow="ellipsis", max_width=44)),
            console=self.console, disable=not enabled, transient=False,
        )
        self._task: TaskID | None = None
        self._eta = EtaEstimate(clock())
        self.stage("asking")

    # the totals over every stage, as before stages existed (tests and callers read these)
    @property
    def total(self) -> int:
        return sum(s.total for s in self.stages)

    @property
    def done(self) -> int:
        return sum(s.done for s in self.stages)

    @property
    def current(self) -> StageCounts:
        return self.stages[-1]

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def stage(self, name: str) -> None:
        """Begin the stage ``name``: the current row is finished where it stands (an unused one is
        replaced) and a new row counts from zero."""
        if self.stages and self.current.name == name:
            return
        if self.stages:  # the stage is over: what it announced and never started was not asked
            self.current.expected = min(self.current.expected, self.current.started)
        if self._task is not None and not self.current.started:
            self._progress.remove_task(self._task)  # a stage that asked nothing leaves no row
            self.stages.pop()
        elif self._task is not None:
            self._refresh(final=True)
        self.stages.append(StageCounts(name))
        self._eta = EtaEstimate(self.clock())
        self._task = self._progress.add_task(self._label(), total=None, detail="")
        self._refresh()

    def note(self, status: str) -> None:
        """Show ``status`` beside the current stage ("" clears it): what the run waits on."""
        self.status = status
        self._refresh()

    def expect(self, n: int) -> None:
        self.current.expected += n
        self._refresh()

    def begin(self) -> None:
        """A request was started (asked of the store or a model)."""
        self.current.started += 1
        self._refresh()

    def record(self, response: Response) -> None:
        s = self.current
        s.done += 1
        if response.cached:
            s.cached += 1
        elif response.ok:
            s.new += 1
            s.tokens += response.prompt_tokens + response.completion_tokens
            self._eta.tick(self.clock())
        else:
            s.failed += 1
            self._eta.tick(self.clock())
        self._refresh()

    def detail(self, final: bool = False) -> str:
        """The text after the bar: counts, tokens and the ETA (or the status, while there is one)."""
        s = self.current
        counts = f"cached {s.cached} · new {s.new} · failed {s.failed} · {s.tokens} tok"
        if final:
            return counts
        # what the run waits on, or the ETA, first: on a narrow terminal the counts are cut, not it
        return f"{self.status or format_eta(self._eta.remaining(s.total - s.done))} · {counts}"

    def _label(self) -> str:
        return f"{self.description} · {self.current.name}"

    def _refresh(self, final: bool = False) -> None:
        if self._task is None:
            return
        s = self.current
        self._progress.update(self._task, description=self._label(), completed=s.done,
                              total=s.total or None, detail=self.detail(final))
