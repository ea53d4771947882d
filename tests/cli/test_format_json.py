"""``--format json`` on run and compare: stdout is one JSON object a script can read, the same
figures as results.json; messages stay on stderr."""

from __future__ import annotations

import json

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer


def _mcq(tmp_path, stub, run_id: str) -> tuple:
    """``run mcq --format json`` of the copied questions against the stub, as ``run_id``."""
    return ("run", "mcq", "--data", tmp_path / "q.jsonl", "--model", stub.model("m"), "--families", "order",
            "--run-id", run_id, "--format", "json")


def test_run_and_compare_print_json(tmp_path, mcq_file, cli_run, capsys):
    (tmp_path / "q.jsonl").write_text(mcq_file.read_text())
    with StubServer() as stub:
        code, _, out, _ = cli_run(*_mcq(tmp_path, stub, "a"))
        assert code == 0
        first = json.loads(out)
        assert cli_run(*_mcq(tmp_path, stub, "b"), "--seed", "1").code == 0
        code, _, out, _ = cli_run(*_mcq(tmp_path, stub, "est"), "--estimate")
        assert code == 0
        estimate = json.loads(out)
    results = json.loads((tmp_path / "runs" / "a" / "results.json").read_text())
    assert first["suite"] == "mcq" and first["run_dir"].endswith("a")
    assert first["metrics"] == results["metrics"]
    assert first["usage"]["openai:m"]["requests"] == results["models"]["openai:m"]["usage"]["requests"]
    assert estimate["estimates"][0]["model"] == "openai:m" and estimate["estimates"][0]["cached"] > 0

    a, b = str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b")
    assert main(["compare", a, b, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["suite"] == "mcq" and [h["run"] for h in doc["headlines"]] == ["a", "b"]
    assert set(doc["paired"]) == {b} and "order" in doc["paired"][b]
