"""The invalid-reply count a run warns with: counted as the samples stream by, the first three quoted."""

from __future__ import annotations

from robusteval.metrics.mcq import McqTally
from robusteval.probes.design import expand
from robusteval.results.mcq import InvalidReplies
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
