import asyncio

from robusteval.configure import build_config
from robusteval.engine import Engine, Store
from robusteval.run import ModelStarter
from robusteval.testing.openai_stub import StubConfig, StubServer


def test_model_starter_shares_equal_specs_and_separates_different_ones(tmp_path):
    config = build_config({}, {"suite": "mcq", "cache_dir": str(tmp_path)})

    async def go(url):
        engine = Engine(Store(tmp_path / "s.sqlite"))
        start = ModelStarter(engine, config)
        try:
            a = await start(f"openai:m?base_url={url}")
            same = await start(f"openai:m?base_url={url}")
            other = await start(f"openai:m?base_url={url}&max_concurrency=2")  # same short name, other options
            return a, same, other, dict(start.started)
        finally:
            await engine.close()
            engine.store.close()

    with StubServer(StubConfig()) as stub:
        a, same, other, started = asyncio.run(go(stub.base_url))
    assert a == same == "openai:m" and other == "openai:m#2"
    assert len(started) == 2


def test_helper_models_inherit_the_options_of_the_model_under_test(tmp_path):
    """`--model 'llamacpp?n_threads=1'` with the default rewriter/judge `llamacpp`: one model, started
    once with one thread, not a second copy with every core as threads."""
    config = build_config({}, {"suite": "mcq", "cache_dir": str(tmp_path), "models": ["llamacpp?n_threads=1"]})

    async def go():
        engine = Engine(Store(tmp_path / "s.sqlite"))
        start = ModelStarter(engine, config)
        try:
            tested = await start("llamacpp?n_threads=1")
            helper = await start("llamacpp")
            own = await start("llamacpp?n_threads=2")
            return tested, helper, own, dict(start.started)
        finally:
            await engine.close()
            engine.store.close()

    tested, helper, own, started = asyncio.run(go())
    assert helper == tested  # the same instance and cache
    assert own != tested  # a helper's own option wins: its own instance
    assert started == {tested: "llamacpp?n_threads=1", own: "llamacpp?n_threads=2"}


def test_a_report_that_cannot_be_written_fails_the_run_with_one_line(tmp_path, mcq_file, monkeypatch, cli_run):
    """B16: exit 0 means every file was written. report.html blocked (a folder in its place, as a full
    disk or a read-only mount would block it): exit 2, one line that says the results are written and
    how to write the report; the run's record is whole and the folder is not left reserved."""
    import shutil
    from pathlib import Path

    import robusteval.report.render as render
    from robusteval.results import RESERVED_MARK

    real_write_report = render.write_report

    def blocked(run_dir):
        (Path(run_dir) / "report.html").mkdir()
        (Path(run_dir) / "report.html" / "keep").write_text("")  # a non-empty folder: os.replace fails
        return real_write_report(run_dir)

    monkeypatch.delenv("ROBUSTEVAL_STRICT_REPORT")  # as for users: no traceback
    monkeypatch.setattr(render, "write_report", blocked)
    with StubServer() as stub:
        done = cli_run("run", "mcq", "--quiet", "--data", mcq_file, "--families", "order", "--limit", "2",
                       "--model", stub.model(), "--run-id", "r")
    assert done.code == 2, done.err
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: could not write the report")
    assert "report.html" in lines[0] and f"robusteval report {done.folder}" in lines[0]
    assert done.results()["run_id"] == "r" and len(done.samples()) == 7  # 2 questions: 4 orders and 3
    assert not (done.folder / RESERVED_MARK).exists()
    monkeypatch.undo()
    shutil.rmtree(done.folder / "report.html")  # the cause fixed: the command the line gives writes it
    assert cli_run("report", done.folder).code == 0 and (done.folder / "report.html").is_file()
