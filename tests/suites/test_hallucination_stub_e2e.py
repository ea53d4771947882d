"""The hallucination suite end to end through the deterministic stub, with exact metrics: every
reply is "Let me think. The best answer is X.", so every detection is invalid ("no label") and a
generated pair is valid only where the two replies differ. The model's label holds "/" (as
``openai:meta-llama/Llama-3.1-8B`` does): the leaderboard and the report file it under that label."""

from __future__ import annotations

import json

import pytest

from robusteval.cli import main
from robusteval.report.leaderboard import boards_from
from robusteval.report.render import load_run
from robusteval.report.sections import headlines, sections
from robusteval.results.codec import encode
from robusteval.results.records import read_run
from robusteval.testing.openai_stub import StubServer

MODEL = "openai:meta-llama/Llama-3.1-8B"
CONFIGS = [f"{MODEL}/incorrect", f"{MODEL}/support"]
VOTE = f"vote({CONFIGS[0]}+{CONFIGS[1]})"


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hallucination")
    with StubServer() as stub:
        code = main(["run", "hallucination", "--quiet", "--model", f"{MODEL}?base_url={stub.base_url}",
                     "--judge", "none", "--limit", "4", "--prompts", "incorrect,support", "--orders", "both",
                     "--bootstrap", "100", "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "runs"),
                     "--run-id", "r"])
    assert code == 0
    return tmp / "runs" / "r"


def _est(value, low, high, n) -> dict:
    return {"value": value, "ci_low": low, "ci_high": high, "n": n}


def test_exact_metrics(stub_run):
    results = json.loads((stub_run / "results.json").read_text())
    m = results["metrics"]
    # generation (2 per source), detection (2 prompts x 2 orders), cross (the one valid pair)
    assert results["models"][MODEL]["usage"]["requests"] == 4 * 2 + 4 * 2 * 2 + 1 * 2 * 2
    gen = m["generation"][MODEL]
    assert (gen["items"], gen["invalid"], gen["failed"], gen["judges"]) == (4, 3, 0, {})
    assert gen["invalid_reasons"] == {"hyp+ and hyp- are the same": 3}
    assert gen["valid"]["value"] == 0.25 and gen["valid"]["n"] == 4
    assert gen["valid"]["ci_low"] == pytest.approx(0.0455873, abs=1e-6)
    assert gen["valid"]["ci_high"] == pytest.approx(0.6993582, abs=1e-6)
    zero4 = _est(0.0, 0.0, 0.0, 4)
    for step, samples, items in (("detection", 8, 4), ("cross", 2, 1)):
        detectors = m[step]["detectors"]
        assert list(detectors) == [*CONFIGS, VOTE]
        for name, d in detectors.items():
            reason = "no majority" if name == VOTE else "no label"
            assert (d["samples"], d["items"], d["invalid"], d["failed"]) == (samples, items, samples, 0)
            assert d["invalid_reasons"] == {reason: samples}
            assert d["position_bias"] == {"chose_first": _est(None, None, None, items), "gold_first": 0.5}
            expected = zero4 if step == "detection" else _est(0.0, None, None, 1)
            assert all(d[k] == expected for k in ("accuracy", "precision", "recall", "f1", "order_consistency"))
            assert (d["detector"], d["prompt"]) == ((None, None) if name == VOTE else (MODEL, name.rsplit("/", 1)[1]))
        pair = m[step]["agreement"]["pairwise"][f"{CONFIGS[0]} ~ {CONFIGS[1]}"]
        assert pair == {"cohen_kappa": None, "mcc": None, "agreement": 1.0, "n": samples}
        assert m[step]["agreement"]["fleiss_kappa"] is None and m[step]["agreement"]["fleiss_n"] == samples
    assert list(m["cross"]["matrix"]) == [MODEL] and list(m["cross"]["matrix"][MODEL]) == [*CONFIGS, VOTE]
    assert "matrix" not in m["detection"]
    # the typed record reads back and encodes to exactly what was written
    assert encode(read_run(stub_run).metrics) == m


def test_headlines_file_each_detector_under_its_whole_label(stub_run):
    results = json.loads((stub_run / "results.json").read_text())
    assert [(h.model, h.metric, h.value) for h in headlines(results)] == [
        (MODEL, f"detection F1 ({CONFIGS[0]})", 0.0), (MODEL, f"detection F1 ({CONFIGS[1]})", 0.0),
        (VOTE, f"detection F1 ({VOTE})", 0.0),
        (MODEL, f"cross F1 ({CONFIGS[0]})", 0.0), (MODEL, f"cross F1 ({CONFIGS[1]})", 0.0),
        (VOTE, f"cross F1 ({VOTE})", 0.0)]
    (board,) = boards_from([("r", results)])
    assert sorted(row.model for row in board.rows) == sorted([MODEL, VOTE])


def test_report_section_of_the_run(stub_run):
    (section, data) = sections(load_run(stub_run))  # results first, the data audit after them
    assert data.audit and not section.audit
    assert [f.name for f in section.figures] == ["detection-f1", "cross-f1", "generator-detector"]
    detection, cross, generation = section.tables
    assert [row[0] for row in detection.rows] == [*CONFIGS, VOTE]
    assert detection.rows[0][1:] == ("0.000 [0.000, 0.000]",) * 4 + ("n/a", "0.000 [0.000, 0.000]", "8", "0")
    assert cross.rows[0][1:] == ("0.000",) * 4 + ("n/a", "0.000", "2", "0")
    assert generation.rows == ((MODEL, "0.250 [0.046, 0.699]", "3", "-", "n/a", "n/a"),)
    assert section.notes[0] == f"detection: Fleiss' kappa n/a; {CONFIGS[0]} ~ {CONFIGS[1]}: Cohen's kappa n/a, MCC n/a"
    summary = (stub_run / "summary.md").read_text()
    assert f"| {MODEL} | 0.250 [0.046, 0.699] | 3 | 0 | (no judge) | n/a | n/a |  |" in summary
    assert (stub_run / "matrix.csv").read_text().splitlines()[1] == f"{MODEL},{CONFIGS[0]},0.0,,,0.0,2,2"


def test_a_run_written_before_the_detector_field_reads_the_same(stub_run):
    """Older runs lack ``detector``/``prompt``: decoding supplies them, the label's own "/" kept."""
    results = json.loads((stub_run / "results.json").read_text())
    for step in ("detection", "cross"):
        for d in results["metrics"][step]["detectors"].values():
            del d["detector"], d["prompt"]
    assert [h.model for h in headlines(results)] == [MODEL, MODEL, VOTE] * 2
