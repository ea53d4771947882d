"""Bad input ends in one clear message and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from robusteval.testing.llama_server import free_port


def robusteval(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robusteval.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def assert_clean_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def test_unknown_model_kind(tmp_path):
    proc = robusteval("run", "mcq", "--model", "gguf:x", "--cache-dir", str(tmp_path))
    assert_clean_error(proc, "unknown model kind 'gguf'")
    assert proc.returncode == 2


def test_unknown_suite_and_flag():
    assert_clean_error(robusteval("run", "nosuchsuite"), "invalid choice: 'nosuchsuite'")
    assert_clean_error(robusteval("run", "mcq", "--frobnicate"), "unrecognized arguments: --frobnicate")


def test_unknown_family(tmp_path):
    assert_clean_error(robusteval("run", "mcq", "--families", "order,colour"), "unknown --families colour")


def test_unreachable_endpoint(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = robusteval("run", "mcq", "--model", f"openai:m?base_url={url}", "--cache-dir", str(tmp_path),
                      "--out", str(tmp_path))
    assert_clean_error(proc, "cannot reach", url)


def test_missing_api_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ROBUSTEVAL_TEST_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--model",
         "openai:gpt-x?base_url=https://api.example.invalid/v1&api_key_env=ROBUSTEVAL_TEST_KEY",
         "--cache-dir", str(tmp_path), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=60)
    assert_clean_error(proc, "ROBUSTEVAL_TEST_KEY")


def test_malformed_yaml_names_file_and_line(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("limit: 3\nfamilies: [order, format\nseed: 1\n")
    proc = robusteval("run", "mcq", "--config", str(cfg))
    assert_clean_error(proc, f"{cfg}:", "malformed YAML")


def test_unknown_yaml_setting(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("limit: 3\nfamilys: order\n")
    assert_clean_error(robusteval("run", "mcq", "--config", str(cfg)), "unknown setting 'familys'")


def test_bad_data_row_is_left_out_and_counted_broken_json_stops(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "q?", "choices": ["a", "b"], "answer": 0}\n'
                    '{"question": "q2?", "choices": ["a", "b"], "answer": 7}\n')
    proc = robusteval("run", "mcq", "--data", str(data), "--cache-dir", str(tmp_path), "--estimate")
    assert proc.returncode == 0, proc.stderr
    assert "2 rows read, 1 used" in proc.stderr
    assert "left out 1: answer outside the options (e.g. line 2)" in proc.stderr
    data.write_text('{"question": "q?", "choices": ["a", "b"], "answer": 0}\n{"question": "q2?", \n')
    proc = robusteval("run", "mcq", "--data", str(data), "--cache-dir", str(tmp_path), "--estimate")
    assert_clean_error(proc, f"{data}:2", "not valid JSON")


def _gated_stub(monkeypatch, let_through: int, hold: int):
    """A stub server that answers the first ``let_through`` chat requests and holds every later one
    until ``release`` is called; ``holding`` is set once ``hold`` requests wait at the gate. The test
    then knows exactly where the run stands, whatever the machine's load: no sleeps, no timing."""
    import asyncio

    from aiohttp import web

    import robusteval.testing.openai_stub as openai_stub

    holding, released = threading.Event(), threading.Event()
    seen = 0
    make_app = openai_stub.make_app

    @web.middleware
    async def gate(request, handler):
        nonlocal seen
        if request.path.endswith("/chat/completions"):
            seen += 1
            if seen > let_through:
                if seen == let_through + hold:
                    holding.set()
                while not released.is_set():
                    await asyncio.sleep(0.02)
        return await handler(request)

    def gated_app(config, state):
        app = make_app(config, state)
        app.middlewares.append(gate)
        return app

    monkeypatch.setattr(openai_stub, "make_app", gated_app)
    return holding, released


def test_ctrl_c_mid_run_then_resume(tmp_path, mcq_file, monkeypatch):
    """SIGINT while requests are in flight: exit 130, the answers received are stored, the store is
    intact, and the same command asks only what is missing."""
    import json

    from robusteval.testing.openai_stub import StubServer

    concurrency, answered = 4, 5
    holding, released = _gated_stub(monkeypatch, let_through=answered, hold=concurrency)
    store = tmp_path / "cache" / "responses.sqlite"

    def args(base_url, run_id):
        return [sys.executable, "-m", "robusteval.cli", "run", "mcq", "--data", str(mcq_file), "--quiet",
                "--model", f"openai:m?base_url={base_url}", "--concurrency", str(concurrency),
                "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), "--run-id", run_id]

    with StubServer() as stub:
        proc = subprocess.Popen(args(stub.base_url, "first"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            # every slot waits at the gate: the first answers are in, the rest are in flight
            assert holding.wait(600), "the run never reached the gate"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=600)  # a safety net: the run stops as soon as it is told
        finally:
            released.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert not (tmp_path / "runs" / "first").exists()  # no half-written run folder is left behind
        assert _rows(store) == answered
        con = sqlite3.connect(store)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        monkeypatch.undo()
    with StubServer() as stub:
        resumed = subprocess.run(args(stub.base_url, "resumed"), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    usage = json.loads((tmp_path / "runs" / "resumed" / "results.json").read_text())["models"]["openai:m"]["usage"]
    assert usage["new"] == usage["requests"] - answered  # only what was missing was asked
    assert _rows(store) == usage["requests"]


def _rows(store) -> int:
    con = sqlite3.connect(store, timeout=30)
    try:
        return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_cache_stats_and_clear(tmp_path):
    from robusteval.engine.store import Store
    from robusteval.types import Completion, Message, Request

    store = Store(tmp_path / "responses.sqlite")
    for i in range(3):
        store.put(f"k{i}", "llamacpp:a", Request((Message("user", str(i)),)), Completion(text="x"), 0.1)
    store.put("k9", "openai:b", Request((Message("user", "9"),)), Completion(text="y"), 0.1)
    store.close()
    stats = robusteval("cache", "stats", "--cache-dir", str(tmp_path))
    assert stats.returncode == 0
    assert "responses: 4" in stats.stdout and "llamacpp:a" in stats.stdout and "openai:b" in stats.stdout
    cleared = robusteval("cache", "clear", "--cache-dir", str(tmp_path), "--model-prefix", "llamacpp:")
    assert cleared.returncode == 0 and "deleted 3 responses" in cleared.stdout
    assert "responses: 1" in robusteval("cache", "stats", "--cache-dir", str(tmp_path)).stdout


def test_broken_gguf_file(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    proc = robusteval("run", "mcq", "--model", f"llamacpp:{bad}", "--limit", "1", "--cache-dir", str(tmp_path),
                      "--out", str(tmp_path))
    assert_clean_error(proc, "llama.cpp could not load", str(bad))


def test_missing_gguf_file(tmp_path):
    proc = robusteval("run", "mcq", "--model", f"llamacpp:{tmp_path}/none.gguf", "--cache-dir", str(tmp_path))
    assert_clean_error(proc, "GGUF file not found")


def test_cost_accounting_and_no_cache(tmp_path, mcq_file):
    import json

    from robusteval.cli import main
    from robusteval.testing.openai_stub import StubServer

    def run(run_id, *extra):
        code = main(["run", "mcq", "--quiet", "--data", str(mcq_file), "--families", "format",
                     "--model", stub.model(), "--price-in", "2.5", "--price-out", "10",
                     "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path), "--run-id", run_id, *extra])
        assert code == 0
        return json.loads((tmp_path / run_id / "results.json").read_text())["models"]["openai:stub"]["usage"]

    with StubServer() as stub:
        first = run("a")
        cached = run("b")
        fresh = run("c", "--no-cache")
        hits = stub.state.total
    assert first["new"] == 30 and first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    expected = (first["prompt_tokens"] * 2.5 + first["completion_tokens"] * 10) / 1e6
    assert first["cost"] == pytest.approx(expected, abs=1e-6) and first["cost"] > 0
    assert cached["new"] == 0 and cached["cost"] == 0  # cached answers cost nothing
    assert fresh["new"] == 30 and hits == 60


def test_prompt_fewshot_and_cross_through_the_cli(tmp_path, mcq_file):
    import json

    from robusteval.cli import main
    from robusteval.testing.openai_stub import StubServer

    templates = tmp_path / "t.yaml"
    templates.write_text("templates:\n"
                         "  - name: one\n"
                         "    template: 'Q: {question}\\n{options}\\nEnd with The best answer is [label].'\n"
                         # every template asks for an answer the reader reads (the template check)
                         "  - name: two\n    template: '{options}\\n{question} ({category}) "
                         "The best answer is [label]'\n")
    with StubServer() as stub:
        code = main(["run", "mcq", "--quiet", "--data", str(mcq_file), "--families", "prompt,fewshot",
                     "--cross", "format,order", "--templates", str(templates), "--shots-per-question", "2",
                     "--no-fewshot-as-multiturn", "--model", stub.model(),
                     "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path), "--run-id", "d"])
    assert code == 0
    results = json.loads((tmp_path / "d" / "results.json").read_text())
    assert results["design"]["templates"] == ["one", "two"] and results["design"]["cross"] == ["format", "order"]
    assert results["design"]["shots_per_question"] == 2 and results["design"]["fewshot_as_multiturn"] is False
    assert "evaluated set itself" in results["design"]["shots_source"]
    assert set(results["metrics"]["openai:stub"]) == {"prompt", "fewshot", "format×order"}
    samples = [json.loads(x) for x in (tmp_path / "d" / "samples.jsonl").read_text().splitlines()]
    crossed = [s for s in samples if s["family"] == "format×order"]
    assert len(crossed) == 4 * 6 * 4 + 6 * 3  # four 4-option questions, one with 3 options
    shots = [s for s in samples if s["family"] == "fewshot"]
    assert len(shots) == 10 and all(s["turns"] == 1 and s["prompt"].count("The best answer is") >= 2 for s in shots)
