import json
import threading
import urllib.error
import urllib.request

import pytest

from robusteval.report.leaderboard import boards
from robusteval.web.server import make_server, resolve_inside


def test_resolve_inside_refuses_escapes(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text("{}")
    (tmp_path / "secret.json").write_text("{}")
    assert resolve_inside(tmp_path / "run", "results.json") == (tmp_path / "run" / "results.json").resolve()
    for bad in ("../secret.json", "x/../../secret.json", "./results.json", "results.py", "a\\..\\b.json"):
        assert resolve_inside(tmp_path / "run", bad) is None, bad
    (tmp_path / "run" / "link.json").symlink_to(tmp_path / "secret.json")
    assert resolve_inside(tmp_path / "run", "link.json") is None  # a symlink out of the root


def _results(run_id, accuracy):
    est = {"value": accuracy, "ci_low": accuracy - 0.1, "ci_high": accuracy + 0.1, "n": 10}
    return {"run_id": run_id, "suite": "mcq", "started": "2026-11-23T10:00:00", "models": {"m": {}},
            "metrics": {"m": {"order": {"accuracy": est, "consistency_rate": est}}}}


@pytest.fixture
def runs_dir(tmp_path):
    for run_id, acc in (("a", 0.3), ("b", 0.7)):
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "results.json").write_text(json.dumps(_results(run_id, acc)))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "results.json").write_text("{")
    (tmp_path.parent / "outside.json").write_text('{"secret": 1}')
    return tmp_path


def test_boards_group_runs_by_suite(runs_dir):
    (board,) = boards(runs_dir)
    assert board.suite == "mcq" and board.metrics == ("order accuracy", "order consistency rate")
    assert [(r.run_id, r.values["order accuracy"][0]) for r in board.rows] == [("a", 0.3), ("b", 0.7)]


def test_server_is_read_only_and_stays_inside(runs_dir):
    server = make_server(runs_dir, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        def get(path, method="GET"):
            try:
                with urllib.request.urlopen(urllib.request.Request(base + path, method=method)) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, b""

        status, page = get("/")
        assert status == 200 and b"order accuracy" in page and b'href="runs/a/report.html"' in page
        assert get("/runs/a/results.json")[0] == 200
        status, report = get("/runs/a/report.html")  # rendered in memory: no report file is written
        assert status == 200 and b"Headline metrics" in report and not (runs_dir / "a" / "report.html").exists()
        for bad in ("/runs/../outside.json", "/runs/a/../../outside.json", "/runs/%2e%2e/outside.json",
                    "/runs/a/missing.json", "/etc/passwd", "/runs/a/results.py"):
            assert get(bad)[0] == 404, bad
        assert get("/", method="POST")[0] == 405
        assert get("/runs/a/results.json", method="DELETE")[0] == 405
    finally:
        server.shutdown()
        server.server_close()


def test_the_listen_backlog_holds_a_burst_of_connections(runs_dir):
    """64 clients connect before the server accepts any: all are queued (the standard library's
    backlog of 5 queued 6 and left the others to SYN retries of 1, 3, 7... s)."""
    import select
    import socket
    import time

    server = make_server(runs_dir, port=0)  # listening, not yet accepting
    clients = []
    try:
        for _ in range(64):
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(server.server_address[:2])
            clients.append(client)
        pending, connected = set(clients), 0
        deadline = time.monotonic() + 30  # a safety net only: a queued connection completes at once
        while pending and time.monotonic() < deadline:
            _, writable, _ = select.select([], list(pending), [], 1.0)
            for client in writable:
                connected += client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                pending.discard(client)
        assert connected == 64
    finally:
        for client in clients:
            client.close()
        server.server_close()


def test_a_client_that_disconnects_leaves_no_traceback(runs_dir, capsys):
    server = make_server(runs_dir, port=0)
    try:
        for gone in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "Connection reset by peer")):
            try:
                raise gone
            except OSError:
                server.handle_error(None, ("127.0.0.1", 5555))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real bug")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 5555))
        err = capsys.readouterr().err
        assert "ValueError: a real bug" in err and "Traceback" not in err and err.count("\n") == 1
    finally:
        server.server_close()


def test_serve_stops_on_ctrl_c_without_run_messages_or_tracebacks(runs_dir):
    import os
    import signal
    import socket
    import struct
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli", "serve", str(runs_dir), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        first = proc.stdout.readline()  # waits for the server to listen
        assert first.startswith("serving "), first + proc.stderr.read()
        port = int(first.split("http://127.0.0.1:")[1].split("/")[0])
        for _ in range(20):  # clients that ask and vanish at once (RST), mid-answer
            client = socket.create_connection(("127.0.0.1", port), timeout=30)
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as r:  # still serving
            assert r.status == 200
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped serving" in out
    assert "Traceback" not in err and "every answer" not in err and "resume" not in err, err
