"""The hallucination suite on files in the layout of the task's releases (tests/fixtures/hallucigen):
the language comes from the file name, and the unlabelled test files run the generation step.
Through the deterministic stub, so every request is known."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.testing.openai_stub import StubServer

REAL = Path(__file__).parent.parent / "fixtures" / "hallucigen"
SUBMITTED = REAL / "submitted"  # the layouts participants submitted (examples, our own rows)


def _layout(path: Path) -> tuple[list[str], set[str]]:
    """A submitted file's header and the values of its label column (detection) or () otherwise."""
    import csv

    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], {r[1] for r in rows[1:]} if rows[0] == ["id", "label"] else set()


HALLUCINATION = ("run", "hallucination", "--quiet", "--judge", "none")


def test_generation_on_an_unlabelled_swedish_test_file(cli_run):
    with StubServer() as stub:
        code, folder, _, err = cli_run(*HALLUCINATION, "--model", stub.model(), "--run-id", "sv", "--step",
                                       "generation", "--data", REAL / "test_generation_sv.csv", "--limit", "2")
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
        code, folder, _, _ = cli_run(*HALLUCINATION, "--model", stub.model(), "--run-id", "en", "--step",
                                     "generation", "--lang", "en", "--data", REAL / "test_generation_sv.csv",
                                     "--limit", "2")
        assert code == 0
        assert {json.loads(line)["lang"] for line in (folder / "samples.jsonl").read_text().splitlines()} == {"en"}


def test_detection_on_the_unlabelled_test_file_writes_predictions(cli_run):
    """The task's test_detection files have no labels (as participants got them): detection runs,
    writes per configuration the ``id,label`` file participants submitted, and marks its scores n/a."""
    with StubServer() as stub:
        code, folder, _, err = cli_run(*HALLUCINATION, "--model", stub.model(), "--run-id", "det", "--step",
                                       "detection", "--prompts", "incorrect,support",
                                       "--data", REAL / "test_detection_sv.csv")
        assert code == 0, err
        ids = ["td-sv-1", "td-sv-2", "td-sv-3"]
        for config in ("openai:stub/incorrect", "openai:stub/support"):
            path = folder / f"detection-{config.replace(':', '_').replace('/', '_')}.csv"
            header, labels = _layout(path)
            example_header, example_labels = _layout(SUBMITTED / "detection_example.csv")
            assert header == example_header and labels <= example_labels | {""}  # empty: no usable verdict
            assert [line.split(",")[0] for line in path.read_text().splitlines()[1:]] == ids
        samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        verdicts = {(s["config"], s["item_id"]): s["predicted"] or "" for s in samples}
        written = (folder / "detection-openai_stub_incorrect.csv").read_text().splitlines()[1:]
        assert written == [f"{i},{verdicts[('openai:stub/incorrect', i)]}" for i in ids]  # the replies' verdicts
        assert all(s["gold"] is None and s["correct"] is None for s in samples)
        results = json.loads((folder / "results.json").read_text())
        detector = results["metrics"]["detection"]["detectors"]["openai:stub/incorrect"]
        assert detector["samples"] == 3
        assert all(detector[name]["value"] is None for name in ("accuracy", "precision", "recall", "f1"))
        assert detector["position_bias"]["gold_first"] is None
        assert results["hallucination"]["unlabelled"] is True
        assert any("detection writes its predictions" in n for n in results["data"]["sources"][0]["notes"])


def test_generation_writes_the_outputs_participants_submitted(cli_run):
    with StubServer() as stub:
        code, folder, _, _ = cli_run(*HALLUCINATION, "--model", stub.model(), "--run-id", "gen", "--step",
                                     "generation", "--data", REAL / "test_generation_en.csv")
        assert code == 0
        import csv

        with open(folder / "generation-openai_stub.csv", encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
        assert rows[0] == _layout(SUBMITTED / "generation_example.csv")[0] == ["id", "hyp+", "hyp-"]
        assert rows[1:] == [[s["item_id"], s["hyp_plus"] or "", s["hyp_minus"] or ""] for s in samples]
        assert len(rows) > 1


def test_a_file_labelled_in_part_is_refused(tmp_path, cli_run):
    part = tmp_path / "part_sv.csv"
    text = (REAL / "test_detection_sv.csv").read_text(encoding="utf-8").splitlines()
    part.write_text("\n".join([text[0] + ",label", text[1] + ",hyp2", *text[2:]]) + "\n", encoding="utf-8")
    with StubServer() as stub:
        code, _, _, err = cli_run(*HALLUCINATION, "--model", stub.model(), "--run-id", "part", "--step",
                                  "detection", "--data", part)
    assert code == 2 and "part_sv.csv:3: no label (hyp1 or hyp2), while other rows have one" in err
    assert "Traceback" not in err
