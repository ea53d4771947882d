"""The sample explorer holds a bounded number of rows per item: a persona run's questionnaire item
has a row per persona and context (thousands), and the report read them all."""

from __future__ import annotations

from robusteval.report.explorer import MAX_ROWS, build_explorer, explorer_samples


def _rows(item: str, n: int) -> list[dict]:
    return [{"item_id": item, "model": "m", "persona_id": f"p{i}", "prompt": "Is this you?", "response": "Yes",
             "status": "ok"} for i in range(n)]


def test_an_item_shows_its_first_rows_and_says_how_many_it_has():
    samples = _rows("w1", 3 * MAX_ROWS) + _rows("w2", 5) + _rows("w1", 7)
    kept = explorer_samples(iter(samples))
    assert len(kept) == MAX_ROWS + 5
    assert [s["persona_id"] for s in kept[:3]] == ["p0", "p1", "p2"]  # the first ones, in file order
    first, second = build_explorer(kept)
    assert (first.item_id, len(first.rows), first.total) == ("w1", MAX_ROWS, 3 * MAX_ROWS + 7)
    assert (second.item_id, len(second.rows), second.total) == ("w2", 5, 5)
