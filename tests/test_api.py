"""The Python API: `robusteval.evaluate` in a script and inside a running event loop, `load_run`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

import robusteval
from robusteval.errors import UserError
from robusteval.results.mcq import FamilyMetrics
from robusteval.testing.openai_stub import StubServer


def _settings(tmp_path, mcq_file) -> dict:
    return {"data": str(mcq_file), "families": ["order"], "limit": 3, "cache_dir": str(tmp_path / "cache"),
            "out_dir": str(tmp_path / "runs")}


def test_evaluate_returns_the_runs_typed_record(tmp_path, mcq_file):
    with StubServer() as stub:
        model = stub.model()
        record = robusteval.evaluate("mcq", models=[model], **_settings(tmp_path, mcq_file))
    assert record.suite == "mcq" and record.path is not None and (record.path / "report.html").exists()
    family = record.metrics["openai:stub"]["order"]
    rows = (record.path / "samples.jsonl").read_text().splitlines()
    assert isinstance(family, FamilyMetrics) and family.samples == len(rows) > 0
    on_disk = json.loads((record.path / "results.json").read_text())["metrics"]["openai:stub"]["order"]
    assert family.accuracy.value == pytest.approx(on_disk["accuracy"]["value"], rel=1e-9)
    again = robusteval.load_run(record.path / "results.json")
    assert again.metrics == record.metrics and again.path == record.path


def test_evaluate_inside_a_running_loop_and_awaited(tmp_path, mcq_file):
    """A notebook cell runs in the kernel's loop: evaluate() still works there; evaluate_async awaits."""
    with StubServer() as stub:
        model = stub.model()

        async def cell():
            blocking = robusteval.evaluate("mcq", models=[model], run_id="in-loop", **_settings(tmp_path, mcq_file))
            awaited = await robusteval.evaluate_async("mcq", models=[model], run_id="awaited",
                                                      **_settings(tmp_path, mcq_file))
            return blocking, awaited

        blocking, awaited = asyncio.run(cell())
    assert blocking.run_id == "in-loop" and awaited.run_id == "awaited"
    assert blocking.metrics == awaited.metrics
    assert awaited.models["openai:stub"].usage["new"] == 0  # the second run came from the store


def test_bad_settings_are_the_clis_messages(tmp_path, mcq_file):
    with pytest.raises(UserError, match=r"--limit 0: out of range"):
        robusteval.evaluate("mcq", limit=0, **{k: v for k, v in _settings(tmp_path, mcq_file).items() if k != "limit"})
    with pytest.raises(UserError, match="do not apply to suite 'mcq'"):
        robusteval.evaluate("mcq", turns=2)
    with pytest.raises(AttributeError):
        robusteval.no_such_function  # noqa: B018


def test_import_robusteval_stays_light():
    """The API is imported on first use: `import robusteval` loads no suite, engine or numpy."""
    code = "import sys, robusteval; print(sorted(m for m in sys.modules if m.startswith(('robusteval.', 'numpy'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_evaluate_the_embedded_model(tmp_path, mcq_file):
    record = robusteval.evaluate("mcq", models=["llamacpp"], families=["order"], limit=2, max_tokens=16,
                                 data=str(mcq_file), cache_dir=str(tmp_path / "c"), out_dir=str(tmp_path / "r"))
    rows = (record.path / "samples.jsonl").read_text().splitlines()
    assert record.metrics["llamacpp"]["order"].samples == len(rows) > 0
    assert record.models["llamacpp"].usage["new"] > 0


def test_score_released_answers_from_python(realdata, tmp_path):
    """robusteval.score: the same scoring as `robusteval score`, returned as the run's record."""
    zipped = realdata / "mmlu-pro" / "outputs" / "model_outputs_gemma-7b_5shots.zip"
    record = robusteval.score(zipped, reader="mmlu-pro", out_dir=str(tmp_path), run_id="gemma")
    assert record.path == tmp_path / "gemma" and (record.path / "report.html").exists()
    (model,) = record.models_under_test
    family = record.metrics[model]["released"]
    assert family.accuracy.value == pytest.approx(3945 / 12032, abs=1e-9)  # the authors' chain, no guess


def test_an_estimate_asks_nothing_and_writes_no_run_folder(tmp_path, mcq_file, capsys):
    """evaluate(..., estimate=True) as `run --estimate` and YAML `estimate: true`: once the whole suite
    ran (its 11 requests sent, a run folder written). Counted by the stub, not timed."""
    with StubServer() as stub:
        model = stub.model()
        estimates = robusteval.evaluate("mcq", models=[model], estimate=True, **_settings(tmp_path, mcq_file))

        async def cell():
            return await robusteval.evaluate_async("mcq", models=[model], estimate=True, quiet=False,
                                                   **_settings(tmp_path, mcq_file))

        awaited = asyncio.run(cell())
        assert stub.counters()["total"] == 0
    assert [(e.model, e.requests, e.to_send) for e in estimates] == [("openai:stub", 11, 11)]  # what the run sends
    assert awaited == estimates
    assert "nothing was asked" in capsys.readouterr().out  # quiet=False prints the command's table
    assert not (tmp_path / "runs").exists()


def test_run_suite_refuses_an_estimates_configuration(tmp_path):
    """A door that forgot to tell an estimate from a run fails before any model starts."""
    from robusteval.config import RunConfig
    from robusteval.run import run_suite

    config = RunConfig(models=("openai:stub?base_url=http://127.0.0.1:9/v1",), estimate=True,
                       out_dir=str(tmp_path / "runs"), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="call run_or_estimate"):
        asyncio.run(run_suite(config, quiet=True))
    assert not (tmp_path / "runs").exists()
