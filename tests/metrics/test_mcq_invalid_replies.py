"""The invalid-reply count a run warns with: counted as the samples stream by, the first three quoted."""

from __future__ import annotations

import pytest

from robusteval.metrics.mcq import McqTally
from robusteval.probes.design import expand
from robusteval.report.sections.mcq import headlines
from robusteval.report.table import print_mcq
from robusteval.report.terminal import literal_console
from robusteval.results.codec import encode
from robusteval.results.mcq import InvalidReplies, McqMetrics
from robusteval.suites.mcq.ask import _sample
from robusteval.types import Item, Response

ITEM = Item(id="q", question="Q?", options=("x", "y", "z", "w"), answer=0)


def tally_of(replies: list[str | None]) -> McqTally:
    variants = expand(ITEM, ["format"])
    tally = McqTally([ITEM.id])
    for n, text in enumerate(replies):
        tally.add(_sample("m", ITEM, variants[n % len(variants)], n // len(variants),
                          Response(f"k{n}", text, error=None if text is not None else "HTTP 500")))
    return tally


def test_counted_with_the_first_three_quoted():
    long = "I am not sure. " * 40
    counts = tally_of(["The best answer is A", "no idea", None, "maybe B?", long, "still unsure"]).invalid_replies()
    assert counts == InvalidReplies(replies=5, invalid=4, examples=("no idea", "maybe B?", "…" + long[-300:]))
    assert counts.share == 0.8 and "4 of 5 replies (80%) are invalid" in counts.warning("m", "robusteval")


def test_the_warning_starts_above_ten_percent():
    assert InvalidReplies(replies=10, invalid=1).warning("m", None) is None
    assert InvalidReplies(replies=100, invalid=11).warning("m", None) is not None
    assert InvalidReplies().warning("m", None) is None  # nothing answered: nothing to warn about


def family_of(replies: dict[str, list[str]]):
    """The ``format`` family's metrics of items answered with ``replies`` (one per variant, in order)."""
    items = [Item(id=i, question="Q?", options=("x", "y", "z", "w"), answer=0) for i in replies]
    tally = McqTally([i.id for i in items])
    for item in items:
        for n, (variant, text) in enumerate(zip(expand(item, ["format"]), replies[item.id], strict=False)):
            tally.add(_sample("m", item, variant, 0, Response(f"{item.id}{n}", text)))
    return tally.metrics()["format"]


def test_accuracy_over_valid_replies_beside_the_one_as_scored():
    # q1: right, wrong, invalid; q2: right, invalid, invalid -> 2 right of 6 replies, of 3 valid ones
    fm = family_of({"q1": ["The best answer is A", "The best answer is B", "no idea"],
                    "q2": ["The best answer is A", "no idea", "no idea"]})
    assert fm.invalid == 3
    assert fm.accuracy.value == pytest.approx(2 / 6)
    assert fm.accuracy_valid is not None and fm.accuracy_valid.value == pytest.approx(2 / 3)
    assert fm.accuracy_valid.low < 2 / 3 < fm.accuracy_valid.high  # a 95% interval around it
    assert encode({"m": {"format": fm}}, McqMetrics)["m"]["format"]["accuracy_valid"]["value"] == pytest.approx(2 / 3)
    names = [h.metric for h in headlines({"m": {"format": fm}})]
    assert names == ["format accuracy", "format accuracy (valid replies only)", "format consistency rate"]


def test_no_valid_only_figure_without_invalid_replies():
    fm = family_of({"q1": ["The best answer is A", "The best answer is B"], "q2": ["The best answer is A"] * 2})
    assert fm.invalid == 0 and fm.accuracy.value == pytest.approx(3 / 4) and fm.accuracy_valid is None
    assert "accuracy_valid" not in fm.as_dict()
    names = [h.metric for h in headlines({"m": {"format": fm}})]
    assert names == ["format accuracy", "format consistency rate"]


@pytest.mark.parametrize("replies, shown", [(["The best answer is A", "no idea"], True),
                                            (["The best answer is A", "The best answer is B"], False)])
def test_the_terminal_shows_the_valid_only_row_only_with_invalid_replies(replies, shown):
    console = literal_console(width=200)
    with console.capture() as captured:
        print_mcq(console, "m", {"format": family_of({"q1": replies})})
    out = captured.get()
    assert ("all, valid replies only" in out) is shown
    if shown:  # 1 right of 2 replies as scored, of 1 valid reply: 1.000
        row = next(line for line in out.splitlines() if "all, valid replies only" in line)
        assert "1.000" in row
