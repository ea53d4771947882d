"""``robusteval report RUN_DIR``: one self-contained HTML file, a Markdown summary and PNG plots.

The HTML needs no network: plots are embedded as data URIs, styles and the small script that
filters the sample explorer are inline. Every string from a model or a dataset goes through
jinja2's autoescaping, so an answer containing ``<script>`` or ``onerror=`` renders as text, and
through `balance_bidi`, so an unterminated right-to-left override (U+202E) in one answer cannot
reverse the rest of the page; the template also isolates such text in ``<bdi>``.
Every file is written atomically (`robusteval.files.atomic_write`).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from robusteval.errors import UserError
from robusteval.files import atomic_write, iter_jsonl
from robusteval.report.explorer import build_explorer, explorer_samples
from robusteval.report.model import Run, Section
from robusteval.report.sections import headlines, sections
from robusteval.results.records import read_results

REPORT_HTML = "report.html"
REPORT_MD = "report.md"
PLOTS_DIR = "plots"


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    plots: tuple[Path, ...]
    notes: tuple[str, ...] = ()  # what the report could not show (said in the report too)


# Bidirectional-text controls: embeddings/overrides end at PDF, isolates at PDI.
_BIDI_PUSH = {"\u202a": "\u202c", "\u202b": "\u202c", "\u202d": "\u202c", "\u202e": "\u202c",
              "\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069"}
_BIDI_POP = {"\u202c", "\u2069"}


def balance_bidi(text: str) -> str:
    """``text`` with every bidirectional embedding, override or isolate it opens closed at its end,
    so its direction cannot leak into what the page shows after it (an unterminated U+202E would
    otherwise reverse the rest of the line). Text without such controls is returned unchanged."""
    if not any(c in _BIDI_PUSH for c in text):
        return text
    stack: list[str] = []
    for c in text:
        if c in _BIDI_PUSH:
            stack.append(_BIDI_PUSH[c])
        elif c in _BIDI_POP:
            if c == "\u2069":  # a PDI also closes the embeddings opened inside its isolate
                while stack and stack[-1] != "\u2069":
                    stack.pop()
            if stack and stack[-1] == c:
                stack.pop()
    return text + "".join(reversed(stack))


def load_run(run_dir: str | Path) -> Run:
    path = Path(run_dir)
    results = read_results(path)
    samples_file = path / "samples.jsonl"
    if not samples_file.is_file():
        return Run(path, results, [], missing=(f"{samples_file} is missing: the sample explorer is empty "
                                               f"(metrics come from results.json)",))
    return Run(path, results, explorer_samples(iter_jsonl(samples_file)))  # the explorer's rows only


@functools.cache
def environment() -> Environment:
    """The one Jinja environment (templates loaded and compiled once, shared by every render;
    rendering a template is thread-safe)."""
    env = Environment(loader=PackageLoader("robusteval.report", "templates"),
                      autoescape=select_autoescape(["html", "j2"], default=True), trim_blocks=True, lstrip_blocks=True,
                      finalize=lambda value: balance_bidi(value) if isinstance(value, str) else value)
    env.filters["data_uri"] = lambda png: "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    env.filters["num"] = lambda x, d=3: "n/a" if x is None else f"{x:.{d}f}"
    return env


def render_leaderboard(runs_dir: Path) -> str:
    """The leaderboard page of a folder of runs: its boards, and the folders left out with why."""
    from robusteval.report.leaderboard import leaderboard

    board = leaderboard(runs_dir)
    return environment().get_template("leaderboard.html.j2").render(
        boards=board.boards, left_out=board.left_out, runs_dir=str(runs_dir))


def headline_warnings(run: Run) -> list[str]:
    """What the reader must know before the headline figures: models whose replies were mostly
    unreadable (mcq's `InvalidReplies` over its threshold), so each of those counted as wrong."""
    from robusteval.results.mcq import McqExtra

    extra = run.extra
    if not isinstance(extra, McqExtra):
        return []
    return [w for model, counts in (extra.invalid_replies or {}).items() if (w := counts.warning(model, extra.reader))]


def headline_notes(run: Run) -> list[str]:
    """How the default reader read each mcq family's replies (by the requested sentence, another
    phrasing, an option's text, or not at all), beside the headline so the reading rule stays visible."""
    from robusteval.results.mcq import McqExtra, McqMetrics, read_as_line

    try:
        if not isinstance(run.extra, McqExtra):
            return []
        metrics: McqMetrics = run.metrics or {}
    except ValueError:  # a hand-edited results.json: the sections say what they can read
        return []
    return [line for model, families in metrics.items() for family, fm in families.items()
            if (line := read_as_line(f"{model} · {family}", fm.read_as))]


def render_html(run: Run) -> tuple[str, list[Section]]:
    """The report page and its sections (the sections' figures are also written as PNG files)."""
    built = sections(run)
    page = environment().get_template("report.html.j2").render(
        run=run, results=run.results, config=run.results.get("config", {}), versions=run.results.get("versions", {}),
        models=run.results.get("models", {}), sections=built, headlines=headlines(run),
        warnings=headline_warnings(run), notes=headline_notes(run),
        explorer=build_explorer(run.samples), failures=run.results.get("failures", []), missing=run.missing)
    return page, built


def markdown_summary(run: Run, built: list[Any]) -> str:
    r = run.results
    lines = [f"# robusteval {run.suite} run `{run.run_id}`", "",
             f"Started {r.get('started', '?')}, wall time {r.get('wall_time_s', '?')} s, "
             f"robusteval {r.get('versions', {}).get('robusteval', '?')}.", "", "## Headline metrics", "",
             *[f"> **Note:** {_md(note)}" for note in run.missing], *([""] if run.missing else []),
             *[f"> **Warning:** {_md(w)}" for w in headline_warnings(run)], *([""] if headline_warnings(run) else []),
             *[f"{_md(note)}  " for note in headline_notes(run)], *([""] if headline_notes(run) else []),
             "| model | metric | value [95% CI] |", "|---|---|---|"]
    for h in headlines(run):
        ci = "" if h.low is None else f" [{h.low:.3f}, {h.high:.3f}]"
        lines.append(f"| {_md(h.model)} | {_md(h.metric)} | {'n/a' if h.value is None else f'{h.value:.3f}'}{ci} |")
    for section in built:
        lines += ["", f"## {_md(section.title)}", ""]
        for table in section.tables:
            lines += [f"**{_md(table.title)}**", "", "| " + " | ".join(map(_md, table.columns)) + " |",
                      "|" + "---|" * len(table.columns)]
            lines += ["| " + " | ".join(map(_md, row)) + " |" for row in table.rows]
            lines.append("")
        for figure in section.figures:
            lines += [f"![{_md(figure.title)}]({PLOTS_DIR}/{figure.name}.png)", ""]
        lines += [_md(note) for note in section.notes]
    return "\n".join(lines).rstrip() + "\n"


def write_report(run_dir: str | Path) -> ReportFiles:
    """Render and write report.html, report.md and plots/*.png, each atomically; nothing is written
    until everything has rendered."""
    run = load_run(run_dir)
    page, built = render_html(run)
    markdown_text = markdown_summary(run, built)
    plots_dir = run.path / PLOTS_DIR
    try:
        plots_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise UserError(f"could not create {plots_dir} ({exc.strerror or exc})") from None
    plots = [atomic_write(plots_dir / f"{figure.name}.png", figure.png)
             for section in built for figure in section.figures]
    markdown = atomic_write(run.path / REPORT_MD, markdown_text)
    html = atomic_write(run.path / REPORT_HTML, page)
    return ReportFiles(html, markdown, tuple(plots), run.missing)


def _md(text: object) -> str:
    """Text safe inside a Markdown table cell (pipes and newlines would break the row; HTML is escaped). A
    line break becomes `<br>`, which GitHub's and most renderers' tables show, so a format shown on an example
    question keeps its layout."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", "<br>"))
