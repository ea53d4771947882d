import asyncio

import pytest

from robusteval.judges.oracle import OracleJudge, oracle_messages, parse_score
from robusteval.types import GenParams, Response


@pytest.mark.parametrize("text, expected", [
    ("The answers agree.\nSimilarity score: 4", 4.0),
    ("similarity score: 3/5", 3.0),
    ("**Similarity score:** 5", 5.0),
    ("Similarity Score = 0", 0.0),
    ("Similarity score: 4.5", 4.5),
    ("Similarity score: 2\n...on reflection...\nSimilarity score: 4", 4.0),  # the last one counts
    ("Score: 4", None),  # not the required form
    ("I would say 5 out of 5.", None),
    ("Similarity score: 7", None),  # outside the scale
    ("Similarity score: high", None),
    ("Similarity score: 0-5", None),  # a range is no rating: unparseable, so the judge asks again
    ("Similarity score: 4-5", None),
    ("Similarity score: 4 - 5", None),
    ("Similarity score: 4\u20135", None),  # en dash
    ("Similarity score: 3 to 4", None),
    ("Similarity score: 3 or 4", None),
    ("**Similarity score: 4-5**", None),
    ("Similarity score: 4\nSimilarity score: 4-5", None),  # the final verdict is a range
    ("Similarity score: 4/10", None),  # another scale
    ("Similarity score: 4 - the answers agree", 4.0),  # a dash before words is no range
    ("Similarity score: 5.", 5.0),
    ("Similarity score: 4 out of 5", 4.0),
    ("Similarity score: 4/5 - close", 4.0),
    ("Similarity score: 4/5.", 4.0),
    ("Similarity score: 4 (on the 0-5 scale)", 4.0),
    ("", None),
    (None, None),
])
def test_parse_score_is_strict(text, expected):
    assert parse_score(text) == expected


class ScriptedEngine:
    """Answers each oracle request from a script keyed by sample index (unit tests only)."""

    def __init__(self, replies):
        self.replies, self.calls = replies, []

    async def chat(self, model, messages, params=None, sample=0):
        self.calls.append((messages, params, sample))
        reply = self.replies(messages, sample) if callable(self.replies) else self.replies[sample]
        if isinstance(reply, Exception):
            return Response(key=str(len(self.calls)), text=None, error=str(reply))
        return Response(key=str(len(self.calls)), text=reply)


def test_unparseable_rating_is_retried_as_a_new_request():
    engine = ScriptedEngine(["They are similar.", "Similarity score: 4"])
    rating = asyncio.run(OracleJudge(engine, "m", retries=3).rate(["a", "b"], None, ("en", "en")))
    assert rating.score == 4.0 and rating.attempts == 2
    (_, first, s0), (_, second, s1) = engine.calls
    assert (s0, s1) == (0, 1) and first.temperature == 0 and second.temperature > 0
    # as the engine sends them (seed + sample): retry k has the seed k, as it always had (its cached key)
    assert (first.for_sample(s0).seed, second.for_sample(s1)) == (0, GenParams(temperature=0.7, seed=1))


def test_a_range_is_asked_again_not_read_as_its_first_number():
    engine = ScriptedEngine(["Similarity score: 0-5", "Similarity score: 3"])
    rating = asyncio.run(OracleJudge(engine, "m", retries=3).rate(["a", "b"], None, ("en", "en")))
    assert rating.score == 3.0 and rating.attempts == 2


def test_never_parseable_is_missing_not_zero():
    engine = ScriptedEngine(["no", "still no", RuntimeError("HTTP 500")])
    rating = asyncio.run(OracleJudge(engine, "m", retries=2).rate(["a", "b"], None, ("en", "en")))
    assert rating.score is None and rating.attempts == 3
    assert "request failed: HTTP 500" in rating.detail
    assert len(engine.calls) == 3


def test_pairwise_mode_averages_the_parsed_pairs():
    def reply(messages, sample):
        text = messages[-1].content
        if "Answer 1:\nx" in text and "Answer 2:\ny" in text:
            return "Similarity score: 1"
        if "Answer 1:\nx" in text:
            return "Similarity score: 5"
        return "unparseable"  # the (y, z) pair never parses

    engine = ScriptedEngine(reply)
    rating = asyncio.run(OracleJudge(engine, "m", mode="pairwise", retries=1).rate(["x", "y", "z"], None, ("en",) * 3))
    assert rating.score == pytest.approx(3.0)  # mean of 1 and 5; the missing pair is left out
    assert "2-3: missing" in rating.detail


def test_prompt_carries_hint_answers_and_language_note():
    messages = oracle_messages(["first", "zweite"], "Ignore who is addressed.", ("en", "de"))
    user = messages[-1].content
    assert "Answer 1:\nfirst" in user and "Answer 2:\nzweite" in user
    assert "Ignore who is addressed." in user and "styles or languages" in user
    assert "Similarity score: N" in user
    assert "languages" not in oracle_messages(["a", "b"], None, ("en", "en"))[-1].content.split("styles")[1][:15]
