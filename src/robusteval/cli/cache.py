"""``robusteval cache stats|clear|check|merge``: inspect, check, clear or combine response stores."""

from __future__ import annotations

import argparse
from pathlib import Path

from robusteval.cli.common import EXIT_CHECK_FAILED
from robusteval.config import default_cache_dir
from robusteval.errors import UserError


def add_parser(sub) -> None:
    cache = sub.add_parser("cache", help="inspect, check, clear or merge response stores",
                           description="The response store (every answer, keyed by model, messages and parameters). "
                                       "stats: answers per model and the store's size; clear: delete answers (all, "
                                       "with the ledgers of exported requests and pending batches beside the store; "
                                       "or --model-prefix's); check: verify every stored answer's checksum; merge: "
                                       "copy the answers of other stores (SRC...) into --into (docs/scale.md).")
    cache.add_argument("action", choices=("stats", "clear", "check", "merge"),
                       help="stats | clear | check | merge (see above)")
    cache.add_argument("sources", nargs="*", metavar="SRC", help="with merge: stores to merge (a *.sqlite file or "
                                                                   "a --cache-dir folder)")
    cache.add_argument("--into", help="with merge: the store (file or folder) that receives their answers")
    cache.add_argument("--cache-dir", dest="cache_dir", default=None,
                       help="the store's folder (default: ~/.cache/robusteval, or $ROBUSTEVAL_CACHE_DIR)")
    cache.add_argument("--model-prefix", help="with clear: only responses whose model fingerprint starts with this")


def run_command(args: argparse.Namespace) -> int:
    from robusteval.engine.store import STORE_FILE, Store, clear_store
    from robusteval.engine.store_check import check_store, describe

    if args.action == "merge" or args.sources or args.into:
        return _merge(args)
    if args.cache_dir is not None and not args.cache_dir.strip():
        raise UserError("cache: --cache-dir is empty; name the folder of the response store")
    folder = Path(args.cache_dir or default_cache_dir()).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UserError(f"cache {args.action}: --cache-dir {folder} is a file; give the folder that holds "
                        f"{STORE_FILE} (`cache merge` takes a store file itself)")
    path = folder / STORE_FILE
    if args.action == "clear" and args.model_prefix is None:  # the ledgers beside it go too (even alone)
        if path.exists():
            print(clear_store(path))
        if ledgers := _remove_ledgers(path):
            print(f"removed the ledgers {', '.join(ledgers)} (exported requests and pending batches: forgotten)")
        elif not path.exists():
            print(f"no store at {path}")
        return 0
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


def _remove_ledgers(store_path: Path) -> list[str]:
    """Delete the ledgers beside the store (`ledger.LEDGERS`); the names of those that were there."""
    from robusteval.engine.store import remove_store_files
    from robusteval.ledger import LEDGERS, beside

    return [str(beside(store_path, kind)) for kind in LEDGERS if remove_store_files(beside(store_path, kind))]


def _merge(args: argparse.Namespace) -> int:
    """`cache merge SRC... --into DST`; exits 1 where answers conflicted or were damaged (DST keeps its own)."""
    from robusteval.engine.store_merge import describe, merge_stores, store_path

    if args.action != "merge":
        raise UserError(f"cache {args.action} takes no store paths or --into; those are for `cache merge`")
    if not args.into:
        raise UserError("cache merge needs --into DST: the store (file or folder) that receives the answers")
    into = store_path(args.into)
    merged = merge_stores([store_path(s) for s in args.sources], into)
    print("\n".join(describe(merged, into)))
    print(f"merged {len(merged)} stores into {into}")
    return EXIT_CHECK_FAILED if any(m.conflicts or m.damaged for m in merged) else 0
