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


def _serving(runs_dir):
    server = make_server(runs_dir, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _ask(port, head: bytes) -> bytes:
    """What the server answers to ``head`` (everything it sends until it closes the connection)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        client.sendall(head)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def _counting_renders(monkeypatch) -> list:
    """The leaderboard's reads of the runs folder, one per render of the page."""
    import robusteval.report.leaderboard as leaderboard_module

    renders: list = []
    real = leaderboard_module.find_runs

    def counting(path):
        renders.append(path)
        return real(path)

    monkeypatch.setattr(leaderboard_module, "find_runs", counting)
    return renders


def test_abandoned_connections_render_nothing_and_the_page_is_rendered_once_per_change(runs_dir, monkeypatch):
    """Clients that send half a request head and leave get no answer and cost no render (each used
    to rebuild the whole leaderboard); the page is rendered once per change of the runs."""
    import socket

    renders = _counting_renders(monkeypatch)
    server = _serving(runs_dir)
    port = server.server_address[1]
    try:
        half = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()  # no blank line: the head is not over
        for _ in range(20):  # the client leaves: it closes its side and waits for the server to close
            with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
                client.sendall(half)
                client.shutdown(socket.SHUT_WR)
                assert client.recv(65536) == b""  # nothing answered
        assert renders == []
        whole = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        pages = [_ask(port, whole) for _ in range(3)]
        assert all(p.startswith(b"HTTP/1.0 200") and b"order accuracy" in p for p in pages)
        assert len(renders) == 1
        (runs_dir / "b" / "results.json").write_text(json.dumps(_results("b", 0.65)))  # a new version
        page = _ask(port, whole)
        assert len(renders) == 2 and b">0.650" in page
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_that_stops_sending_is_dropped_after_the_read_timeout(runs_dir, monkeypatch):
    import socket

    renders = _counting_renders(monkeypatch)
    server = make_server(runs_dir, port=0)
    server.read_timeout = 0.2  # seconds (15 s by default)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(5)]
        for client in idle:  # half a head, then nothing: the server closes the connection, its thread ends
            client.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        for client in idle:
            assert client.recv(65536) == b""
            client.close()
        assert renders == []
    finally:
        server.shutdown()
        server.server_close()


def test_only_requests_for_its_own_host_are_answered(runs_dir):
    """A page of another site that reaches the server through DNS rebinding (its own name, our
    address) reads nothing: 421 for every path."""
    server = _serving(runs_dir)
    port = server.server_address[1]
    try:
        def status(path, host):
            answer = _ask(port, f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            return int(answer.split(b" ", 2)[1])

        for path in ("/", "/runs/a/results.json", "/runs/a/report.html"):
            assert status(path, "attacker.example") == 421, path
            assert status(path, f"attacker.example:{port}") == 421, path
            assert status(path, f"127.0.0.1:{port}") == 200, path
        assert status("/", f"localhost:{port}") == 200
        assert status("/", "localhost") == 200
        assert status("/", f"127.0.0.1:{port + 1 if port < 65535 else port - 1}") == 421  # another port
        assert status("/", "127.0.0.1:x") == 421
    finally:
        server.shutdown()
        server.server_close()
    everywhere = make_server(runs_dir, host="0.0.0.0", port=0)  # bound to all addresses: any of its IPs
    try:
        port = everywhere.server_address[1]
        assert everywhere.answers_host(f"192.0.2.7:{port}") and everywhere.answers_host(f"[::1]:{port}")
        assert not everywhere.answers_host(f"attacker.example:{port}")
    finally:
        everywhere.server_close()


def test_a_broken_run_is_a_line_on_the_page_never_a_500(runs_dir):
    tampered = _results("t", 0.5)
    tampered["metrics"]["m"]["order"]["accuracy"]["value"] = "high"
    (runs_dir / "t").mkdir()
    (runs_dir / "t" / "results.json").write_text(json.dumps(tampered))
    (runs_dir / "deep").mkdir()
    (runs_dir / "deep" / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    server = _serving(runs_dir)
    port = server.server_address[1]
    try:
        page = _ask(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert page.startswith(b"HTTP/1.0 200")
        assert b'href="runs/a/report.html"' in page and b'href="runs/b/report.html"' in page
        assert page.count(b'<li class="left-out-run">') == 3  # broken (not JSON), t (does not fit), deep
        assert b"t/results.json: not a readable run record" in page and b"nested 100000 deep" in page
        report = _ask(port, f"GET /runs/t/report.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert report.startswith(b"HTTP/1.0 404") and b"not a readable run record" in report
    finally:
        server.shutdown()
        server.server_close()


def test_a_large_file_is_sent_in_chunks(runs_dir, monkeypatch):
    """The handler reads a run's file piece by piece (it read each file whole into memory: three
    concurrent GETs of a 99 MB samples.jsonl took 266 MB more)."""
    import io

    import robusteval.web.server as server_module

    samples = runs_dir / "a" / "samples.jsonl"
    samples.write_bytes(b"".join(b'{"n": %d, "pad": "%s"}\n' % (n, b"x" * 200) for n in range(5000)))
    reads: list[int] = []

    class Counting(io.FileIO):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            reads.append(len(data))
            return data

    monkeypatch.setattr(server_module, "open", lambda path, mode="rb": Counting(path, "r"), raising=False)
    server = _serving(runs_dir)
    port = server.server_address[1]
    try:
        answer = _ask(port, f"GET /runs/a/samples.jsonl HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        head, body = answer.split(b"\r\n\r\n", 1)
        assert body == samples.read_bytes() and f"Content-Length: {len(body)}".encode() in head
        assert sum(reads) == len(body) and max(reads) <= server_module.CHUNK_BYTES
        assert len(reads) >= len(body) // server_module.CHUNK_BYTES
    finally:
        server.shutdown()
        server.server_close()
