"""Where the tree's paraphrase children come from: LexEval's batch prompt for ``paraphrase`` (sent
exactly as before, so its cached answers stay valid) and any registry rewrite otherwise."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np

from robusteval.configure import build_config
from robusteval.data.qa import QAItem
from robusteval.probes.paraphrase import LLMParaphraser
from robusteval.probes.rewrites import INSTRUCTIONS
from robusteval.probes.tree import build_tree
from robusteval.probes.tree_rewrites import RewriteParaphraser
from robusteval.suites import tree as suite
from robusteval.testing.scripted import scripted_engine

ITEM = QAItem("q1", "Which river flows through the old capital?", ("Vell",), subject="Vell")


class PlusEncoder:
    """Each 'plus' turns a text 0.5 rad further from the root: children pass the default invariants."""

    def encode(self, texts):
        rows = [[np.cos(0.5 * t.count("plus")), np.sin(0.5 * t.count("plus")), 0.001 * len(t)] for t in texts]
        return np.array([np.array(r) / np.linalg.norm(r) for r in rows])


def _build(tmp_path, kind: str, reply):
    config = build_config({}, {"suite": "tree", "paraphrase_kind": kind, "seed": 0})

    async def go():
        engine, backend = await scripted_engine(tmp_path, reply)
        try:
            ctx = SimpleNamespace(options=config.options, config=config, engine=engine)
            para, per_node = suite.paraphraser_for(ctx, "scripted")
            settings = suite.build_settings(config, config.options)
            tree = await build_tree(ITEM, settings, para, PlusEncoder())
        finally:
            await engine.close()
        return para, per_node, tree, backend.sent

    return asyncio.run(go())


def test_the_default_kind_sends_todays_paraphrase_request(tmp_path):
    replies = lambda messages, params: '["Which river runs through the old capital, plus?", ' \
                                       '"Through the old capital, which river flows plus?"]'  # noqa: E731
    para, per_node, tree, sent = _build(tmp_path, "paraphrase", replies)
    assert isinstance(para, LLMParaphraser) and per_node == 1
    messages, params = sent[0]
    # the request of the release before the registry, character for character (its cache key depends on it)
    assert [(m.role, m.content) for m in messages] == [("user", (
        "Rewrite the question below in 2 different ways. Each rewrite must ask exactly the same thing with "
        "different words. Reply with a JSON list of 2 strings and nothing else.\n\n"
        "Question: Which river flows through the old capital?"))]
    assert (params.temperature, params.max_tokens, params.seed) == (0.7, 160, 0)
    assert [n.perturbation for n in tree.nodes if n.kind == "paraphrase"][:2] == ["paraphrase", "paraphrase"]


def test_a_formality_tree_asks_the_registry_instruction_once_per_child(tmp_path):
    def reply(messages, params):
        text = messages[-1].content.split("Text: ", 1)[1]
        return f'Here is the formal version: "{text} plus{params.seed % 97}"'

    para, per_node, tree, sent = _build(tmp_path, "formality", reply)
    assert isinstance(para, RewriteParaphraser) and per_node == 2
    first = [m for m, _ in sent[:2]]
    assert all(m[-1].content == INSTRUCTIONS["formality"].format(text=ITEM.question) for m in first)
    assert sent[0][1].seed != sent[1][1].seed  # two children, two draws
    children = [n for n in tree.nodes if n.kind == "paraphrase"]
    assert len(children) == 6 and all(n.perturbation == "formality" and n.status == "ok" for n in children)
    assert children[0].text.startswith(ITEM.question + " plus") and '"' not in children[0].text  # preamble gone
    assert len(sent) == 2 + 2 * 2  # the root's two children, then two for each of them (depth 2)
