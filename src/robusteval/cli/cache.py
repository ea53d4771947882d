"""``robusteval cache stats|clear|check``: inspect, check or clear the response store."""

from __future__ import annotations

import argparse
from pathlib import Path

from robusteval.cli.common import EXIT_CHECK_FAILED
from robusteval.config import default_cache_dir

STORE_FILE = "responses.sqlite"


def add_parser(sub) -> None:
    cache = sub.add_parser("cache", help="inspect, check or clear the response store")
    cache.add_argument("action", choices=("stats", "clear", "check"))
    cache.add_argument("--cache-dir", dest="cache_dir", default=None)
    cache.add_argument("--model-prefix", help="with clear: only responses whose model fingerprint starts with this")


def run_command(args: argparse.Namespace) -> int:
    from robusteval.engine.store import Store, clear_store
    from robusteval.engine.store_check import check_store, describe

    path = Path(args.cache_dir or default_cache_dir()) / STORE_FILE
    if not path.exists():
        print(f"no store at {path}")
        return 0
    if args.action == "check":
        report = check_store(path)
        print("\n".join(describe(report)))
        return 0 if report.ok else EXIT_CHECK_FAILED
    if args.action == "clear":
        print(clear_store(path, args.model_prefix))
        return 0
    store = Store(path, readonly=True)
    try:
        s = store.stats()
        print(f"store: {s.path}\nresponses: {s.responses}\nfailures recorded: {s.failures}\n"
              f"size: {s.size_bytes / 1e6:.1f} MB")
        for fingerprint, n in s.models.items():
            print(f"  {n:8d}  {fingerprint}")
    finally:
        store.close()
    return 0
