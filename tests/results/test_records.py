"""A run folder's results.json is checked at the one door every reader takes (`read_results`,
`read_run`): a broken file is one `UserError` naming it, never a traceback further on."""

from __future__ import annotations

import json
import math

import pytest

import robusteval
from robusteval.errors import UserError
from robusteval.results.records import read_results, read_run


def _results(accuracy) -> dict:
    est = {"value": accuracy, "ci_low": 0.2, "ci_high": 0.8, "n": 10}
    return {"run_id": "r", "suite": "mcq", "started": "2026-11-23T10:00:00", "models": {"m": {"spec": "openai:m"}},
            "metrics": {"m": {"order": {"accuracy": est, "consistency_rate": est}}}}


def _run(root, name, text: str):
    (root / name).mkdir()
    (root / name / "results.json").write_text(text)
    return root / name


BROKEN = {
    # a value of the wrong kind where the suite's record has a number
    "tampered": (json.dumps(_results("high")), "not a readable run record (m.order.accuracy.value"),
    # nested far deeper than any results.json: json.loads hit RecursionError
    "deep": ("[" * 100_000 + "]" * 100_000, "JSON nested 100000 deep"),
    "not-an-object": ("[1, 2]", "a JSON object is expected"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_results_json_is_one_user_error_naming_it(tmp_path, name):
    text, reason = BROKEN[name]
    folder = _run(tmp_path, name, text)
    for read in (read_results, read_run, robusteval.load_run):
        with pytest.raises(UserError) as caught:
            read(folder)
        message = str(caught.value)
        assert message.startswith(f"{folder / 'results.json'}: ") and reason in message, (read, message)
        assert "\n" not in message


def test_a_good_results_json_reads_as_before(tmp_path):
    folder = _run(tmp_path, "good", json.dumps(_results(0.5)))
    assert read_results(folder)["metrics"]["m"]["order"]["accuracy"]["value"] == 0.5
    record = read_run(folder)
    assert record.path == folder and record.metrics["m"]["order"].accuracy.value == pytest.approx(0.5)
    estimate = _results(0.5) | {"metrics": {}}  # an --estimate run: no metrics yet
    assert read_run(_run(tmp_path, "estimate", json.dumps(estimate))).metrics == {}


@pytest.mark.parametrize("name", ["tampered", "deep"])
@pytest.mark.parametrize("command", ["report", "compare", "merge"])
def test_every_command_reading_a_broken_run_answers_rc_2_in_one_line(tmp_path, cli_run, command, name):
    good = _run(tmp_path, "good", json.dumps(_results(0.5)))
    bad = _run(tmp_path, name, BROKEN[name][0])
    args = {"report": [bad], "compare": [bad, good], "merge": [bad, good, "--out", tmp_path / "merged"]}[command]
    result = cli_run(command, *args)
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and str(bad / "results.json") in result.err, result.err
    assert "Traceback" not in result.err


def test_a_nan_robusteval_wrote_into_its_own_results_json_reads_as_written(tmp_path):
    """results.json is robusteval's own file, written by `json.dumps` (which writes NaN for a metric
    with no value): its readers take it as written, as they take samples.jsonl. The refusal of NaN is
    for data files, where it is a broken export."""
    folder = _run(tmp_path, "nan", json.dumps(_results(float("nan"))))
    assert "NaN" in (folder / "results.json").read_text()
    assert math.isnan(read_results(folder)["metrics"]["m"]["order"]["accuracy"]["value"])
    assert read_run(folder).path == folder
