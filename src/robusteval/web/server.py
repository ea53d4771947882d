"""``robusteval serve RUNS_DIR``: a read-only local web page of leaderboards and run reports.

Binds 127.0.0.1 by default. Serves only: ``/`` (leaderboards), ``/runs/<run>/report.html`` (the
written report, or one rendered in memory if the run has none: serving never writes) and the files
of a run folder with known types. Paths are resolved and must stay inside RUNS_DIR (no ``..``, no
symlink out); anything else is 404. Only GET and HEAD.
"""

from __future__ import annotations

import mimetypes
import sys
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from robusteval.errors import UserError

SERVED_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png", ".json": "application/json",
                ".jsonl": "application/jsonl; charset=utf-8", ".md": "text/markdown; charset=utf-8"}


def resolve_inside(root: Path, relative: str) -> Path | None:
    """The file ``relative`` names under ``root``, or None if it would leave ``root`` or is not served."""
    root = root.resolve()
    parts = [p for p in relative.split("/") if p]
    if any(p in ("..", ".") or "\\" in p or "\x00" in p for p in parts):
        return None
    candidate = root.joinpath(*parts).resolve()
    try:
        candidate.relative_to(root)
    except ValueError:
        return None
    if candidate.suffix.lower() not in SERVED_TYPES:
        return None
    return candidate


class Handler(BaseHTTPRequestHandler):
    server_version = "robusteval"

    def __init__(self, *args, runs_dir: Path, **kwargs):
        self.runs_dir = runs_dir
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):  # quiet: one line per request is noise in a terminal
        pass

    def do_HEAD(self):
        self._respond(head=True)

    def do_GET(self):
        self._respond(head=False)

    def _not_allowed(self):
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"read-only\n", "text/plain; charset=utf-8")

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed

    def _respond(self, head: bool):
        path = unquote(urlsplit(self.path).path)
        body: bytes | None
        kind: str | None
        try:
            if path in ("/", "/index.html"):
                body, kind = self._leaderboard(), SERVED_TYPES[".html"]
            elif path.startswith("/runs/"):
                body, kind = self._run_file(path[len("/runs/"):])
            else:
                body, kind = None, None
        except UserError:
            body, kind = None, None
        except Exception as exc:  # one broken run must not take the page down
            message = f"could not render this page: {type(exc).__name__}\n".encode()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, message, "text/plain; charset=utf-8", head)
            return
        if body is None:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)
        else:
            self._send(HTTPStatus.OK, body, kind, head)

    def _leaderboard(self) -> bytes:
        from robusteval.report.leaderboard import boards
        from robusteval.report.render import environment

        page = environment().get_template("leaderboard.html.j2").render(
            boards=boards(self.runs_dir), runs_dir=str(self.runs_dir))
        return page.encode("utf-8")

    def _run_file(self, relative: str) -> tuple[bytes | None, str | None]:
        target = resolve_inside(self.runs_dir, relative)
        if target is None:
            return None, None
        if target.is_file():
            return target.read_bytes(), SERVED_TYPES[target.suffix.lower()]
        if target.name == "report.html" and (target.parent / "results.json").is_file():
            from robusteval.report.render import load_run, render_html

            page, _ = render_html(load_run(target.parent))
            return page.encode("utf-8"), SERVED_TYPES[".html"]
        return None, None

    def _send(self, status, body: bytes, kind: str | None, head: bool = False):
        self.send_response(status)
        self.send_header("Content-Type", kind or mimetypes.types_map.get(".txt", "text/plain"))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)


# A client that goes away mid-answer (a closed tab, a cancelled fetch) is normal for a web page.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class Server(ThreadingHTTPServer):
    """The threading HTTP server with a listen backlog for a page that fetches many files at once
    (the standard library's 5 made 200 simultaneous requests wait up to 117 s for SYN retries),
    daemon threads (Ctrl-C never waits on a slow client) and no traceback when a client disconnects."""

    request_queue_size = 1024  # capped by the kernel's somaxconn
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, CLIENT_GONE):
            return
        print(f"serve: error answering {client_address[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)


def make_server(runs_dir: str | Path, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    root = Path(runs_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such folder of runs")
    try:
        return Server((host, port), partial(Handler, runs_dir=root.resolve()))
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}; try --port 0 for any free port") from None
