"""`run consistency` writes the ELOQUENT 2024 robustness submission as the task asks: a file named
after the team, in the layout of ``tests/fixtures/eloquent/robustness-2024-example.json``, beside
our own answers file."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.cli import main

EXAMPLE = Path(__file__).parents[1] / "fixtures" / "eloquent" / "robustness-2024-example.json"
SETS = [{"id": "001", "variation": "formality", "variants": [{"language": "en", "prompt": "Name a primary colour."},
                                                           {"language": "en", "prompt": "pls name a primary color"}]},
        {"id": "002", "variation": "language",
         "variants": [{"language": "en", "prompt": "What is 2 + 2?"}, {"language": "de", "prompt": "Was ist 2 + 2?"},
                      {"language": "sv", "prompt": "Vad är 2 + 2?"}]}]


def shape(value):
    """The layout of a JSON value: keys and value types, lists by the shape of their members."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        shapes = [shape(v) for v in value]
        assert all(s == shapes[0] for s in shapes), "a list of mixed layouts"
        return [shapes[0]] if shapes else []
    return type(value).__name__


def run(tmp_path: Path, stub, *models: str, team: str = "myteam") -> Path:
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps(s) + "\n" for s in SETS))
    args = ["run", "consistency", "--data", str(sets), "--judge", "oracle", "--oracle",
            f"openai:stub?base_url={stub.base_url}", "--oracle-retries", "0", "--max-tokens", "16", "--team", team,
            "--quiet", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), "--run-id", "r"]
    for m in models:
        args += ["--model", f"{m}?base_url={stub.base_url}"]
    assert main(args) == 0
    return tmp_path / "runs" / "r"


def test_submission_is_named_after_the_team_in_the_task_layout(tmp_path, stub):
    folder = run(tmp_path, stub, "openai:stub")
    submission = json.loads((folder / "myteam.json").read_text(encoding="utf-8"))
    assert shape(submission) == shape(json.loads(EXAMPLE.read_text(encoding="utf-8")))
    body = submission["eloquent-robustness-results"]
    assert body["source"] == "myteam" and body["year"] == "2024"
    assert [i["id"] for i in body["items"]] == ["001", "002"]
    assert [len(i["responses"]) for i in body["items"]] == [2, 3]  # one per variant, in the test file's order
    ours = json.loads((folder / "answers-openai_stub.json").read_text(encoding="utf-8"))["robusteval-answers"]
    for theirs, mine in zip(body["items"], ours["items"]):
        assert [r["response"] for r in theirs["responses"]] == [v["response"] for v in mine["variants"]]
    assert all(r["response"] for i in body["items"] for r in i["responses"])
    assert not list(folder.glob("submission-*.json"))


def test_several_models_give_one_submission_each(tmp_path, stub):
    folder = run(tmp_path, stub, "openai:stub", "openai:other")
    for model in ("openai_stub", "openai_other"):
        body = json.loads((folder / f"myteam-{model}.json").read_text())["eloquent-robustness-results"]
        assert body["source"] == f"myteam-{model}"


def test_a_team_name_that_would_overwrite_a_run_file_is_refused(tmp_path, stub, capsys):
    sets = tmp_path / "sets.jsonl"
    sets.write_text(json.dumps(SETS[0]) + "\n")
    code = main(["run", "consistency", "--data", str(sets), "--model", f"openai:stub?base_url={stub.base_url}",
                 "--team", "results", "--out", str(tmp_path / "runs")])
    assert code == 2
    assert "--team 'results': the submission file would be results.json" in capsys.readouterr().err
