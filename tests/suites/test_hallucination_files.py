"""The hallucination suite on files in the layout of the task's releases (tests/fixtures/hallucigen):
the language comes from the file name, and the unlabelled test files run the generation step.
Through the deterministic stub, so every request is known."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.cli import main
from robusteval.testing.openai_stub import StubServer

REAL = Path(__file__).parent.parent / "fixtures" / "hallucigen"


def _run(tmp_path, base_url: str, *extra: str, run_id: str) -> tuple[int, Path]:
    code = main(["run", "hallucination", "--quiet", "--model", f"openai:stub?base_url={base_url}", "--judge", "none",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), "--run-id", run_id, *extra])
    return code, tmp_path / "runs" / run_id


def test_generation_on_an_unlabelled_swedish_test_file(tmp_path, capsys):
    with StubServer() as stub:
        code, folder = _run(tmp_path, stub.base_url, "--step", "generation", "--data",
                            str(REAL / "test_generation_sv.csv"), "--limit", "2", run_id="sv")
        err = capsys.readouterr().err
        assert code == 0
        samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        results = json.loads((folder / "results.json").read_text())
        assert [s["lang"] for s in samples] == ["sv", "sv"] and len(samples) == 2
        for s in samples:
            assert len(s["prompts"]) == 2 and s["status"] != "failed"
            assert all(f"Source (Swedish): {s['source']}" in p for p in s["prompts"])
            assert not any("English" in p for p in s["prompts"])
        assert results["models"]["openai:stub"]["usage"]["requests"] == 2 * 2
        assert results["metrics"]["generation"]["openai:stub"]["items"] == 2
        audit = results["data"]["sources"][0]
        assert audit["source"] == f"--data {REAL / 'test_generation_sv.csv'}"
        assert (audit["rows_read"], audit["rows_used"]) == (4, 2)
        assert audit["assumed"] == {"language": "sv (from the file name test_generation_sv.csv)"}
        assert "assumed language: sv (from the file name test_generation_sv.csv)" in err  # said in the terminal
        report = (folder / "report.md").read_text()
        assert "Data" in report and "sv (from the file name test_generation_sv.csv)" in report

        # --lang overrides the name; detection on the unlabelled file stops with one clear message
        code, folder = _run(tmp_path, stub.base_url, "--step", "generation", "--lang", "en", "--data",
                            str(REAL / "test_generation_sv.csv"), "--limit", "2", run_id="en")
        assert code == 0
        assert {json.loads(line)["lang"] for line in (folder / "samples.jsonl").read_text().splitlines()} == {"en"}
        capsys.readouterr()
        code, _ = _run(tmp_path, stub.base_url, "--step", "detection", "--data", str(REAL / "test_detection_sv.csv"),
                       run_id="det")
        err = capsys.readouterr().err
        assert code == 2 and "run --step generation" in err and "Traceback" not in err
