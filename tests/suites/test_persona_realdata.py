"""The persona suite on the Stick To Your Role! leaderboard's own files: its population, both
gendered PVQ-40 files and a Reddit chunk (../shared/realdata/value-stability)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer

SMALL_QUESTIONNAIRE = Path(__file__).parent.parent / "fixtures" / "persona" / "questionnaire.yaml"  # 4 items


PERSONA = ("run", "persona", "--bootstrap", "20")


def _first_column(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [row[0] for row in csv.reader(f)]


def test_each_persona_is_asked_in_its_genders_wording(realdata, cli_run):
    """The leaderboard's population (gender F/M) with pvq_male_test.csv and pvq_female_test.csv:
    every question a woman is asked is the female file's item, every one a man is asked the male
    file's, and no woman is asked '...important to him'."""
    vs = realdata / "value-stability"
    wording = {g: _first_column(vs / "data_pvq" / f"pvq_{g}_test.csv") for g in ("female", "male")}
    with StubServer() as stub:
        results, samples = cli_run(*PERSONA, "--run-id", "gendered", "--quiet",
                                   "--model", f"openai:stub?base_url={stub.base_url}",
                                   "--population", vs / "personas" / "real_world_people.json",
                                   "--questionnaire", f"pvq40:{vs / 'data_pvq'}", "--personas", "4",
                                   "--contexts", "no_conv").written()
    gender = {p["id"]: p["gender"] for p in results["population"]}
    assert sorted(gender.values()) == ["female", "female", "male", "male"]
    assert len(samples) == 4 * 40
    for s in samples:
        n = int(s["item_id"].removeprefix("pvq40-"))
        assert f'"{wording[gender[s["persona_id"]]][n - 1]}"' in s["prompt"]
        if gender[s["persona_id"]] == "female":
            assert not re.search(r"\b(him|his|he|himself)\b", s["prompt"], re.I)
    assert sum("important to her" in s["prompt"] for s in samples) == sum(
        "important to him" in s["prompt"] for s in samples) > 0
    sources = {a["source"]: a for a in results["data"]["sources"]}
    population = sources[f"population {vs / 'personas' / 'real_world_people.json'}"]
    assert population["rows_read"] == 50 and population["rows_used"] == 4 and "gender" in population["assumed"]
    questionnaire = sources[f"questionnaire pvq40:{vs / 'data_pvq'}"]
    assert questionnaire["rows_read"] == 40 and "2 male, 2 female" in " ".join(questionnaire["notes"])


@pytest.mark.slow
def test_a_chunk_longer_than_the_window_is_n_a_until_truncated(realdata, tmp_path, cli_run):
    """chunk_4's posts (about 500 tokens) do not fit a 256-token window: every conversation in that
    context fails, so no stability or leaderboard score may be printed from the context that is left;
    with --context-max-tokens the same run fits and the audit counts the posts cut."""
    vs = realdata / "value-stability"
    chunk = vs / "contexts" / "chunk_4.jsonl"
    args = ("--model", "llamacpp?n_ctx=256&n_parallel=2&n_threads=1", "--population",
            str(vs / "personas" / "real_world_people.json"), "--personas", "3",
            "--questionnaire", str(SMALL_QUESTIONNAIRE),
            "--contexts", f"no_conv,file:{chunk}",
            "--turns", "1", "--max-tokens", "12", "--scoring", "expected")
    out = cli_run(*PERSONA, "--run-id", "long", *args)
    assert out.code == 3  # requests failed: the documented exit code, with everything else written
    results = out.results()
    m = results["metrics"]["llamacpp"]
    assert m["lost_contexts"]["file_chunk_4"]["failed"] == 3 * 4 == m["failed"]
    assert "exceeds the available context size" in m["lost_contexts"]["file_chunk_4"]["error"]
    assert m["rank_order_stability"]["value"] is None and m["stability_matrix"]["values"][0][1] is None
    assert results["leaderboard"]["models"]["llamacpp"]["cardinal"] is None
    assert "--context-max-tokens N" in m["na_reason"] and "n_ctx" in m["na_reason"]
    terminal = " ".join((out.out + out.err).split())
    assert "context file_chunk_4 lost 12 of 12 answers" in terminal and "--context-max-tokens N" in terminal
    # the last line does not suggest a rerun: the same prompts would fail the same way
    assert "the same command would fail the same way" in terminal and "run the same command again" not in terminal
    report = (tmp_path / "runs" / "long" / "report.md").read_text()
    assert "context file_chunk_4 lost 12 of 12 answers" in report

    results, _ = cli_run(*PERSONA, "--run-id", "cut", "--quiet", *args, "--context-max-tokens", "32").written()
    m = results["metrics"]["llamacpp"]
    assert m["failed"] == 0 and "lost_contexts" not in m and "na_reason" not in m
    assert results["leaderboard"]["models"]["llamacpp"]["cardinal"] is not None
    assert results["context_max_tokens"] == 32
    convs = [json.loads(line) for line in (tmp_path / "runs" / "cut" / "conversations.jsonl").read_text().splitlines()]
    assert len(convs) == 3 and all(c["error"] is None and len(c["turns"][0]["text"]) <= 128 for c in convs)
    audit = {a["source"]: a for a in results["data"]["sources"]}[f"context file:{chunk}"]
    assert audit["rows_read"] == 90 and audit["rows_used"] == 3
    assert list(audit["anomalies"].values()) == [3] and "truncated" in next(iter(audit["anomalies"]))


def test_the_estimate_warns_of_posts_longer_than_the_window_before_the_run(realdata, tmp_path, capsys):
    """The same long chunk against a 256-token window, estimated: nothing is asked, the questionnaire
    after each conversation is counted, and the prompts longer than the window (counted by the
    model's own tokenizer) are named before the run, with what to do."""
    vs = realdata / "value-stability"
    args = ["run", "persona", "--model", "llamacpp?n_ctx=256&n_parallel=2&n_threads=1", "--population",
            str(vs / "personas" / "real_world_people.json"), "--personas", "3", "--questionnaire",
            str(SMALL_QUESTIONNAIRE), "--contexts", f"no_conv,file:{vs / 'contexts' / 'chunk_4.jsonl'}",
            "--turns", "1", "--max-tokens", "12", "--scoring", "expected", "--estimate",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs")]
    assert main(args) == 0
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    # 3 personas x (no_conv's 4 items + the chunk's 1 turn and the 4 items after it)
    assert re.search(r"llamacpp\W+27\W+0\W+0\W+27\W", text)
    # the chunk's turn and its 4 items hold the post (about 500 tokens): 3 x 5 prompts too long
    assert ("warning: 15 of the 27 requests to llamacpp have prompts longer than its context window "
            "(256 tokens): they would fail") in text
    assert "--context-max-tokens cuts the opening posts" in text
    assert not (tmp_path / "runs").exists()
