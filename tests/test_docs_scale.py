"""docs/scale.md's Slurm array script, run as written with bash (a fake ``SLURM_ARRAY_TASK_ID``, the
stub as the model, a small data file): a task whose run is killed saves its answers anyway, and the
same script requeued on another node (an empty /scratch) resumes the shard's run folder and ends with
the run an unkilled one writes, asking again at most the request that was in flight."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.testing.kill_at import kill_at, store_rows
from robusteval.testing.openai_stub import StubConfig, StubServer

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = re.compile(r"```sh\n(# shards\.sbatch\n.*?)```", re.S)


def _script(tmp_path: Path, base_url: str, data: Path, scratch: Path) -> Path:
    """The page's script with what this machine lacks replaced: the data, the server, /scratch (and one
    request at a time, so that the kill lands mid-run)."""
    text = SCRIPT.findall((ROOT / "docs" / "scale.md").read_text(encoding="utf-8"))
    assert len(text) == 1, "docs/scale.md holds one shards.sbatch block"
    script = text[0]
    for old, new in (("--data mmlu-pro --all --families order,format", f"--data {data} --families order"),
                     ("http://$SERVER:8000/v1", base_url), ("max_concurrency=64", "max_concurrency=1"),
                     ("/scratch/$USER", str(scratch))):
        assert script.count(old) == 1, f"the script no longer holds {old!r}: update this test with the page"
        script = script.replace(old, new)
    path = tmp_path / "shards.sbatch"
    path.write_text(script)
    return path


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Which letter is number {i}?",
                                        "choices": ["w", "x", "y", "z"], "answer": "ABCD"[i % 4]}) + "\n"
                            for i in range(24)))
    return path


def _outcome(run: Path) -> tuple[dict, list[tuple]]:
    results = json.loads((run / "results.json").read_text())
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return results["metrics"], sorted((s["item_id"], str(s["variant"]), s["response"]) for s in samples)


def test_the_slurm_script_survives_a_kill_and_a_requeue_on_another_node(tmp_path):
    robusteval = Path(sys.executable).parent / "robusteval"
    if not robusteval.exists():
        pytest.skip("needs the robusteval command beside this Python (make setup)")
    data = _data(tmp_path)
    with StubServer() as stub:  # the unkilled shard, for reference
        assert main(["run", "mcq", "--quiet", "--data", str(data), "--families", "order", "--model",
                     stub.model("Qwen/Qwen2.5-7B-Instruct"), "--cache-dir", str(tmp_path / "ref-cache"),
                     "--out", str(tmp_path / "ref"), "--shard", "1/4", "--run-id", "mmlu-pro-shard-1"]) == 0
        asked = len(stub.counters()["requests"])
    expected = _outcome(tmp_path / "ref" / "mmlu-pro-shard-1")
    assert asked >= 8

    project = tmp_path / "project"
    env = {**os.environ, "PROJECT": str(project), "SLURM_ARRAY_TASK_ID": "0", "USER": "someone",
           "PATH": f"{robusteval.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    saved = project / "stores" / "shard-1" / "responses.sqlite"
    run = project / "runs" / "mmlu-pro-shard-1"
    with StubServer(StubConfig(latency_s=0.02)) as stub:
        node_a = tmp_path / "node-a"
        first = kill_at(["bash", _script(tmp_path, stub.base_url, data, node_a)], env=env,
                        rows=(node_a / "robusteval-cache-1" / "responses.sqlite", 3), victim="run")
        assert first.fired and first.returncode == 128 + signal.SIGKILL, first.output  # the run's code, passed on
        assert 3 <= store_rows(saved) < asked  # saved although the run was killed
        assert (run / ".reserved").exists() and not (run / "results.json").exists()

        shutil.rmtree(node_a)  # requeued on another node: this one's /scratch is gone
        node_b = tmp_path / "node-b"
        second = kill_at(["bash", _script(tmp_path, stub.base_url, data, node_b)], env=env,
                         file=tmp_path / "never")
        assert second.returncode == 0, second.output
        per_request = stub.counters()["requests"]
        assert len(per_request) == asked and sum(per_request.values()) - asked <= 1  # the one in flight
    assert _outcome(run) == expected
    assert store_rows(saved) == asked and not (run / ".reserved").exists()
