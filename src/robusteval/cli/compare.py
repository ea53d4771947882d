"""``robusteval compare RUN RUN...``: headline metrics across runs and models, with intervals; paired
differences of two runs on the same items (every suite's per-item measures; mcq also by family,
sensitivity measures included); the persona leaderboard across runs."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from rich.console import Console

from robusteval.cli.common import out_console
from robusteval.errors import UserError
from robusteval.files import atomic_write


def add_parser(sub) -> None:
    cmp = sub.add_parser("compare", help="compare runs: headline metrics across runs and models, with CIs; "
                                         "paired differences of two runs on the same items")
    cmp.add_argument("runs", nargs="+", metavar="RUN", help="run folders (or samples.jsonl for mcq); the first is A")
    cmp.add_argument("--out", dest="compare_out", help="also write compare.md and one plot per metric into this folder")
    cmp.add_argument("--model-a", help="model of run A to compare (when it holds several)")
    cmp.add_argument("--model-b", help="model of run B to compare")
    cmp.add_argument("--json", dest="json_out", help="also write the comparison to this JSON file")
    cmp.add_argument("--format", dest="output_format", choices=("table", "json"), default="table",
                     help="json: print the comparison as one JSON object on stdout (headlines, paired "
                          "differences, persona leaderboard), for scripts")


def run_command(args: argparse.Namespace) -> int:
    from robusteval.compare import (
        compare,
        compare_headlines,
        compare_items,
        mcq_as_items,
        paired_markdown,
        persona_leaderboard,
        rank_text,
        write_compare_md,
    )
    from robusteval.report.table import fmt_estimate
    from robusteval.report.terminal import Table

    if len(args.runs) < 2:
        raise UserError("give two or more runs to compare")
    out = out_console()
    board = compare_headlines(args.runs)
    a, later = args.runs[0], args.runs[1:]
    mcq = board is None or board.suite == "mcq"
    # per later run: mcq's comparison by family, else every measure's paired difference (report.item_values)
    paired = {b: (compare if mcq else compare_items)(a, b, model_a=args.model_a, model_b=args.model_b)
              for b in later}
    stability = _rank_stability(args.runs) if mcq else {}
    if args.compare_out and board is not None:
        as_items = {b: mcq_as_items(r) for b, r in paired.items()} if mcq else paired
        write_compare_md(board, args.compare_out, paired_markdown(as_items, a) + _stability_markdown(stability))
    if args.output_format == "json":
        print(json.dumps({**_as_json(args, board, paired),
                          **({"rank_stability": {f: asdict(rs) for f, rs in stability.items()}} if stability else {})},
                         indent=2))
        return 0
    if board is not None:
        table = Table(title="headline metrics across runs (95% CI)", title_justify="left")
        for column in ("rank", "run", "model", *board.metrics):
            table.add_column(column)
        for row in board.rows:
            table.add_row(rank_text(row), row.run_id, row.model, *[fmt_estimate(row.values.get(m))
                                                                   for m in board.metrics])
        out.print(table)
        if board.metrics:
            out.print(f"rank: by {board.metrics[0]}; '=' marks models that cannot be told apart (paired test over "
                      "shared items, else 95% intervals)")
    _print_stability(out, stability)
    if (board is not None and board.suite == "persona"
            and (persona_board := persona_leaderboard(args.runs)) is not None):
        _print_persona_board(out, persona_board, args.compare_out)
    for b, result in paired.items():
        if mcq:
            out.print(_mcq_paired_table(result, a, b))
            out.print(_sensitivity_table(result, a, b))
            if (valid := _valid_only_table(result, a, b)) is not None:
                out.print(valid)
        elif result:
            out.print(_items_table(result, a, b))
        else:
            out.print(f"paired: {b} and {a} share no measure with per-item values")
        if args.json_out:
            atomic_write(Path(args.json_out), json.dumps(result, indent=2))
            out.print(f"wrote {args.json_out}")
    if args.compare_out and board is not None:
        out.print(f"wrote {Path(args.compare_out) / 'compare.md'} and {len(board.metrics)} plots")
    return 0


def _rank_stability(runs: list[str]) -> dict:
    """Per family whose variants are a sample: how the runs' models rank across its variants
    (`pilot.ranking_across_runs`, `metrics.rank_stability`)."""
    from robusteval.pilot import ranking_across_runs

    return ranking_across_runs(runs)


def _print_stability(out: Console, stability: dict) -> None:
    from robusteval.report.rank_stability import NOTE, table
    from robusteval.report.terminal import print_table_data

    for family, rs in stability.items():
        print_table_data(out, table(f"{family}: variants won", rs))
    if stability:
        out.print(NOTE)


def _stability_markdown(stability: dict) -> list[str]:
    from robusteval.report.rank_stability import NOTE, markdown

    lines = [line for family, rs in stability.items() for line in markdown(f"{family}: variants won", rs)]
    return [*lines, "", NOTE] if lines else []


def _mcq_paired_table(result: dict, a: str, b: str):
    """Per family: accuracy, consistency rate and per-category accuracy of A and B, and B - A paired."""
    from robusteval.compare import diff_text
    from robusteval.report.terminal import Table

    paired = Table(title=f"paired: B = {b}  vs  A = {a}", title_justify="left")
    for column in ("family", "metric", "questions", "A", "B", "B - A [95% CI]", "p (paired permutation)"):
        paired.add_column(column)
    for family, r in result.items():
        rows = [(metric, r[metric]) for metric in ("accuracy", "consistency_rate")]
        rows += [(f"accuracy · {name}", d) for name, d in r.get("categories", {}).items()]
        for metric, d in rows:
            p = "n/a" if d["p_value"] is None else f"{d['p_value']:.4f}"
            paired.add_row(family, metric, str(d["n"]), _num(d["a"]), _num(d["b"]), diff_text(d), p)
    return paired


def _items_table(result: dict, a: str, b: str):
    """Every measure's paired difference over the items both runs scored, or why it has none."""
    from rich.text import Text

    from robusteval.compare import diff_text
    from robusteval.report.terminal import Table

    table = Table(title=Text(f"paired: B = {b}  vs  A = {a}"), title_justify="left")
    for column in ("metric", "unit", "n", "A", "B", "B - A [95% CI]", "p (paired permutation)"):
        table.add_column(column)
    for metric, d in result.items():
        if "reason" in d:
            table.add_row(Text(metric), d["unit"], "-", "-", "-", Text(f"n/a: {d['reason']}"), "")
            continue
        p = "n/a" if d["p_value"] is None else f"{d['p_value']:.4f}"
        table.add_row(Text(metric), d["unit"], str(d["n"]), _num(d["a"]), _num(d["b"]), diff_text(d), p)
    models = {(d["model_a"], d["model_b"]) for d in result.values() if "model_a" in d}
    table.caption = Text("mean over the items both runs scored of B - A"
                         + ("; models: " + "; ".join(f"A {ma}, B {mb}" for ma, mb in sorted(models)) if models else ""))
    return table


def _num(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"  # NaN: no question gave a value


def _as_json(args: argparse.Namespace, board, paired: dict) -> dict:
    """``--format json``: the headline rows (value, ci_low, ci_high per metric); the paired
    differences of every later run against the first (mcq: by family; other suites: by measure, a
    measure without a paired unit with its reason); for persona runs the leaderboard."""
    from robusteval.compare import persona_leaderboard
    from robusteval.results.codec import encode

    doc: dict = {"runs": list(args.runs), "suite": board.suite if board is not None else "mcq"}
    if board is not None:
        doc["headlines"] = [{"run": row.run_id, "model": row.model, "rank": row.rank, "tied": row.tied,
                             "metrics": {m: None if (v := row.values.get(m)) is None
                                         else {"value": v[0], "ci_low": v[1], "ci_high": v[2]}
                                         for m in board.metrics}} for row in board.rows]
        if board.suite == "persona" and (persona_board := persona_leaderboard(args.runs)) is not None:
            doc["persona_leaderboard"] = encode(persona_board)
    doc["paired"] = paired
    return doc


def _sensitivity_table(result: dict, a: str, b: str):
    """Every sensitivity measure per family: A and B with their CIs, and B - A paired where it exists."""
    from rich.text import Text

    from robusteval.report.table import fmt_estimate
    from robusteval.report.terminal import Table
    from robusteval.results.sensitivity import MEASURES

    table = Table(title=Text(f"sensitivity: B = {b}  vs  A = {a}"), title_justify="left")
    for column in ("family", "measure", "A [95% CI]", "B [95% CI]", "B - A paired [95% CI]", "p"):
        table.add_column(column)
    for family, r in result.items():
        for measure, label in MEASURES:
            m = r.get("sensitivity", {}).get(measure)
            if m is None or (m["a"]["value"] is None and m["b"]["value"] is None):
                continue
            d = m["difference"]
            if d is None or d["n"] == 0:
                diff, p = "n/a (not a per-question mean)" if d is None else "n/a", ""
            else:
                ci = "" if d["ci_low"] is None else f" [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
                diff, p = f"{d['diff']:+.3f}{ci}", "n/a" if d["p_value"] is None else f"{d['p_value']:.4f}"
            table.add_row(Text(family), label, fmt_estimate(m["a"]), fmt_estimate(m["b"]), diff, p)
    from robusteval.compare import STORED

    again = sorted({how for r in result.values() for how in r.get("intervals", {}).values() if how != STORED})
    which = [f"{family} ({', '.join(k.upper() for k, how in r.get('intervals', {}).items() if how != STORED)})"
             for family, r in result.items() if set(r.get("intervals", {}).values()) - {STORED}]
    table.caption = Text("A's and B's intervals are those their results.json stored (as report and serve show them)"
                         + (f"; {' / '.join(again)} for " + ", ".join(which) if again else ""))
    return table


def _valid_only_table(result: dict, a: str, b: str):
    """The mcq sensitivity measures over valid replies only (a question's invalid variants left out),
    as each run stored them, beside the as-scored table: how much of a sensitivity is answer change
    and how much format failure. None when neither run stored any (no invalid reply)."""
    from rich.text import Text

    from robusteval.report.table import fmt_estimate
    from robusteval.report.terminal import Table
    from robusteval.results.sensitivity import MEASURES

    if not any(r.get("sensitivity_valid") for r in result.values()):
        return None
    table = Table(title=Text(f"sensitivity, valid replies only: B = {b}  vs  A = {a}"), title_justify="left")
    for column in ("family", "measure", "A as scored", "A valid replies only", "B as scored", "B valid replies only"):
        table.add_column(column)
    for family, r in result.items():
        valid = r.get("sensitivity_valid") or {}
        for measure, label in MEASURES:
            m, v = r.get("sensitivity", {}).get(measure), valid.get(measure)
            if m is None or v is None or (v["a"] is None and v["b"] is None):
                continue
            table.add_row(Text(family), label, fmt_estimate(m["a"]), fmt_estimate(v["a"]), fmt_estimate(m["b"]),
                          fmt_estimate(v["b"]))
    table.caption = Text("valid replies only: as each results.json stored it (n/a: that run had no invalid reply, "
                         "or the comparison keeps only part of its cells)")
    return table


def _print_persona_board(out: Console, board, out_dir: str | None) -> None:
    """The leaderboard's aggregation across runs: cardinal score, win rate, diversity, sensitivity."""
    from robusteval.report.terminal_persona import print_board_across_runs
    from robusteval.results.codec import encode

    print_board_across_runs(out, board)
    if out_dir:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        atomic_write(Path(out_dir) / "persona_leaderboard.json", json.dumps(encode(board), indent=2))
        out.print(f"wrote {Path(out_dir) / 'persona_leaderboard.json'}")
