"""Plots as PNG bytes (matplotlib, Agg): bars with confidence intervals, and heatmaps.

Reports embed them as data URIs (one self-contained HTML file) and also write them beside the
Markdown summary, so the same picture goes into a paper or a pull request.
"""

from __future__ import annotations

import io

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return matplotlib, plt


def _png(fig) -> bytes:
    _, plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()


def bars_with_ci(labels: list[str], estimates: list[dict | None], *, title: str, ylabel: str,
                 ylim: tuple[float, float] | None = (0, 1)) -> bytes:
    """One bar per label with its 95% CI as an error bar (``Estimate.as_dict()`` values)."""
    _, plt = _pyplot()
    values = np.array([np.nan if not e or e.get("value") is None else e["value"] for e in estimates], dtype=float)
    low = np.array([v if not e or e.get("ci_low") is None else e["ci_low"] for v, e in zip(values, estimates)])
    high = np.array([v if not e or e.get("ci_high") is None else e["ci_high"] for v, e in zip(values, estimates)])
    fig, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(labels) + 2), 3.4))
    x = np.arange(len(labels))
    ax.bar(x, np.nan_to_num(values), color="#4c72b0", alpha=0.85)
    # an interval that does not hold its value (possible for BCa) is drawn up to the value, never inverted
    below, above = np.maximum(np.nan_to_num(values - low), 0), np.maximum(np.nan_to_num(high - values), 0)
    ax.errorbar(x, np.nan_to_num(values), yerr=[below, above],
                fmt="none", ecolor="black", capsize=4, linewidth=1)
    ax.set_xticks(x, [label[-28:] for label in labels], rotation=30 if len(labels) > 4 else 0, ha="right"
                  if len(labels) > 4 else "center")
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


HEATMAP_ROWS = 100  # rows a heatmap draws at most (about 35 inches)


def heatmap(matrix: np.ndarray, rows: list[str], columns: list[str], *, title: str, colorbar: str,
            vmin: float, vmax: float, fmt: str = "{:.2f}") -> bytes:
    """A matrix with its values written in the cells; NaN cells grey. Only the first `HEATMAP_ROWS`
    rows are drawn (the title says how many of how many): the figure's height grows with its rows,
    and a consistency run's thousands of items (a row each) took hundreds of MB to draw."""
    matplotlib, plt = _pyplot()
    matrix = np.asarray(matrix, dtype=float)
    if len(rows) > HEATMAP_ROWS:
        title = f"{title} (first {HEATMAP_ROWS} of {len(rows)} rows)"
        matrix, rows = matrix[:HEATMAP_ROWS], rows[:HEATMAP_ROWS]
    fig, ax = plt.subplots(figsize=(4.5 + 1.0 * len(columns), 1.4 + 0.32 * len(rows)))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(columns)), [c[-24:] for c in columns], rotation=20, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    middle = (vmin + vmax) / 2
    for (r, c), value in np.ndenumerate(matrix):
        ax.text(c, r, "–" if np.isnan(value) else fmt.format(value), ha="center", va="center", fontsize=8,
                color="white" if not np.isnan(value) and value < middle else "black")
    fig.colorbar(image, ax=ax, label=colorbar)
    ax.set_title(title, fontsize=10)
    return _png(fig)
