"""Per-variant accuracy, micro and macro over categories, in the terminal table and the report."""

from __future__ import annotations

from rich.console import Console

from robusteval.metrics.mcq import family_metrics
from robusteval.probes.design import expand
from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections
from robusteval.report.table import print_mcq
from robusteval.suites.mcq.ask import _sample
from robusteval.types import Item, Response

ITEMS = [
    Item("q1", "Which fruit is usually yellow when ripe?", ("Cherry", "Banana", "Plum", "Grape"), 1, "food"),
    Item("q2", "Which of these animals can fly?", ("Eagle", "Horse", "Snail", "Whale"), 0, "animals"),
    Item("q3", "Which season is usually the coldest?", ("Summer", "Spring", "Autumn", "Winter"), 3, "animals"),
]


def metrics_two_categories():
    """gold@A right on the two animals questions only: micro 2/3, macro (0 + 1) / 2."""
    samples = []
    for item in ITEMS:
        for v in expand(item, ["order"]):
            right = (v.name == "gold@A") == (item.category == "animals")
            label = v.labels[v.order.index(item.answer if right else (item.answer + 1) % 4)]
            samples.append(_sample("m", item, v, 0, Response(key=label, text=f"The best answer is {label}")))
    return {"order": family_metrics(samples, "order", [i.id for i in ITEMS], n_resamples=20)}


def test_terminal_shows_micro_and_macro_per_variant():
    console = Console(record=True, width=200)
    print_mcq(console, "m", metrics_two_categories())
    text = console.export_text()
    assert "accuracy (micro)" in text and "macro over categories" in text
    row = next(line for line in text.splitlines() if "gold@A" in line)
    assert "0.667" in row and "0.500" in row


def test_report_has_a_per_variant_table_with_both():
    as_json = {family: fm.as_dict() for family, fm in metrics_two_categories().items()}
    [section] = sections(Run(path=None, results={"suite": "mcq", "metrics": {"m": as_json}}))
    table = next(t for t in section.tables if "accuracy per variant" in t.title)
    assert table.columns == ("variant", "accuracy (micro)", "macro over categories", "answered")
    row = next(r for r in table.rows if r[0] == "gold@A")
    assert row[1].startswith("0.667") and row[2].startswith("0.500") and row[3] == "3"
