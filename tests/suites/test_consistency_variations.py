"""consistency with ``--variations``: prompt sets generated from plain requests, end to end through
the deterministic stub (model under test and rewriter) and the MiniLM embedding judge.

The stub answers every request with "Let me think. The best answer is X.", so: a rewrite of a
question is never a question (rejected: not_a_question, after 1 + 3 tries); a rewrite of a request
is accepted with --rewrite-bounds off; the answers to one set differ at most in a letter, and
MiniLM's calibration maps most such sets to exactly 5.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from robusteval.probes.apply import perturb_text
from robusteval.results.codec import encode
from robusteval.results.records import read_run
from robusteval.testing.openai_stub import StubServer

pytest.importorskip("sentence_transformers")

PROMPTS = [{"id": "q1", "prompt": "Which planet is closest to the Sun?"},
           {"id": "r1", "prompt": "Write a short poem about the sea."},
           {"id": "r2", "prompt": "Tiny pup"}]  # nothing in it an OCR could misread


CONSISTENCY = ("run", "consistency", "--quiet", "--judge", "embedding")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cli_run_in):
    """One stub serves: typo,ocr,formality (saved to a file), the saved file reloaded with --data,
    and typo,ocr alone with the default rewriter (which must not be started)."""
    tmp_path = tmp_path_factory.mktemp("variations")
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    saved = tmp_path / "saved" / "sets.jsonl"
    with StubServer() as stub:
        spec = stub.model()

        def run(run_id: str, *extra: str | Path):
            return cli_run_in(tmp_path, *CONSISTENCY, "--model", spec, "--run-id", run_id, *extra)

        generated = run("generated", "--data", data, "--variations", "typo,ocr,formality", "--rewriter", spec,
                        "--rewrite-bounds", "off", "--save-prompt-sets", saved)
        reloaded = run("reloaded", "--data", saved)
        pure = run("pure", "--data", data, "--variations", "typo,ocr")
    return {"generated": generated, "reloaded": reloaded, "pure": pure, "saved": saved}


def test_generated_sets_exact_counts_metrics_and_files(runs):
    code, folder, _, _ = runs["generated"]
    assert code == 0
    results = json.loads((folder / "results.json").read_text())
    generation = results["metrics"]["generation"]
    assert (generation["prompts"], generation["sets"], generation["dropped_prompts"]) == (3, 3, [])
    assert generation["variations"] == {
        "typo": {"kept": 3, "rejected": 0, "reasons": {}},
        "ocr": {"kept": 2, "rejected": 1, "reasons": {"unchanged": 1}},
        "formality": {"kept": 2, "rejected": 1, "reasons": {"not_a_question": 1}}}
    emb = results["metrics"]["judges"]["embedding"]
    assert emb["table"] == {"q1": {"openai:stub": 5.0}, "r1": {"openai:stub": 5.0}, "r2": {"openai:stub": 5.0}}
    model = emb["models"]["openai:stub"]
    assert (model["sum"]["value"], model["mean"]["value"], model["rated"], model["missing"]) == (15.0, 5.0, 3, 0)
    assert model["by_variation"] == {"typo+ocr+formality": {"mean": 5.0, "items": 3}}
    # answers: q1 3 variants, r1 4, r2 3; rewrites: q1 1 + 3 retries, r1 1, r2 1
    assert results["models"]["openai:stub"]["usage"]["requests"] == 10 + 6
    assert results["judges"]["embedding"]["local_model_calls"] == 2 * 3  # an encode and a calibration per set
    assert results["judges"]["embedding"]["local_model_s"] > 0
    audit = results["data"]["sources"][0]
    assert audit["left_out"] == {"variant formality left out: not_a_question": 1, "variant ocr left out: unchanged": 1}
    assert audit["examples"]["variant ocr left out: unchanged"] == ["r2"]

    answers = [s for s in runs["generated"].samples() if s["kind"] == "answer"]
    by_item: dict[str, list[str]] = {}
    for s in answers:
        by_item.setdefault(s["item_id"], []).append(s["prompt"])
    sets = [json.loads(line) for line in (folder / "prompt-sets.jsonl").read_text().splitlines()]
    assert [[v["name"] for v in s["variants"]] for s in sets] == [
        ["original", "typo", "ocr"], ["original", "typo", "ocr", "formality"], ["original", "typo", "formality"]]
    for s, p in zip(sets, PROMPTS):
        assert by_item[p["id"]] == [v["prompt"] for v in s["variants"]]  # what was answered is what was stored
        for v in s["variants"]:
            if v["name"] in ("typo", "ocr"):  # pure: the same text and seed give the same variant
                again = asyncio.run(perturb_text(v["name"], p["prompt"], seed=f"0:{p['id']}:{v['name']}"))
                assert v["prompt"] == again.text
    assert sets[1]["variants"][3]["prompt"].startswith("Let me think. The best answer is")
    assert runs["saved"].read_text() == (folder / "prompt-sets.jsonl").read_text()

    report = (folder / "report.md").read_text()
    assert "Prompt sets generated from 3 requests: 3 kept" in report and "not_a_question 1" in report
    assert "Time in local judge models" in report
    record = read_run(folder)  # the typed record reads back what was written
    assert record.metrics.generation.variations["ocr"].reasons == {"unchanged": 1}
    assert encode(record.metrics) == results["metrics"]


def test_sensitivity_of_the_ratings_through_the_stub(runs):
    from robusteval.report.model import Run
    from robusteval.report.sections.consistency import sections

    folder = runs["generated"].folder
    results = json.loads((folder / "results.json").read_text())
    s = results["metrics"]["judges"]["embedding"]["models"]["openai:stub"]["sensitivity"]
    # the three items are rated 5.0 (the stub says the same thing to every variant): all at or above 4;
    # one variation type, so nothing to spread across
    assert s["threshold"] == 4.0 and s["consistent_share"]["value"] == 1.0
    assert s["spread"]["value"] is None and s["std"]["value"] is None
    assert s["by_variation"]["typo+ocr+formality"]["value"] == 5.0
    [section] = sections(Run(folder, results))
    table = next(t for t in section.tables if "sensitivity across variation types" in t.title)
    assert table.columns[:4] == ("model", "share rated >= 4", "spread (best - worst variation)",
                                 "std across variations")
    assert table.rows[0][0] == "openai:stub" and table.rows[0][1].startswith("1.00") and table.rows[0][2] == "n/a"


def test_the_saved_sets_reload_with_data_and_give_the_same_numbers(runs):
    code, folder, _, _ = runs["reloaded"]
    assert code == 0
    first = runs["generated"].results()
    again = json.loads((folder / "results.json").read_text())
    assert again["metrics"]["judges"]["embedding"]["table"] == first["metrics"]["judges"]["embedding"]["table"]
    strip = lambda m: {k: v for k, v in m.items() if k != "by_variation"}  # noqa: E731
    assert strip(again["metrics"]["judges"]["embedding"]["models"]["openai:stub"]) == \
        strip(first["metrics"]["judges"]["embedding"]["models"]["openai:stub"])
    assert "generation" not in again["metrics"]
    assert again["models"]["openai:stub"]["usage"]["new"] == 0  # the same 10 answers, all from the cache
    assert again["models"]["openai:stub"]["usage"]["requests"] == 10
    key = lambda s: (s["item_id"], s["variant"], s["prompt"], s["response"])  # noqa: E731
    assert [key(s) for s in runs["reloaded"].samples() if s["kind"] == "answer"] == \
        [key(s) for s in runs["generated"].samples() if s["kind"] == "answer"]


def test_pure_variations_need_no_rewriter(runs):
    code, folder, _, _ = runs["pure"]
    assert code == 0
    results = json.loads((folder / "results.json").read_text())
    assert list(results["models"]) == ["openai:stub"]  # the default rewriter (llamacpp) was never started
    assert results["metrics"]["generation"]["variations"] == {
        "typo": {"kept": 3, "rejected": 0, "reasons": {}},
        "ocr": {"kept": 2, "rejected": 1, "reasons": {"unchanged": 1}}}
    emb = results["metrics"]["judges"]["embedding"]
    # without the formality rewrite, r1's three answers end in A, C and D: MiniLM's cosines put them
    # below its "same content" anchor (abs=1e-3: other CPUs' float sums may move the 4th decimal)
    assert emb["table"] == {"q1": {"openai:stub": 5.0}, "r1": {"openai:stub": pytest.approx(4.3046, abs=1e-3)},
                            "r2": {"openai:stub": 5.0}}
    model = emb["models"]["openai:stub"]
    assert model["sum"]["value"] == pytest.approx(14.3046, abs=1e-3)
    assert model["mean"]["value"] == pytest.approx(14.3046 / 3, abs=1e-3) and model["rated"] == 3
    assert results["models"]["openai:stub"]["usage"]["requests"] == 3 + 3 + 2  # originals, typos, ocr
    assert results["models"]["openai:stub"]["usage"]["new"] == 0  # the same prompts as the first run


def test_estimate_counts_rewrites_and_their_answers(tmp_path, cli_run):
    data = tmp_path / "prompts.txt"
    data.write_text("Which planet is closest to the Sun?\n\nWrite a short poem about the sea.\nTiny pup\n")
    with StubServer() as stub:
        out = cli_run(*CONSISTENCY, "--model", stub.model(), "--run-id", "est", "--data", data, "--variations",
                      "typo,formality", "--rewriter", stub.model(), "--estimate")
        asked = stub.counters()["requests"]
    assert not asked  # nothing was asked
    assert out.code == 0, out.err
    row = next(line for line in (out.out + out.err).splitlines() if line.startswith("│ openai:stub"))
    assert row.split("│")[2].strip() == "12"  # 3 rewrites + 3 sets × 3 variants
    assert not (tmp_path / "runs" / "est").exists()


@pytest.mark.parametrize("args, message", [
    (["--variations", "typo"], "a prompt set (it has 'variants'; run it without --variations)"),
    (["--variations", "tyop"], "unknown perturbation 'tyop'"),
    (["--variations", "typo,typo"], "a name repeats"),
    (["--variations", "formality", "--rewrite-bounds", "0.9,0.2"], "--rewrite-bounds 0.9,0.2: need -1 <= LOW < HIGH"),
    (["--save-prompt-sets", "x.jsonl"], "--save-prompt-sets writes the prompt sets --variations generates"),
])
def test_refusals_are_one_message(tmp_path, cli_run, args, message):
    sets = tmp_path / "sets.jsonl"
    sets.write_text(json.dumps({"id": "s", "variants": [{"prompt": "a"}, {"prompt": "b"}]}) + "\n")
    with StubServer() as stub:
        code, _, _, err = cli_run(*CONSISTENCY, "--model", stub.model(), "--run-id", "bad", "--data", sets, *args)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "runs" / "bad").exists()
