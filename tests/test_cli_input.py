"""The command line under careless input and hostile text: one clear message and a documented exit
code, never a traceback; user, model and dataset text printed literally."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from robusteval.testing.openai_stub import StubConfig, StubServer


def robusteval(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robusteval.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def assert_clean_error(proc: subprocess.CompletedProcess, *needles: str, code: int = 2) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def stub_run(stub, tmp_path, *args: str, run_id: str = "r", data: str | None = None) -> subprocess.CompletedProcess:
    return robusteval("run", "mcq", "--data", data or str(tmp_path / "data.jsonl"), "--families", "format",
                      "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), "--run-id", run_id,
                      *(args if any(a == "--model" for a in args) else ("--model", stub.model("m"),
                                                                        *args)))


@pytest.fixture
def data(tmp_path, mcq_file):
    (tmp_path / "data.jsonl").write_text(mcq_file.read_text())
    return tmp_path / "data.jsonl"


# ------------------------------------------------------------------ text printed literally

@pytest.mark.skipif(__import__("importlib").util.find_spec("datasets") is not None,
                    reason="the hub message appears only without the datasets package")
def test_brackets_in_an_error_message_are_not_eaten_as_markup(tmp_path):
    proc = robusteval("run", "mcq", "--data", "mmlu-pro", "--estimate", "--cache-dir", str(tmp_path))
    assert_clean_error(proc, "pip install 'robusteval[hub]'")


def test_model_names_with_markup_and_emoji_codes_print_literally(tmp_path, data):
    with StubServer() as stub:
        proc = stub_run(stub, tmp_path, "--model", f"openai:x[/b]?base_url={stub.base_url}",
                        "--model", stub.model("smile"), "--limit", "2")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "openai:x[/b] · format" in proc.stdout  # the summary table's title
    assert "openai:x[/b]: 12 requests" in proc.stdout and "openai:smile: 12 requests" in proc.stdout
    assert "\N{SMILING FACE WITH SMILING EYES}" not in proc.stdout and "\U0001f604" not in proc.stdout


def test_dataset_text_with_markup_prints_literally_in_errors(tmp_path):
    bad = tmp_path / "[bold]x[red] :smile:.jsonl"
    bad.write_text('{"question": "q?", "choices": ["a", "b"], "answer": 7}\n')
    proc = robusteval("run", "mcq", "--data", str(bad), "--estimate", "--cache-dir", str(tmp_path))
    assert_clean_error(proc, f"{bad}: no usable rows")


# ------------------------------------------------------------------ exit codes

def test_a_run_with_failed_requests_writes_what_succeeded_and_exits_3(tmp_path, data):
    with StubServer(StubConfig(p_500=0.5, seed=3)) as stub:
        proc = stub_run(stub, tmp_path, "--max-retries", "0", "--concurrency", "1")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "requests failed" in proc.stderr and "code 3" in proc.stderr
    results = json.loads((tmp_path / "runs" / "r" / "results.json").read_text())
    samples = [json.loads(x) for x in (tmp_path / "runs" / "r" / "samples.jsonl").read_text().split("\n") if x]
    failed = [s for s in samples if s["status"] == "failed"]
    assert 0 < len(failed) < len(samples) and len(results["failures"]) == len(failed)
    assert (tmp_path / "runs" / "r" / "report.html").is_file()


def test_a_run_whose_server_is_down_exits_3_not_0(tmp_path, data):
    with StubServer(StubConfig(p_500=1.0)) as stub:
        proc = stub_run(stub, tmp_path, "--max-retries", "0", "--limit", "2")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "runs" / "r" / "results.json").read_text())["failures"]


# ------------------------------------------------------------------ bad input files and settings

def test_data_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"question": "q?", "choices": ["a", "b"], "answer": 0}\n'
                    b'{"question": "caf\xe9?", "choices": ["a", "b"], "answer": 0}\n')
    proc = robusteval("run", "mcq", "--data", str(bad), "--estimate", "--cache-dir", str(tmp_path))
    assert_clean_error(proc, f"--data {bad}:2: not UTF-8 text", "save the file as UTF-8")


def test_config_file_that_is_not_utf8_or_a_folder_or_holds_a_list_for_a_path(tmp_path):
    latin = tmp_path / "run.yaml"
    latin.write_bytes(b"limit: 3\nteam: caf\xe9\n")
    assert_clean_error(robusteval("run", "mcq", "--config", str(latin), "--estimate"),
                       f"--config {latin}:2: not UTF-8 text", "Latin-1")
    assert_clean_error(robusteval("run", "mcq", "--config", str(tmp_path), "--estimate"),
                       f"--config {tmp_path}: is a folder")
    listed = tmp_path / "list.yaml"
    listed.write_text("data: [a.jsonl, b.jsonl]\n")
    assert_clean_error(robusteval("run", "mcq", "--config", str(listed), "--estimate"),
                       "setting 'data' must be one text value", "got a list")
    out_list = tmp_path / "out.yaml"
    out_list.write_text("out_dir:\n  - runs\n")
    assert_clean_error(robusteval("run", "mcq", "--config", str(out_list), "--estimate"), "setting 'out_dir'")


def test_suite_options_given_as_strings_in_yaml_are_coerced_or_named(tmp_path):
    from robusteval.configure import build_config, load_config_file
    from robusteval.errors import UserError

    good = tmp_path / "good.yaml"
    good.write_text('turns: "2"\npersonas: "4"\nseed: "7"\ntemperature: "0.5"\ncontexts: no_conv,chunk:0\n')
    config = build_config(load_config_file(str(good), "persona"), {"suite": "persona"})
    assert (config.options.turns, config.options.personas, config.seed, config.temperature) == (2, 4, 7, 0.5)
    assert config.options.contexts == ("no_conv", "chunk:0")
    bad = tmp_path / "bad.yaml"
    bad.write_text('turns: "two"\n')
    with pytest.raises(UserError, match="setting 'turns' must be an integer, got 'two'"):
        build_config(load_config_file(str(bad), "persona"), {"suite": "persona"})
    bad.write_text("turns: 2\n")
    assert_clean_error(robusteval("run", "persona", "--config", str(bad), "--turns", "x"), "--turns: invalid int")


@pytest.mark.parametrize(("suite", "flags", "named"), [
    ("persona", ("--data", "x.jsonl"), "--data"),
    ("persona", ("--limit", "3"), "--limit"),
    ("persona", ("--all",), "--all"),
    ("tree", ("--samples", "2", "--temperature", "0.7"), "--samples"),
    ("hallucination", ("--samples", "2", "--temperature", "0.7"), "--samples"),
])
def test_flags_a_suite_does_not_use_are_refused_naming_its_flags(tmp_path, suite, flags, named):
    proc = robusteval("run", suite, *flags, "--estimate", "--cache-dir", str(tmp_path), "--out", str(tmp_path))
    own = {"persona": "--personas", "tree": "--trees", "hallucination": "--detector"}[suite]
    assert_clean_error(proc, f"`robusteval run {suite}` does not use {named}", own)


def test_yaml_settings_a_suite_does_not_use_are_refused(tmp_path):
    cfg = tmp_path / "p.yaml"
    cfg.write_text("limit: 5\nfamilies: [order]\n")
    assert_clean_error(robusteval("run", "persona", "--config", str(cfg), "--estimate"),
                       "does not use --limit, --families")


def test_unused_flags_are_left_out_of_a_suites_help():
    assert "--limit" not in robusteval("run", "persona", "--help").stdout
    assert "--samples" not in robusteval("run", "tree", "--help").stdout
    assert "--limit" in robusteval("run", "mcq", "--help").stdout


# ------------------------------------------------------------------ Unicode line separators end to end

def test_text_with_unicode_line_separators_survives_run_report_compare_and_serve(tmp_path):
    import threading
    import urllib.request

    from robusteval.web.server import make_server

    rows = [
        {"id": "q1", "question": "Which one\u2028is first?\u2029Think.", "choices": ["a", "b", "c"], "answer": 0},
        {"id": "q2", "question": "Second\x85question\u2028here?", "choices": ["x", "y"], "answer": "B"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    with StubServer() as stub:
        first = stub_run(stub, tmp_path, run_id="a")
        second = stub_run(stub, tmp_path, "--seed", "1", run_id="b")
    for proc in (first, second):
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert "could not write the report" not in proc.stderr and "report.html" in proc.stdout
    run_a = tmp_path / "runs" / "a"
    assert "is first?" in (run_a / "report.html").read_text(encoding="utf-8")
    report = robusteval("report", str(run_a))
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    compared = robusteval("compare", str(run_a), str(tmp_path / "runs" / "b"), "--out", str(tmp_path / "cmp"))
    assert compared.returncode == 0 and "Traceback" not in compared.stderr, compared.stderr
    (run_a / "report.html").unlink()  # serve renders it in memory
    server = make_server(tmp_path / "runs", "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/a/report.html", timeout=60) as r:
            assert r.status == 200 and "is first?" in r.read().decode("utf-8")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as r:
            assert r.status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_the_run_names_only_the_files_it_wrote(tmp_path, data, monkeypatch, capsys):
    """A report that fails is said so (exit 2, tests/test_run.py), and nothing claims report.html."""
    import robusteval.report.render as render
    from robusteval.cli import main

    def broken(_run_dir):
        raise RuntimeError("the plot library is gone")

    monkeypatch.setattr(render, "write_report", broken)
    monkeypatch.delenv("ROBUSTEVAL_STRICT_REPORT")  # a user's run: one line, no traceback
    with StubServer() as stub:
        code = main(["run", "mcq", "--quiet", "--data", str(data), "--families", "format", "--limit", "2",
                     "--model", stub.model("m"), "--cache-dir", str(tmp_path / "cache"),
                     "--out", str(tmp_path / "runs"), "--run-id", "r"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "could not write the report (RuntimeError: the plot library is gone)" in err and "robusteval report" in err
    assert "report.html" not in out
    assert not (tmp_path / "runs" / "r" / "report.html").exists()


def test_a_report_that_fails_fails_the_test_run(tmp_path, data, monkeypatch):
    """In the tests (ROBUSTEVAL_STRICT_REPORT, set by conftest) a report error is raised, not only
    warned about, so no suite's report can break unnoticed."""
    import robusteval.report.render as render
    from robusteval.cli import main

    def broken(_run_dir):
        raise RuntimeError("the plot library is gone")

    monkeypatch.setattr(render, "write_report", broken)
    with StubServer() as stub, pytest.raises(RuntimeError, match="plot library"):
        main(["run", "mcq", "--quiet", "--data", str(data), "--families", "format", "--limit", "2",
              "--model", stub.model("m"), "--cache-dir", str(tmp_path / "cache"),
              "--out", str(tmp_path / "runs"), "--run-id", "r"])
