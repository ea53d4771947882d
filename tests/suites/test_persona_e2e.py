"""The persona suite end to end through the CLI with the real embedded model (persona and interlocutor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIX = Path(__file__).parent.parent / "fixtures" / "persona"
PERSONA = ("run", "persona", "--quiet")


@pytest.mark.slow
def test_embedded_model_end_to_end_and_resume(cli_run):
    args = ("--population", str(FIX / "population.jsonl"), "--personas", "3", "--questionnaire",
            str(FIX / "questionnaire.yaml"), "--contexts", "no_conv,fixed:chess", "--turns", "2",
            "--max-tokens", "24", "--answer-tokens", "6", "--bootstrap", "50")
    code, folder, _, _ = cli_run(*PERSONA, "--run-id", "a", *args)
    assert code == 0
    results = json.loads((folder / "results.json").read_text())
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    convs = [json.loads(line) for line in (folder / "conversations.jsonl").read_text().splitlines()]
    # 3 personas x 2 contexts x 4 items; one conversation per persona in the fixed context
    assert len(samples) == 24 and len(convs) == 3
    for c in convs:
        assert [t["speaker"] for t in c["turns"]] == ["interlocutor", "persona", "interlocutor", "persona"]
        assert c["turns"][0]["text"] == "1. e4" and all(t["text"] for t in c["turns"]) and c["error"] is None
    for s in samples:
        assert s["status"] in ("ok", "invalid") and s["response"] is not None
        assert (s["answer"] is None) == (s["status"] == "invalid")
        assert s["turns"] == (1 if s["context"] == "no_conv" else 5)  # system (+ 4 conversation turns)
    usage = results["models"]["llamacpp"]["usage"]
    assert usage["requests"] == 3 * 3 + 24 and usage["failed"] == 0
    m = results["metrics"]["llamacpp"]
    assert m["answers"] == 24 and m["invalid"] == sum(s["status"] == "invalid" for s in samples)
    assert m["stability_matrix"]["contexts"] == ["no_conv", "fixed_chess"]
    assert set(m["validity"]) == {"no_conv", "fixed_chess"}
    assert set(results["leaderboard"]["models"]) == {"llamacpp"}
    assert (folder / "value_scores.csv").read_text().count("\n") == 1 + 2 * 3

    code, again, _, _ = cli_run(*PERSONA, "--run-id", "b", *args)
    assert code == 0
    rerun = json.loads((again / "results.json").read_text())
    assert rerun["models"]["llamacpp"]["usage"]["new"] == 0  # a rerun asks nothing
    assert rerun["metrics"] == results["metrics"]


def test_user_errors_are_one_message(tmp_path, cli_run):
    code, _, _, err = cli_run(*PERSONA, "--run-id", "x", "--personas", "2")
    assert code == 2 and "--personas 2: out of range; it must be in [3, 1000000]" in err
    code, _, _, err = cli_run(*PERSONA, "--run-id", "y", "--contexts", "no_conv,banter")
    assert code == 2 and "unknown context 'banter'" in err
    code, _, _, err = cli_run(*PERSONA, "--run-id", "z", "--questionnaire", tmp_path / "missing.yaml")
    assert code == 2 and "missing.yaml: no such file" in err


@pytest.mark.slow
def test_logprob_scorings_read_the_first_token_and_share_one_request(cli_run):
    """expected and logprobs ask the same one-token request: the second scoring is a free rerun."""
    args = ("--population", str(FIX / "population.jsonl"), "--personas", "3", "--questionnaire",
            str(FIX / "questionnaire.yaml"), "--contexts", "no_conv,fixed:chess", "--turns", "1",
            "--max-tokens", "16", "--bootstrap", "20")
    code, folder, _, _ = cli_run(*PERSONA, "--run-id", "e", *args, "--scoring", "expected")
    assert code == 0
    expected = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert len(expected) == 3 * 2 * 4
    for s in expected:
        assert s["status"] == "ok" and len(s["probs"]) == 4 and abs(sum(s["probs"]) - 1) < 1e-9
        assert 0 < s["letter_mass"] <= 1
        assert s["answer"] == pytest.approx(sum((i + 1) * p for i, p in enumerate(s["probs"])))
    results = json.loads((folder / "results.json").read_text())
    assert results["metrics"]["llamacpp"]["invalid_rate"] == 0
    assert results["scoring"] == "expected"
    masses = [v["letter_mass"] for v in results["metrics"]["llamacpp"]["validity"].values()]
    assert all(0 < x <= 1 for x in masses)
    assert "--scoring expected" in (folder / "report.html").read_text()

    code, again, _, _ = cli_run(*PERSONA, "--run-id", "l", *args, "--scoring", "logprobs")
    assert code == 0
    assert json.loads((again / "results.json").read_text())["models"]["llamacpp"]["usage"]["new"] == 0
    argmax = [json.loads(line) for line in (again / "samples.jsonl").read_text().splitlines()]
    for e, a in zip(expected, argmax):
        assert a["probs"] == e["probs"] and a["answer"] == 1 + max(range(4), key=e["probs"].__getitem__)
