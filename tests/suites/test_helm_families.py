"""HELM's perturbations and the unseen attacks as families of mcq and variations of consistency,
end to end through the deterministic stub: the copies a run asks are HELM's seeded strings."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.data.mcq import load_items
from robusteval.probes import helm
from robusteval.probes.unicode_attacks import ZERO_WIDTH, reads_same
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def helm_data(monkeypatch):
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(FIXTURES / "helm"))  # the dialect list, in HELM's format


def test_mcq_with_helm_and_invisible_families(tmp_path):
    data = FIXTURES / "mcq_small.jsonl"
    with StubServer() as stub:
        model = f"openai:stub?base_url={stub.base_url}"
        code = main(["run", "mcq", "--quiet", "--data", str(data), "--model", model, "--cache-dir",
                     str(tmp_path / "cache"), "--out", str(tmp_path), "--run-id", "h",
                     "--families", "helm:typos,helm:dialect,invisible", "--perturb-options"])
    assert code == 0
    results = json.loads((tmp_path / "h" / "results.json").read_text())
    samples = [json.loads(line) for line in (tmp_path / "h" / "samples.jsonl").read_text().splitlines()]
    assert list(results["metrics"]["openai:stub"]) == ["helm:typos", "helm:dialect", "invisible"]
    items = {i.id: i for i in load_items(str(data))}
    prompt = {(s["family"], s["variant"], s["item_id"]): s["prompt"] for s in samples}
    for item in items.values():
        # copy 1 is HELM's default seed, copy 2 HELM's seed 1 (typos perturbs no references)
        for j, rng in ((1, random.Random(item.id)), (2, random.Random("1" + item.id))):
            assert helm.typos(item.question, rng, 0.1) in prompt[("helm:typos", f"helm:typos#{j}", item.id)]
        invisible = prompt[("invisible", "invisible#1", item.id)]
        assert any(z in invisible for z in ZERO_WIDTH)
    # dialect: the options first, then the question, one generator; q2 and q4 have words of the list
    dialect = results["perturbations"]["helm:dialect"]
    assert dialect["asked"] == 10 and dialect["kept"] == 4 and dialect["reasons"] == {"unchanged": 6}
    q4 = prompt[("helm:dialect", "helm:dialect#1", "q4")]
    assert "How many sides do a hexagon got?" in q4 or "How many sides do a hexagon gotta?" in q4
    assert reads_same(prompt[("invisible", "invisible#1", "q1")], prompt[("invisible", "original", "q1")])


def test_consistency_with_helm_and_invisible_variations(tmp_path):
    data = tmp_path / "prompts.jsonl"
    data.write_text(json.dumps({"id": "p1", "prompt": "What does a plant have for lunch?"}) + "\n")
    with StubServer() as stub:
        code = main(["run", "consistency", "--quiet", "--model", f"openai:stub?base_url={stub.base_url}",
                     "--judge", "embedding", "--data", str(data), "--variations", "helm:typos,helm:dialect,invisible",
                     "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path), "--run-id", "c"])
    assert code == 0
    sets = [json.loads(line) for line in (tmp_path / "c" / "prompt-sets.jsonl").read_text().splitlines()]
    text = "What does a plant have for lunch?"
    by_name = {v["name"]: v["prompt"] for v in sets[0]["variants"]}
    assert list(by_name) == ["original", "helm:typos", "helm:dialect", "invisible"]
    # consistency seeds a HELM perturbation as HELM seeds the prompt's instance (run seed 0: Random(id))
    assert by_name["helm:typos"] == helm.typos(text, random.Random("p1"), 0.1) != text
    assert by_name["helm:dialect"] == helm.dialect(text, random.Random("p1"), 1.0)
    # HELM's pattern needs a character before a word: the first word and one right after a replaced
    # word stay ("What", "for"); "does" -> "do", "have" -> "got" or "gotta"
    assert by_name["helm:dialect"] in ("What do a plant got for lunch?", "What do a plant gotta for lunch?")
    assert reads_same(by_name["invisible"], text) and by_name["invisible"] != text
