"""Run folders: unique default ids, no silent overwrite, never outside --out, checked before asking."""

from __future__ import annotations

import json
import threading

import pytest

from robusteval.cli import main
from robusteval.configure import build_config
from robusteval.errors import UserError
from robusteval.results import RESERVED_MARK, reserve_run_folder
from robusteval.testing.openai_stub import StubServer


def _run(cli_run, stub, mcq_file, *extra: str):
    return cli_run("run", "mcq", "--quiet", "--data", mcq_file, "--families", "format", "--limit", "2",
                   "--model", stub.model(), *extra)


def test_default_ids_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch):
    import robusteval.results.folder as results

    monkeypatch.setattr(results.time, "strftime", lambda *_: "20260101-120000")  # every run in one second
    folders: list = []
    barrier = threading.Barrier(16)

    def take():
        barrier.wait()
        folders.append(reserve_run_folder(str(tmp_path), "mcq", None).path)

    threads = [threading.Thread(target=take) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(folders) == len(set(folders)) == 16
    assert all(f.parent == tmp_path and f.name.startswith("mcq-20260101-120000-") for f in folders)


def test_two_default_runs_in_one_second_keep_their_own_results(tmp_path, mcq_file, monkeypatch, cli_run):
    import robusteval.results.folder as results

    monkeypatch.setattr(results.time, "strftime", lambda *_: "20260101-120000")
    with StubServer() as stub:
        assert _run(cli_run, stub, mcq_file).code == 0
        assert _run(cli_run, stub, mcq_file, "--seed", "1").code == 0
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    seeds = sorted(json.loads((r / "results.json").read_text())["config"]["seed"] for r in runs)
    assert seeds == [0, 1]
    assert not any((r / RESERVED_MARK).exists() for r in runs)


def test_explicit_run_id_is_refused_when_it_exists_and_overwrite_replaces_every_file(tmp_path, mcq_file, cli_run):
    with StubServer() as stub:
        first = _run(cli_run, stub, mcq_file, "--run-id", "x")
        assert first.code == 0
        run = first.folder
        assert run == tmp_path / "runs" / "x"
        (run / "plots" / "stale.png").write_bytes(b"old plot")
        (run / "answers.md").write_text("a file of an older run")
        before = (run / "results.json").read_text()
        hits = stub.state.total
        refused = _run(cli_run, stub, mcq_file, "--run-id", "x", "--no-cache")
        err = refused.err
        assert refused.code == 2
        assert "--run-id x" in err and "already exists" in err and "--overwrite" in err
        assert stub.state.total == hits  # refused before asking anything
        assert (run / "results.json").read_text() == before and (run / "answers.md").exists()
        assert _run(cli_run, stub, mcq_file, "--run-id", "x", "--overwrite", "--seed", "3").code == 0
    assert json.loads((run / "results.json").read_text())["config"]["seed"] == 3
    assert not (run / "plots" / "stale.png").exists() and not (run / "answers.md").exists()
    assert (run / "report.html").is_file() and (run / "samples.jsonl").is_file()


def test_overwrite_never_removes_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "code.py").write_text("keep me")
    with pytest.raises(UserError, match="not a run folder"):
        reserve_run_folder(str(tmp_path), "mcq", "src", overwrite=True)
    assert (tmp_path / "src" / "code.py").read_text() == "keep me"


@pytest.mark.parametrize("run_id", ["../x", "a/b", "/tmp/abs", "..", "a\\b", " "])
def test_run_ids_that_would_leave_out_are_refused(tmp_path, run_id):
    with pytest.raises(UserError, match="--run-id"):
        build_config({}, {"suite": "mcq", "run_id": run_id, "cache_dir": str(tmp_path)})


def test_bad_run_id_and_bad_out_are_refused_before_any_request(tmp_path, mcq_file, capsys, cli_run):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with StubServer() as stub:
        refused = _run(cli_run, stub, mcq_file, "--run-id", "../escaped")
        assert refused.code == 2 and refused.folder is None
        assert "--run-id '../escaped'" in refused.err
        code = main(["run", "mcq", "--quiet", "--data", str(mcq_file), "--limit", "2",
                     "--model", stub.model(), "--cache-dir", str(tmp_path / "cache"),
                     "--out", str(a_file)])
        assert code == 2 and f"--out {a_file}: is a file" in capsys.readouterr().err
        code = main(["run", "mcq", "--quiet", "--data", str(mcq_file), "--limit", "2",
                     "--model", stub.model(), "--cache-dir", str(tmp_path / "cache"),
                     "--out", str(a_file / "runs")])
        assert code == 2 and "cannot create this folder" in capsys.readouterr().err
        assert stub.state.total == 0
    assert not (tmp_path / "escaped").exists() and a_file.read_text() == "not a folder"


def test_an_interrupted_run_gives_its_folder_back(tmp_path, mcq_file, monkeypatch, cli_run):
    """Ctrl-C before the files are written leaves no empty folder, so the same --run-id resumes."""
    import robusteval.run as run_module

    async def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    with StubServer() as stub:
        monkeypatch.setattr(run_module, "_execute", interrupted)
        assert _run(cli_run, stub, mcq_file, "--run-id", "r").code == 130
        assert not (tmp_path / "runs" / "r").exists()
        monkeypatch.undo()
        assert _run(cli_run, stub, mcq_file, "--run-id", "r").code == 0
    assert (tmp_path / "runs" / "r" / "results.json").is_file()


def test_of_two_runs_given_one_run_id_at_once_exactly_one_gets_the_folder(tmp_path):
    outcomes: list = []
    barrier = threading.Barrier(8)

    def take():
        barrier.wait()
        try:
            outcomes.append(reserve_run_folder(str(tmp_path), "mcq", "same").path)
        except UserError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = [o for o in outcomes if not isinstance(o, str)]
    assert taken == [tmp_path / "same"]
    assert all("--run-id same" in o for o in outcomes if isinstance(o, str))
