"""Heatmaps of many rows (a consistency run's items) draw a bounded figure."""

from __future__ import annotations

import io

import numpy as np
import pytest

from robusteval.report.plots import HEATMAP_ROWS, heatmap

pytest.importorskip("matplotlib")


def _height(png: bytes) -> int:
    from PIL import Image

    return Image.open(io.BytesIO(png)).size[1]


def test_a_heatmap_draws_at_most_its_row_limit():
    def draw(n: int) -> bytes:
        return heatmap(np.full((n, 2), 2.5), [f"item {i}" for i in range(n)], ["a", "b"], title="t", colorbar="c",
                       vmin=0, vmax=5)

    # 2,500 rows were a figure of 800 inches, 88,000 pixels tall (a consistency run of 800 items peaked
    # at 739 MB against 306 MB at 200 items, benchmarks/memory.py)
    assert _height(draw(2500)) == _height(draw(HEATMAP_ROWS)) < 5000
    assert _height(draw(10)) < _height(draw(HEATMAP_ROWS))


def test_a_one_row_heatmap_is_no_thin_strip():
    from robusteval.report.plots import HEATMAP_MIN_HEIGHT

    png = heatmap(np.array([[1.0, np.nan]]), ["only item"], ["a", "b"], title="t", colorbar="c", vmin=0, vmax=5)
    assert _height(png) >= 0.99 * HEATMAP_MIN_HEIGHT * 110  # inches at the report's 110 dpi


def test_bars_without_a_value_are_left_out_or_marked():
    from robusteval.report.plots import bars_with_ci, has_value

    assert not has_value([None, {"value": None, "ci_low": None, "ci_high": None}])
    assert has_value([None, {"value": 0.0}])  # zero is a value
    # a missing value gets no bar (and the text n/a); labels long enough to collide turn and the figure grows
    short = bars_with_ci(["a", "b"], [{"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}, None], title="t", ylabel="y",
                         reference=0.25, reference_label="chance")
    long = bars_with_ci(["a variant with a long name", "another variant with a long name"],
                        [{"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}, None], title="t", ylabel="y")
    assert short[:4] == long[:4] == b"\x89PNG" and _height(long) > _height(short)
