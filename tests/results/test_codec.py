"""results.json is written and read by the record's declared type: one codec, no encoder per suite.

Every suite's metrics round-trip (record -> results.json -> record, and the JSON it was read from
written back key for key), on the streaming goldens' metrics (tests/fixtures/streaming: what each
suite's runs write); a new suite whose typed record has no encoder of its own gets its intervals
written as ``ci_low``/``ci_high`` and read back; ``format_version`` is written, a file without it
still reads, and one from a later version is refused in one line.
"""

from __future__ import annotations

import json
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from robusteval.config import RunConfig
from robusteval.errors import UserError
from robusteval.estimate import Estimate
from robusteval.results.codec import OmitNone, decode, encode
from robusteval.results.folder import write_run
from robusteval.results.records import FORMAT_VERSION, Failure, decode_metrics, encode_metrics, read_results, read_run
from robusteval.suite_specs import SUITES, SuiteSpec
from robusteval.testing.floats import differences

GOLDEN = Path(__file__).parents[1] / "fixtures" / "streaming"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def test_every_suite_has_a_golden():
    assert {name.split("-")[0] for name in CASES} == set(SUITES)


@pytest.mark.parametrize("name", CASES)
def test_a_suites_metrics_round_trip_through_results_json(name):
    """The record decoded from a suite's results.json is written back as the same JSON (every key,
    every null kept or left out as the suite's runs write it), and that JSON decodes to an equal record."""
    suite = name.split("-")[0]
    written = json.loads((GOLDEN / f"{name}.json").read_text())["results"]
    record = decode_metrics(suite, written["metrics"])
    assert SUITES[suite].metrics is not None and record is not None and record != written["metrics"]  # typed
    again = encode_metrics(suite, record)
    assert differences(again, written["metrics"]) == [] and again == written["metrics"]
    assert decode_metrics(suite, json.loads(json.dumps(again))) == record
    failures = written["failures"]
    assert [encode(f) for f in decode(list[Failure], failures)] == failures


@dataclass(frozen=True)
class ToyScores:
    """A newcomer's record: estimates inside a dict by model, an optional measure, no encoder."""

    kept: Estimate
    by_variant: dict[str, Estimate] = field(default_factory=dict)
    rare: OmitNone[Estimate] = None


ToyMetrics = dict[str, ToyScores]


@pytest.fixture
def toy(monkeypatch):
    module = types.ModuleType("robusteval_toy_records")
    module.ToyMetrics = ToyMetrics
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(SUITES, "toy", SuiteSpec("toy", "a toy", "robusteval.suites.mcq",
                                                 metrics="robusteval_toy_records:ToyMetrics"))


def _write(folder: Path, suite: str, metrics) -> Path:
    return write_run(folder, config=RunConfig(suite=suite), models={"m": {"spec": "openai:m"}}, metrics=metrics,
                     samples=[], started=time.time(), finished=time.time())


def test_a_new_suites_record_with_no_encoder_keeps_its_intervals(toy, tmp_path):
    metrics = {"m": ToyScores(Estimate(0.4, 0.3, 0.5, 10), {"loud": Estimate(0.2, 0.1, 0.3, 10)})}
    folder = _write(tmp_path / "toy", "toy", metrics)
    written = json.loads((folder / "results.json").read_text())["metrics"]["m"]
    assert written["kept"] == {"value": 0.4, "ci_low": 0.3, "ci_high": 0.5, "n": 10}
    assert written["by_variant"]["loud"]["ci_low"] == 0.1 and "low" not in written["kept"]
    assert "rare" not in written  # OmitNone: left out when None
    assert read_run(folder).metrics == metrics


def test_encoding_a_container_asks_for_its_declared_type():
    """The defect the codec closes: a dict's runtime type says nothing of its records."""
    with pytest.raises(TypeError, match="declared type"):
        encode({"m": ToyScores(Estimate(0.4, 0.3, 0.5))})
    assert encode({"m": ToyScores(Estimate(0.4, 0.3, 0.5))}, ToyMetrics)["m"]["kept"]["ci_low"] == 0.3


def test_results_json_says_its_format_version_and_older_files_read(tmp_path):
    folder = _write(tmp_path / "run", "mcq", {})
    results = json.loads((folder / "results.json").read_text())
    assert results["format_version"] == FORMAT_VERSION and read_run(folder).format_version == FORMAT_VERSION
    del results["format_version"]  # a run written before the key existed
    (folder / "results.json").write_text(json.dumps(results))
    assert read_run(folder).format_version == 1
    results["format_version"] = FORMAT_VERSION + 1
    (folder / "results.json").write_text(json.dumps(results))
    for read in (read_run, read_results):
        with pytest.raises(UserError, match=f"format_version {FORMAT_VERSION + 1}: written by a newer robusteval"):
            read(folder)


@pytest.mark.parametrize("name", CASES)
def test_a_suites_extra_keys_round_trip_as_its_typed_record(name):
    """The keys a suite writes beside its metrics read back as the record its `SuiteSpec.extra` names,
    and that record writes them back as they were."""
    from robusteval.results.records import decode_extra, encode_extra

    suite = name.split("-")[0]
    written = json.loads((GOLDEN / f"{name}.json").read_text())["results"]
    extra = decode_extra(suite, written)
    assert isinstance(extra, SUITES[suite].extra_type())
    keys = encode_extra(suite, extra)
    assert keys and keys == {k: written[k] for k in keys}  # each key as the run wrote it
    assert set(written) - set(keys) <= {"suite", "metrics", "failures"}  # and every one of the suite's keys
