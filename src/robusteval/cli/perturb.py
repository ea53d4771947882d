"""``robusteval perturb``: a dataset's perturbed copies, printed, no model asked.

So a user sees what the model will get before a run: the same copies, seeded the same way, as
``run mcq --families NAME`` writes (copy ``j`` of an item: the run's seed, the item, the
perturbation and ``j``; HELM's and NL-Augmenter's perturbations seeded as those tools seed). Only
pure perturbations: a rewrite is written by a model, which this command never asks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import unicodedata

from robusteval.config import SEED
from robusteval.errors import UserError
from robusteval.probes import registry
from robusteval.ranges import check
from robusteval.suites.base import csv_arg

DEFAULT_DATA = "mmlu"


def add_parser(sub) -> None:
    p = sub.add_parser("perturb", help="print a dataset's perturbed copies (no model)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Print each question of --data under each of --perturbations, as a run would "
                                   "send it.\n\nperturbations (name, kind, what it does; [rate] its default rate, "
                                   "another one as NAME@RATE):\n" + registry.help_text())
    p.add_argument("--perturbations", "-p", type=csv_arg,
                   help="comma-separated text perturbations (listed above; e.g. helm:typos,invisible)")
    p.add_argument("--data", help=f"an mcq dataset name or file (default: {DEFAULT_DATA})")
    p.add_argument("--requests", help="consistency's plain requests instead (.jsonl of {id, prompt}, or .txt one a "
                                      "line): the variants `run consistency --variations` generates")
    p.add_argument("--text", help="perturb this text instead of a dataset")
    p.add_argument("--limit", type=int, default=5, help="questions, a seeded sample (default: 5)")
    p.add_argument("--copies", type=int, default=1, help="copies per perturbation (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="the run's seed (default: 0)")
    p.add_argument("--options", action="store_true", help="perturb the options too (mcq's --perturb-options)")
    p.add_argument("--format", choices=("text", "jsonl"), default="text",
                   help="text: readable, invisible characters shown as <U+200B>; jsonl: one record a copy")
    p.add_argument("--list", action="store_true", help="list the perturbations and exit")


def shown(text: str) -> str:
    """``text`` with invisible format characters (zero-width, bidi controls) written as <U+XXXX>."""
    return "".join(f"<U+{ord(ch):04X}>" if unicodedata.category(ch) == "Cf" else ch for ch in text)


def copies(items: list[tuple[str, str, tuple[str, ...]]], names: tuple[str, ...], *, k: int, seed: int,
           with_options: bool = False) -> list[dict]:
    """Every (id, question, options) under every perturbation, ``k`` copies each, as mcq writes them
    (`probes.apply.perturb_item`: the same seeds, HELM's options-first order where HELM has it)."""
    from robusteval.probes.apply import perturb_item

    async def all_copies() -> list[dict]:
        out = []
        for item_id, question, options in items:
            for name in names:
                for j in range(1, k + 1):
                    q, opts = await perturb_item(name, question, options, seed=f"{seed}:{item_id}:{name}#{j}",
                                                 instance=(item_id, seed + j - 1), with_options=with_options)
                    row = {"id": item_id, "perturbation": name, "copy": j, "original": question, "text": q.text}
                    if with_options:
                        row |= {"original_options": list(options), "options": [o.text or o.original for o in opts]}
                    out.append(row)
        return out

    return asyncio.run(all_copies())


def variants(prompts: list[tuple[str, str]], names: tuple[str, ...], *, seed: int) -> list[dict]:
    """Every request's variant under every perturbation, seeded as consistency's `generate_sets` seeds them."""
    from robusteval.probes.apply import perturb_text

    async def all_variants() -> list[dict]:
        return [{"id": pid, "perturbation": name, "copy": 1, "original": prompt,
                 "text": (await perturb_text(name, prompt, seed=f"{seed}:{pid}:{name}", instance=(pid, seed))).text}
                for pid, prompt in prompts for name in names]

    return asyncio.run(all_variants())


def run_command(args: argparse.Namespace) -> int:
    if args.list:
        print(registry.help_text())
        return 0
    if not args.perturbations:
        raise UserError("give --perturbations NAME,... (robusteval perturb --list shows them)")
    for name in args.perturbations:  # data unavailable offline ends here: this command's job is to show copies
        if isinstance(registry.get(name, skip_missing=False), registry.Rewrite):
            raise UserError(f"--perturbations {name}: written by a model, which `perturb` never asks; "
                            "see its copies with `run mcq --families ... --estimate` or in a run's samples")
    if args.limit < 1 or args.copies < 1:
        raise UserError("--limit and --copies must be >= 1")
    check("--seed", args.seed, SEED)  # the run's range: these are the copies a run with this seed sends
    if sum(x is not None for x in (args.text, args.requests, args.data)) > 1:
        raise UserError("give one of --data, --requests and --text")
    if args.options and (args.text is not None or args.requests is not None):
        given = "--text" if args.text is not None else "--requests"
        raise UserError(f"--options perturbs an mcq dataset's options; {given} has none (give --data, or leave "
                        "--options out)")
    items: list[tuple[str, str, tuple[str, ...]]] = []
    rows: list[dict] = []
    if args.requests is not None:
        from pathlib import Path

        from robusteval.data.prompts import load_prompts

        if not Path(args.requests).is_file():
            raise UserError(f"--requests {args.requests}: no such file")
        prompts = load_prompts(args.requests, limit=args.limit, seed=args.seed)
        rows = variants([(p.id, p.prompt) for p in prompts], tuple(args.perturbations), seed=args.seed)
    elif args.text is not None:
        items = [("text", args.text, ())]
    else:
        from robusteval.data.mcq import load_items

        items = [(i.id, i.question, i.options)
                 for i in load_items(args.data or DEFAULT_DATA, limit=args.limit, seed=args.seed)]
    if items:
        rows = copies(items, tuple(args.perturbations), k=args.copies, seed=args.seed, with_options=args.options)
    if args.format == "jsonl":
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return 0
    last = None
    for row in rows:
        if row["id"] != last:
            print(f"\n{row['id']}\n  original          {shown(row['original'])}")
            last = row["id"]
        label = row["perturbation"] + (f"#{row['copy']}" if args.copies > 1 else "")
        print(f"  {label:<17} {shown(row['text'] or '')}")
        for option in row.get("options", ()):
            print(f"  {'':<17}   - {shown(option)}")
    return 0
