"""Plots as PNG bytes (matplotlib, Agg): bars with confidence intervals, and heatmaps.

Reports embed them as data URIs (one self-contained HTML file) and also write them beside the
Markdown summary, so the same picture goes into a paper or a pull request.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np


def _pyplot() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return matplotlib, plt


def _png(fig: Any) -> bytes:
    _, plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def has_value(estimates: Sequence[dict[str, Any] | None]) -> bool:
    """Whether any estimate has a value: a figure of only n/a bars is an empty axis, left out."""
    return any(e and e.get("value") is not None for e in estimates)


LABEL_CHARS = 28  # a bar's label is cut to its last this many characters
CHAR_WIDTH_IN = 0.075  # about one character of the 9-point tick font, in inches


def bars_with_ci(labels: list[str], estimates: Sequence[dict[str, Any] | None], *, title: str, ylabel: str,
                 ylim: tuple[float, float] | None = (0, 1), reference: float | None = None,
                 reference_label: str = "") -> bytes:
    """One bar per label with its 95% CI as an error bar (``Estimate.as_dict()`` values). A label
    without a value gets no bar and the text "n/a" (a zero-height bar would read as 0); labels
    turn when they would not fit under their bars side by side. ``reference`` draws a dashed line
    (chance, a baseline) named ``reference_label`` in a legend."""
    _, plt = _pyplot()
    values = np.array([np.nan if not e or e.get("value") is None else e["value"] for e in estimates], dtype=float)
    low = np.array([v if not e or e.get("ci_low") is None else e["ci_low"] for v, e in zip(values, estimates)])
    high = np.array([v if not e or e.get("ci_high") is None else e["ci_high"] for v, e in zip(values, estimates)])
    shown = [label if len(label) <= LABEL_CHARS else "…" + label[-LABEL_CHARS + 1:] for label in labels]
    width = max(4.0, 0.5 * len(labels) + 2.5)
    longest = max((len(label) for label in shown), default=0)
    turn = longest * CHAR_WIDTH_IN > 0.9 * (width - 1.2) / max(len(labels), 1)
    height = 3.4 + (longest * CHAR_WIDTH_IN * 0.5 if turn else 0)  # room for turned labels
    fig, ax = plt.subplots(figsize=(width, height))
    x = np.arange(len(labels))
    valued = ~np.isnan(values)
    ax.bar(x[valued], values[valued], color="#4c72b0", alpha=0.85)
    # an interval that does not hold its value (possible for BCa) is drawn up to the value, never inverted
    below, above = np.maximum(values - low, 0), np.maximum(high - values, 0)
    ax.errorbar(x[valued], values[valued], yerr=[below[valued], above[valued]],
                fmt="none", ecolor="black", capsize=4, linewidth=1)
    bottom = ylim[0] if ylim else 0
    for position in x[~valued]:
        ax.text(position, bottom, "n/a", ha="center", va="bottom", fontsize=9, color="#5a6272")
    ax.set_xticks(x, shown, rotation=35 if turn else 0, ha="right" if turn else "center",
                  rotation_mode="anchor" if turn else "default", fontsize=9)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    if reference is not None:
        ax.axhline(reference, color="#c44e52", linestyle="--", linewidth=1, label=reference_label or None)
        if reference_label:
            ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


HEATMAP_ROWS = 100  # rows a heatmap draws at most (about 35 inches)
HEATMAP_MIN_HEIGHT = 3.0  # inches: one or two rows were a strip too thin to read, its colour bar a sliver
ROW_LABEL_CHARS = 40


def heatmap(matrix: np.ndarray, rows: list[str], columns: list[str], *, title: str, colorbar: str,
            vmin: float, vmax: float, fmt: str = "{:.2f}") -> bytes:
    """A matrix with its values written in the cells; cells without a value grey and marked "n/a".
    Only the first `HEATMAP_ROWS` rows are drawn (the title says how many of how many): the figure's
    height grows with its rows, and a consistency run's thousands of items (a row each) took hundreds
    of MB to draw; it never falls under `HEATMAP_MIN_HEIGHT`."""
    matplotlib, plt = _pyplot()
    matrix = np.asarray(matrix, dtype=float)
    if len(rows) > HEATMAP_ROWS:
        title = f"{title} (first {HEATMAP_ROWS} of {len(rows)} rows)"
        matrix, rows = matrix[:HEATMAP_ROWS], rows[:HEATMAP_ROWS]
    row_labels = [r if len(r) <= ROW_LABEL_CHARS else r[:ROW_LABEL_CHARS - 1] + "…" for r in rows]
    column_labels = [c if len(c) <= 24 else "…" + c[-23:] for c in columns]
    turn = max((len(c) for c in column_labels), default=0) > 8 and len(columns) > 1
    height = max(HEATMAP_MIN_HEIGHT, 1.4 + 0.32 * len(rows) + (0.6 if turn else 0))
    fig, ax = plt.subplots(figsize=(4.5 + 1.0 * len(columns), height))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(columns)), column_labels, rotation=30 if turn else 0, ha="right" if turn else "center",
                  rotation_mode="anchor" if turn else "default")
    ax.set_yticks(range(len(rows)), row_labels)
    middle = (vmin + vmax) / 2
    for (r, c), value in np.ndenumerate(matrix):
        ax.text(c, r, "n/a" if np.isnan(value) else fmt.format(value), ha="center", va="center", fontsize=8,
                color="white" if not np.isnan(value) and value < middle else "black")
    fig.colorbar(image, ax=ax, label=colorbar)
    ax.set_title(title, fontsize=10)
    return _png(fig)
