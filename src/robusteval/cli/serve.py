"""``robusteval serve [RUNS_DIR]``: the read-only leaderboard page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import cast

from robusteval.ranges import Range, check

PORTS = Range(0, 65535)  # 0: any free port


def add_parser(sub) -> None:
    serve = sub.add_parser("serve", help="a local, read-only web page: leaderboards per suite, linked to reports")
    serve.add_argument("runs_dir", nargs="?", default="runs", metavar="RUNS_DIR", help="folder of runs (default: runs)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 = any free port)")


def run_command(args: argparse.Namespace) -> int:
    from robusteval.web.server import make_server

    check("--port", args.port, PORTS)
    server = make_server(args.runs_dir, args.host, args.port)
    host, port = cast(tuple[str, int], server.server_address[:2])  # an AF_INET address: (host, port)
    print(f"serving {Path(args.runs_dir).resolve()} at http://{host}:{port}/ (read-only; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # the way to stop a server: not an error, and nothing to resume
        print("stopped serving", flush=True)
    finally:
        server.server_close()
    return 0
