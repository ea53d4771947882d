"""``--format json`` on run and compare: stdout is one JSON object a script can read, the same
figures as results.json; messages stay on stderr."""

from __future__ import annotations

import json

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer


def _run(tmp_path, base_url: str, run_id: str, *extra: str) -> list[str]:
    return ["run", "mcq", "--data", str(tmp_path / "q.jsonl"), "--model", f"openai:m?base_url={base_url}",
            "--families", "order", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"),
            "--run-id", run_id, "--format", "json", *extra]


def test_run_and_compare_print_json(tmp_path, mcq_file, capsys):
    (tmp_path / "q.jsonl").write_text(mcq_file.read_text())
    with StubServer() as stub:
        assert main(_run(tmp_path, stub.base_url, "a")) == 0
        first = json.loads(capsys.readouterr().out)
        assert main(_run(tmp_path, stub.base_url, "b", "--seed", "1")) == 0
        capsys.readouterr()
        assert main(_run(tmp_path, stub.base_url, "est", "--estimate")) == 0
        estimate = json.loads(capsys.readouterr().out)
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
