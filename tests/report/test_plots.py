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
