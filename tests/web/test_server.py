import json
import threading
import urllib.error
import urllib.request

import pytest

from robusteval.web.leaderboard import boards
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
