"""A run's folder after a crash: a killed run (SIGKILL, a node lost, an OOM kill) is resumed by the same
command, ``--run-id`` and ``--overwrite`` included; a live run is never taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.errors import UserError
from robusteval.results import RESERVED_MARK, folder as folder_module, reserve_run_folder
from robusteval.testing.kill_at import kill_at, store_rows
from robusteval.testing.openai_stub import StubConfig, StubServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"


def run_args(root: Path, model: str, *extra: str, run_id: str = "shard-1") -> list[str]:
    """``robusteval run`` of 5 questions in 4 option orders, one request at a time."""
    return ["run", "mcq", "--quiet", "--data", str(FIXTURE), "--families", "order", "--concurrency", "1",
            "--model", model, "--cache-dir", str(root / "cache"), "--out", str(root / "runs"), "--run-id", run_id,
            *extra]


def process(args: list[str]) -> list[str]:
    """The command as a process of its own, to be killed."""
    return [sys.executable, "-m", "robusteval.cli", *args]


def outcome(run: Path) -> tuple[dict, list[tuple]]:
    """What a finished run says: its metrics, and each sample's question, variant, reply and verdict."""
    results = json.loads((run / "results.json").read_text())
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return results["metrics"], sorted((s["item_id"], str(s["variant"]), s["response"], s["correct"]) for s in samples)


def answers(stub: StubServer) -> tuple[int, int]:
    """(distinct requests the stub answered, answers it gave): equal when none was asked twice."""
    per_request = stub.counters()["requests"]
    return len(per_request), sum(per_request.values())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[tuple[dict, list[tuple]], int]:
    """The run no one killed, and how many distinct requests it asked."""
    root = tmp_path_factory.mktemp("reference")
    with StubServer() as stub:
        assert main(run_args(root, stub.model())) == 0
        distinct, answered = answers(stub)
    assert distinct == answered
    return outcome(root / "runs" / "shard-1"), distinct


def test_a_killed_run_is_resumed_by_the_same_command_run_id_included(tmp_path, reference):
    """B10: SIGKILL mid-run leaves `.reserved` naming a process that is gone; the same command takes
    the folder back, asks only what the store lacks, and writes the run an unkilled one writes."""
    run = tmp_path / "runs" / "shard-1"
    with StubServer(StubConfig(latency_s=0.02)) as stub:
        args = run_args(tmp_path, stub.model())
        killed = kill_at(process(args), rows=(tmp_path / "cache" / "responses.sqlite", 5))
        assert killed.fired and killed.returncode == -signal.SIGKILL, killed.output
        assert (run / RESERVED_MARK).exists() and not (run / "results.json").exists()
        stored = store_rows(tmp_path / "cache" / "responses.sqlite")
        assert 5 <= stored < reference[1]
        holder = json.loads((run / RESERVED_MARK).read_text())
        assert holder["host"] == socket.gethostname() and holder["pid"] > 0

        assert main(args) == 0  # the same command
        # what the killed run stored was not asked again; only the one request in flight when it was
        # killed (answered by the server, never stored) may be asked twice
        distinct, answered = answers(stub)
        assert distinct == reference[1] and answered - distinct <= 1
    assert outcome(run) == reference[0]
    assert not (run / RESERVED_MARK).exists()


@pytest.mark.parametrize("again", [("--overwrite",), ()], ids=["overwrite", "plain"])
def test_an_overwrite_killed_while_writing_its_files_is_recovered(tmp_path, reference, again):
    """N9: an ``--overwrite`` run killed when its samples.jsonl appears (the old run's files already
    removed) leaves a folder that the next ``--overwrite``, or the plain command, finishes."""
    run = tmp_path / "runs" / "shard-1"
    with StubServer() as stub:
        args = run_args(tmp_path, stub.model())
        assert main(args) == 0
        (run / "plots" / "stale.png").write_bytes(b"a file of the old run")
        (run / "samples.jsonl").unlink()  # so that the trigger is the new run's samples.jsonl
        killed = kill_at(process([*args, "--overwrite", "--seed", "1"]), file=run / "samples.jsonl")
        assert killed.fired, killed.output
        assert (run / RESERVED_MARK).exists()  # still marked unfinished, whatever was written
        assert main([*args, *again]) == 0
    assert outcome(run) == reference[0]
    assert not (run / RESERVED_MARK).exists() and not (run / "plots" / "stale.png").exists()


def test_a_folder_left_by_an_older_version_is_overwritten(tmp_path):
    """N9 as the reproducer gives it: a folder holding only samples.jsonl (what the previous version
    left) is a run's, so ``--overwrite`` takes it; without ``--overwrite`` it is refused."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "samples.jsonl").write_text("")
    with pytest.raises(UserError, match="already exists"):
        reserve_run_folder(str(tmp_path), "mcq", "x")
    folder = reserve_run_folder(str(tmp_path), "mcq", "x", overwrite=True)
    assert folder.replace and (tmp_path / "x" / RESERVED_MARK).exists()
    folder.release()
    assert not (tmp_path / "x" / RESERVED_MARK).exists()  # nothing written: the folder as it was


def test_a_live_run_is_never_taken_over_even_with_overwrite(tmp_path):
    live = reserve_run_folder(str(tmp_path), "mcq", "r")
    for overwrite in (False, True):
        with pytest.raises(UserError, match=f"still going .*PID {os.getpid()}"):
            reserve_run_folder(str(tmp_path), "mcq", "r", overwrite=overwrite)
    live.release()
    assert not (tmp_path / "r").exists()


def test_a_reservation_whose_holder_is_gone_is_resumed_and_stays_unfinished_until_a_run_finishes(tmp_path):
    first = reserve_run_folder(str(tmp_path), "mcq", "r")
    (tmp_path / "r" / ".samples.jsonl.partial").write_text("{}\n")
    assert first.mark is not None
    os.close(first.mark)  # the kernel drops the lock as it does for a killed process
    second = reserve_run_folder(str(tmp_path), "mcq", "r")
    assert second.resumed and second.replace
    second.release()  # Ctrl-C of the resumed run: still the killed run's unfinished folder
    assert (tmp_path / "r" / RESERVED_MARK).exists()
    third = reserve_run_folder(str(tmp_path), "mcq", "r")
    third.prepare_for_files()
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [".reserved", ".samples.jsonl.partial"]
    third.finish()
    assert not (tmp_path / "r" / RESERVED_MARK).exists()


@pytest.mark.parametrize(("holder", "alive"), [
    ({"pid": os.getpid(), "host": socket.gethostname()}, True),
    ({"pid": os.getpid(), "host": socket.gethostname(), "started": "reused"}, False),  # the PID of another process
    ({"pid": 2 ** 22 + 1, "host": socket.gethostname()}, False),  # no such process
    ({"pid": 1, "host": "another-node"}, True),  # cannot be checked from here: taken to be running
    (None, False),  # empty: killed as it took the folder, or written by an older version
])
def test_without_file_locks_the_holder_pid_and_start_time_tell(tmp_path, monkeypatch, holder, alive):
    monkeypatch.setattr(folder_module, "_lock", lambda fd: None)  # a file system without locks
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / RESERVED_MARK).write_text("" if holder is None else json.dumps(holder))
    if alive:
        with pytest.raises(UserError, match="still going"):
            reserve_run_folder(str(tmp_path), "mcq", "r")
    else:
        assert reserve_run_folder(str(tmp_path), "mcq", "r").resumed
