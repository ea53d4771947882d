"""The perturbation registry and `perturb_text`: pure perturbations and model rewrites alike."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.errors import UserError
from robusteval.probes.apply import Checks, Rewriter, perturb_text
from robusteval.probes.registry import REGISTRY, Rewrite, TextPerturbation, available, get
from robusteval.testing.scripted import scripted_engine

QUESTION = "Which planet is closest to the Sun in our solar system, and how long is its year?"


@pytest.mark.parametrize("name", [n for n, p in REGISTRY.items() if isinstance(p, TextPerturbation)])
def test_every_text_perturbation_is_seeded_and_changes_the_text(name):
    a = asyncio.run(perturb_text(name, QUESTION, seed="0:q1:1"))
    b = asyncio.run(perturb_text(name, QUESTION, seed="0:q1:1"))
    c = asyncio.run(perturb_text(name, QUESTION, seed="0:q1:2"))
    assert a.text == b.text != QUESTION
    assert a.ok and c.ok and c.text != QUESTION


def test_ocr_confuses_print_lookalikes_only():
    from random import Random

    from robusteval.probes.ocr import ocr_noise

    assert ocr_noise("modern clay", Random(0), prob=1.0) == "rn0clcm day"  # m>rn o>0 d>cl e>c rn>m, cl>d
    assert ocr_noise("xyz", Random(0), prob=1.0) == "xyz"  # nothing confusable: nothing changes


def test_names_with_an_argument_and_unknown_names():
    sv = get("language:sv")
    assert isinstance(sv, Rewrite) and "Swedish" in sv.instruction and not sv.same_language
    assert "language:CODE" in available() and "ocr" in available()
    with pytest.raises(UserError, match=r"unknown perturbation 'tyop'.*typo"):
        get("tyop")


def test_a_rewrite_goes_through_the_engine_and_is_checked(tmp_path):
    replies = iter(["Sure! Here it is: Mercury.",  # not a question (and gives the answer away)
                    "Here is the rewritten text: \"Which planet orbits nearest the Sun, and how long is its year?\""])

    async def go():
        engine, backend = await scripted_engine(tmp_path, lambda m, p: next(replies))
        try:
            out = await perturb_text("paraphrase", QUESTION, seed="0:q1:1", rewriter=Rewriter(engine, "scripted"),
                                     checks=Checks(answers=("Mercury",)))
        finally:
            await engine.close()
        return out, backend

    out, backend = asyncio.run(go())
    assert out.text == "Which planet orbits nearest the Sun, and how long is its year?"
    assert out.attempts == 2 and out.rejections == ("not_a_question",)
    assert len(backend.sent) == 2 and backend.sent[0][1].seed != backend.sent[1][1].seed  # each retry a new draw
    assert QUESTION in backend.sent[0][0][-1].content


def test_a_translated_question_must_still_end_with_a_question_mark(tmp_path):
    """Seen on the embedded model: its "German" question was a statement with a commentary after
    it. A translation cannot be checked by English question words or English embeddings, but a
    question ends with a question mark in any script."""
    replies = iter(["Das liegt auf das Kopf.\n\nIn German, this translates to the question.",
                    "Welcher Planet ist der Sonne am nächsten, und wie lang ist sein Jahr?"])

    async def go():
        engine, _ = await scripted_engine(tmp_path, lambda m, p: next(replies))
        try:
            return await perturb_text("language:de", QUESTION, seed=1, rewriter=Rewriter(engine, "scripted"))
        finally:
            await engine.close()

    out = asyncio.run(go())
    assert out.text == "Welcher Planet ist der Sonne am nächsten, und wie lang ist sein Jahr?"
    assert out.rejections == ("not_a_question",) and out.attempts == 2


def test_a_rewrite_that_never_passes_is_rejected_not_used(tmp_path):
    async def go():
        engine, _ = await scripted_engine(tmp_path, lambda m, p: QUESTION)  # always unchanged
        try:
            return await perturb_text("formality", QUESTION, seed=1, rewriter=Rewriter(engine, "scripted"), retries=2)
        finally:
            await engine.close()

    out = asyncio.run(go())
    assert out.text is None and not out.ok and out.rejections == ("unchanged",) * 3 and out.attempts == 3


@pytest.mark.parametrize("reply, text", [
    ("Sure! Here is the formal version:\n\n\"Could you kindly tell me the time?\"",
     "Could you kindly tell me the time?"),
    ("Rewritten text: What time is it, mate?", "What time is it, mate?"),
    ("«Quelle heure est-il ?»", "Quelle heure est-il ?"),
    ("What time is it?\nI need to know.", "What time is it?\nI need to know."),
    ("   ", None),
    (None, None),
])
def test_the_rewrite_is_read_without_preamble_or_quotes(reply, text):
    from robusteval.probes.apply import clean_rewrite

    assert clean_rewrite(reply) == text
