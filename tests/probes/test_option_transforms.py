"""The option transforms: a distractor from another question of the same subject, never an option
already shown, seeded; a passage before the question; the gold never moves."""

from __future__ import annotations

import random

from robusteval.probes.option_transforms import PASSAGES, add_distractor, irrelevant_context
from robusteval.probes.registry import ItemTransform, get
from robusteval.types import Item

ITEM = Item("a1", "Which is a prime?", ("4", "6", "7", "9"), 2, category="math")
POOL = [ITEM,
        Item("a2", "Which is even?", ("7", " 4 ", "11", "10"), 3, category="math"),
        Item("b1", "Capital of France?", ("Paris", "Rome", "Oslo", "Bern"), 0, category="geography")]


def test_a_distractor_comes_from_the_subject_and_is_never_an_option():
    seen = set()
    for seed in range(30):
        out = add_distractor(ITEM, POOL, random.Random(seed))
        assert out.question == ITEM.question and out.options[:4] == ITEM.options and len(out.options) == 5
        seen.add(out.options[4])
    assert seen == {"11", "10"}  # "7" and " 4 " repeat an option shown; geography's options are another subject
    assert add_distractor(ITEM, POOL, random.Random(3)) == add_distractor(ITEM, POOL, random.Random(3))


def test_a_distractor_never_speaks_of_the_other_options():
    pool = [ITEM, Item("a3", "Which are odd?", ("All of the above", "None of these", "Both A and B", "A and C",
                                                 "Neither", "13"), 5, category="math")]
    assert {add_distractor(ITEM, pool, random.Random(seed)).options[4] for seed in range(20)} == {"13"}


def test_no_candidate_refuses_the_copy():
    out = add_distractor(POOL[2], POOL, random.Random(0))
    assert out.question is None and out.reason == "no_distractor"


def test_irrelevant_context_goes_before_the_question():
    out = irrelevant_context(ITEM, POOL, random.Random(0))
    passage, _, question = (out.question or "").partition("\n\n")
    assert passage in PASSAGES and question == ITEM.question and out.options == ITEM.options


def test_registered_as_item_transforms():
    assert isinstance(get("add_distractor"), ItemTransform) and get("irrelevant_context").kind == "item"


class _Rewriter:
    """A rewriter model that answers from a script: option text -> its replies, one per attempt."""

    dry_run = False

    def __init__(self, script: dict[str, list[str]]):
        self.script = {k: list(v) for k, v in script.items()}
        self.asked: list[str] = []

    async def chat(self, model, messages, params, sample=0):
        from robusteval.types import Response

        text = messages[-1].content.rsplit("Option: ", 1)[1]
        self.asked.append(text)
        return Response(key=text, text=self.script[text].pop(0))


def test_option_paraphrase_keeps_each_option_meaning():
    import asyncio

    from robusteval.probes.apply import Rewriter, perturb_item

    options = ("Seven sides in all", "A green light", "A blue light", "42")
    engine = _Rewriter({"Seven sides in all": ["7 sides in all", "Seven sides altogether"],
                        "A green light": ["a blue light.", "A light that is green"],
                        "A blue light": ["A light of blue colour"]})
    question, copies = asyncio.run(perturb_item("option_paraphrase", "Which one?", options, seed="s", instance=("q", 0),
                                                rewriter=Rewriter(engine, "m")))  # type: ignore[arg-type]
    assert question.text == "Which one?"  # the question is not rewritten
    assert [c.text for c in copies] == ["Seven sides altogether", "A light that is green", "A light of blue colour",
                                        "42"]
    assert copies[0].rejections == ("numbers_changed",)  # "7" is not "Seven": refused, asked again
    assert copies[1].rejections == ("another_option",)  # became the next option: two right answers
    assert "42" not in engine.asked  # a number or one word is kept as it is, never asked
