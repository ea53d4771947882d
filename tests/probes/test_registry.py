"""The perturbation registry and `perturb_text`: pure perturbations and model rewrites alike."""

from __future__ import annotations

import asyncio

import pytest

from robusteval.errors import UserError
from robusteval.probes.apply import Checks, Rewriter, perturb_text
from robusteval.probes.registry import REGISTRY, Rewrite, TextPerturbation, available, get
from robusteval.testing.scripted import scripted_engine

QUESTION = "Which planet is closest to the Sun in our solar system, and how long is its year?"


@pytest.mark.parametrize("name", [n for n, p in REGISTRY.items()
                                  if isinstance(p, TextPerturbation) and p.origin == "robusteval"])
def test_every_text_perturbation_is_seeded_and_changes_the_text(name):
    """robusteval's own always change a question (HELM's and NL-Augmenter's reproduce those tools,
    which may leave a text as it was: tests/probes/test_helm.py, test_nlaugmenter.py)."""
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


def test_one_contract_and_a_rate_after_the_name():
    typo = get("typo")
    assert isinstance(typo, TextPerturbation) and typo.rate == 0.1
    at = get("typo@0.5")
    assert isinstance(at, TextPerturbation) and at.name == "typo@0.5" and at.rate == 0.5
    assert at.fn is typo.fn  # the same function, another default rate
    import random

    assert at.apply(QUESTION, random.Random(1)) == typo.apply(QUESTION, random.Random(1), 0.5)
    assert asyncio.run(perturb_text("typo@0.5", QUESTION, seed=1)).text != QUESTION
    with pytest.raises(UserError, match=r"shuffle_words@0.5: shuffle_words has no rate"):
        get("shuffle_words@0.5")
    with pytest.raises(UserError, match="a rate is a probability"):
        get("typo@2")
    with pytest.raises(UserError, match="only text perturbations take a rate"):
        get("formality@0.2")
    with pytest.raises(UserError, match="helm:lowercase has no rate"):
        REGISTRY["helm:lowercase"].apply("Abc", random.Random(0), 0.3)  # type: ignore[union-attr]
    with pytest.raises(UserError, match=r"nlaug:ocr is not available: .*Tesseract"):
        get("nlaug:ocr")


def test_the_help_lists_every_perturbation_with_a_line():
    from robusteval.probes.registry import help_text

    lines = help_text().splitlines()
    assert len(lines) == len(REGISTRY) + 1  # and language:CODE
    assert any(line.split()[:2] == ["helm:typos", "helm"] and "[rate 0.1]" in line for line in lines)
    assert any(line.split()[0] == "shuffle_words" and "[rate" not in line for line in lines)


def test_the_extending_guide_example_runs(monkeypatch):
    """docs/extending.md's example, extracted from the page and run: it registers a perturbation,
    which is then available by name (at another rate too) like every other."""
    import re
    import textwrap
    from pathlib import Path

    from robusteval.probes import registry

    doc = (Path(__file__).parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    example = textwrap.dedent(next(b for b in blocks if "REGISTRY[" in b))  # indented inside a list item
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))  # the example's entry goes with the test
    namespace: dict = {}
    exec(compile(example, "docs/extending.md", "exec"), namespace)
    name = namespace["NAME"]
    out = asyncio.run(perturb_text(name, QUESTION, seed="0:q1:1"))
    assert out.ok and out.text != QUESTION
    assert out.text == asyncio.run(perturb_text(name, QUESTION, seed="0:q1:1")).text
    assert asyncio.run(perturb_text(f"{name}@1.0", "aeiou", seed=1)).text == namespace["doubled_vowels"](
        "aeiou", __import__("random").Random(0), 1.0)
