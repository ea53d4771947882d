"""``robusteval serve RUNS_DIR``: a read-only local web page of leaderboards and run reports.

Binds 127.0.0.1 by default. Serves only: ``/`` (leaderboards), ``/runs/<run>/report.html`` (the
written report, or one rendered in memory if the run has none: serving never writes) and the files
of a run folder with known types. Paths are resolved and must stay inside RUNS_DIR (no ``..``, no
symlink out); anything else is 404. Only GET and HEAD.

What a request may cost is bounded: a page is rendered once per version of the files it is read
from (`Pages`; the leaderboard's key is `report.leaderboard.runs_state`), files are sent in chunks
of `CHUNK_BYTES`, a request head that ends without its blank line (a client that left) is not
answered, and a connection silent for `READ_TIMEOUT_S` is closed. A request whose ``Host`` is not
this server's own address is refused (421), so that another site's page cannot read the runs
through DNS rebinding. A broken run is a line on the leaderboard, never the page's failure.
"""

from __future__ import annotations

import io
import ipaddress
import mimetypes
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from robusteval.errors import UserError

SERVED_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png", ".json": "application/json",
                ".jsonl": "application/jsonl; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
CHUNK_BYTES = 64 * 1024  # a served file is read and sent in pieces of this size
READ_TIMEOUT_S = 15.0  # a connection that sends nothing for this long is closed


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


class _LastLine:
    """A request's input stream that remembers the last line read from it, so that the handler can
    tell a request head ended by its blank line from one cut off by the client leaving."""

    def __init__(self, stream: io.BufferedIOBase):
        self._stream = stream
        self.last: bytes | None = None

    def readline(self, limit: int = -1) -> bytes:
        self.last = self._stream.readline(limit)
        return self.last

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Handler(BaseHTTPRequestHandler):
    server_version = "robusteval"
    server: Server

    def __init__(self, *args, runs_dir: Path, **kwargs):
        self.runs_dir = runs_dir
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        self.request.settimeout(self.server.read_timeout)  # a client that stops sending is dropped, its thread freed
        super().setup()
        self.rfile = cast(io.BufferedIOBase, _LastLine(self.rfile))

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if cast(_LastLine, self.rfile).last == b"":  # the head ended with the stream, not with a blank line:
            self.close_connection = True  # the client left mid-request; nothing to answer, nothing to render
            return False
        return True

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
        if not self.server.answers_host(self.headers.get("Host")):
            # another site's page reaching this server through DNS rebinding: it reads nothing
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"unknown host: this server answers only its own address\n",
                       "text/plain; charset=utf-8", head)
            return
        path = unquote(urlsplit(self.path).path)
        body: bytes | None = None
        kind: str | None = None
        target = resolve_inside(self.runs_dir, path[len("/runs/"):]) if path.startswith("/runs/") else None
        if target is not None and target.is_file():
            self._send_file(target, head)  # outside the catch-all below: its answer may be under way
            return
        try:
            if path in ("/", "/index.html"):
                body, kind = self._leaderboard(), SERVED_TYPES[".html"]
            elif target is not None and target.name == "report.html":
                body, kind = self._report(target.parent), SERVED_TYPES[".html"]
        except UserError as exc:  # a run whose files are broken: its one-line reason, not the page's failure
            self._send(HTTPStatus.NOT_FOUND, f"{exc}\n".encode(), "text/plain; charset=utf-8", head)
            return
        except Exception as exc:
            message = f"could not render this page: {type(exc).__name__}\n".encode()
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, message, "text/plain; charset=utf-8", head)
            return
        if body is None:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)
        else:
            self._send(HTTPStatus.OK, body, kind, head)

    def _leaderboard(self) -> bytes:
        from robusteval.report.leaderboard import runs_state
        from robusteval.report.render import render_leaderboard

        return self.server.pages.get("/", runs_state(self.runs_dir),
                                     lambda: render_leaderboard(self.runs_dir).encode("utf-8"))

    def _report(self, run_dir: Path) -> bytes | None:
        """The report of a run that has none written, rendered in memory (serving never writes),
        once per version of its files."""
        from robusteval.report.leaderboard import file_version
        from robusteval.report.render import load_run, render_html

        state = tuple(file_version(run_dir / name) for name in ("results.json", "samples.jsonl"))
        if state[0] is None:
            return None
        return self.server.pages.get(str(run_dir), state, lambda: render_html(load_run(run_dir))[0].encode("utf-8"))

    def _send_file(self, target: Path, head: bool) -> None:
        """``target`` in chunks of `CHUNK_BYTES`: memory does not grow with the file's size."""
        try:
            source = open(target, "rb")  # noqa: SIM115 (closed by the with below; unreadable: a 404)
        except OSError:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)
            return
        with source:
            left = os.fstat(source.fileno()).st_size
            self._send_head(HTTPStatus.OK, SERVED_TYPES[target.suffix.lower()], left)
            while not head and left > 0:
                chunk = source.read(min(CHUNK_BYTES, left))
                if not chunk:  # the file shrank under us: the answer is short, the client sees it
                    break
                self.wfile.write(chunk)
                left -= len(chunk)

    def _send(self, status, body: bytes, kind: str | None, head: bool = False):
        self._send_head(status, kind, len(body))
        if not head:
            self.wfile.write(body)

    def _send_head(self, status, kind: str | None, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind or mimetypes.types_map.get(".txt", "text/plain"))
        self.send_header("Content-Length", str(length))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()


class Pages:
    """Rendered pages, each rendered once per state of the files it is read from: a request for a
    page whose files have not changed is answered from memory (a render reads every run's files).
    Requests for one page that arrive while it renders wait for that render; ``renders`` counts them."""

    def __init__(self, keep: int = 16):
        self.keep = keep
        self.renders = 0
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._pages: OrderedDict[str, tuple[Hashable, bytes]] = OrderedDict()

    def get(self, key: str, state: Hashable, render: Callable[[], bytes]) -> bytes:
        with self._lock:
            page_lock = self._locks.setdefault(key, threading.Lock())
        with page_lock:
            with self._lock:
                cached = self._pages.get(key)
            if cached is not None and cached[0] == state:
                return cached[1]
            body = render()
            with self._lock:
                self.renders += 1
                self._pages[key] = (state, body)
                self._pages.move_to_end(key)
                while len(self._pages) > self.keep:
                    self._pages.popitem(last=False)
            return body


# A client that goes away mid-answer (a closed tab, a cancelled fetch) is normal for a web page.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class Server(ThreadingHTTPServer):
    """The threading HTTP server with a listen backlog for a page that fetches many files at once
    (the standard library's 5 made 200 simultaneous requests wait up to 117 s for SYN retries),
    daemon threads (Ctrl-C never waits on a slow client) and no traceback when a client disconnects."""

    request_queue_size = 1024  # capped by the kernel's somaxconn
    daemon_threads = True
    read_timeout = READ_TIMEOUT_S

    def __init__(self, address: tuple[str, int], handler):
        super().__init__(address, handler)
        self.pages = Pages()
        self.bound_host = address[0]

    def answers_host(self, host: str | None) -> bool:
        """Whether a request's ``Host`` names this server: 127.0.0.1, localhost, ::1 or the address
        it was bound to (any IP address when bound to all of them), at its port. No name of another
        site (DNS rebinding); a request without ``Host`` (no browser sends one) is answered."""
        if host is None:
            return True
        try:
            parts = urlsplit(f"//{host.strip()}")
            name, port = parts.hostname, parts.port
        except ValueError:
            return False
        if not name or (port is not None and port != self.server_address[1]):
            return False
        if name in {"localhost", "127.0.0.1", "::1", self.bound_host.lower(), str(self.server_address[0]).lower()}:
            return True
        if self.bound_host in ("", "0.0.0.0", "::"):  # all addresses: this machine's own, never a name
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, CLIENT_GONE):
            return
        print(f"serve: error answering {client_address[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)


def make_server(runs_dir: str | Path, host: str = "127.0.0.1", port: int = 8000) -> Server:
    root = Path(runs_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such folder of runs")
    try:
        return Server((host, port), partial(Handler, runs_dir=root.resolve()))
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}; try --port 0 for any free port") from None
