"""The persona run's terminal tables (stability, validity, leaderboard) and the leaderboard across
runs that ``robusteval compare`` prints, all from the typed records; every name printed literally."""

from __future__ import annotations

import math

from rich.console import Console
from rich.text import Text

from robusteval.report.table import fmt_estimate as _fmt  # the one copy
from robusteval.report.terminal import Table
from robusteval.results.persona import PersonaBoard, PersonaMetrics, stability_caveat


def print_tables(console: Console, metrics: PersonaMetrics, board: PersonaBoard | None, *, mds: str) -> None:
    """Per model: stability with its CI, the context x context matrix, validity per context; then
    the run's leaderboard."""
    for model, m in metrics.items():
        if m.na_reason:
            console.print(Text(f"{model}: {m.na_reason}", style="yellow"))
        s = m.rank_order_stability
        ci = "" if s.low is None else f" [{s.low:.3f}, {s.high:.3f}]"
        console.print(Text.assemble((model, "bold"), f": rank-order stability {_fmt(s.value)}{ci} over {s.n} "
                                    f"personas; {m.answers} answers, invalid rate {_fmt(m.invalid_rate)}, "
                                    f"{m.failed} failed"))
        if caveat := stability_caveat(m):
            console.print(Text(f"  stability: {caveat}", style="yellow"))
        names = m.stability_matrix.contexts
        matrix = Table(title=Text(f"{model} · rank-order stability (context x context)"), title_justify="left")
        matrix.add_column("")
        for n in names:
            matrix.add_column(Text(n), justify="right")
        for n, row in zip(names, m.stability_matrix.values):
            matrix.add_row(Text(n), *(_fmt(x) for x in row))
        console.print(matrix)
        validity = Table(title=Text(f"{model} · validity per context"), title_justify="left")
        for col in ("context", "invalid rate", f"MDS Stress-1 ({mds})", "CFI", "SRMR", "RMSEA", "item r"):
            validity.add_column(Text(col), justify="left" if col == "context" else "right")
        for n, v in m.validity.items():
            validity.add_row(Text(n), _fmt(v.invalid_rate), _fmt(v.mds.stress1), _fmt(v.cfa_mean.cfi),
                             _fmt(v.cfa_mean.srmr), _fmt(v.cfa_mean.rmsea), _fmt(v.mean_item_r))
        console.print(validity)
    if board is not None and board.models:
        table = Table(title="leaderboard", title_justify="left")
        for col in ("model", "cardinal", "win rate"):
            table.add_column(col, justify="left" if col == "model" else "right")
        for model, entry in sorted(board.models.items(),
                                   key=lambda kv: math.inf if kv[1].cardinal is None else -kv[1].cardinal):
            table.add_row(Text(model), _fmt(entry.cardinal), _fmt(entry.win_rate))
        console.print(table)
        if board.na_reason:
            console.print(Text("leaderboard n/a: a model lost a context (see above); no score is computed from "
                               "what is left", style="yellow"))
        console.print(Text(f"diversity (1 - Kendall's W) {_fmt(board.diversity)}; sensitivity (max rank change, "
                           f"leave one context out) {board.sensitivity_win_rate}"))


def print_board_across_runs(console: Console, board: PersonaBoard) -> None:
    """``robusteval compare`` on persona runs: every run/model a contestant on the same games."""
    table = Table(title=f"persona leaderboard across runs ({len(board.games)} games)", title_justify="left")
    for column in ("run/model", "cardinal", "win rate"):
        table.add_column(column)
    for name, row in sorted(board.models.items(), key=lambda kv: -(kv[1].cardinal or 0)):
        table.add_row(Text(name), _fmt(row.cardinal), _fmt(row.win_rate))
    console.print(table)
    console.print(Text(f"diversity (1 - Kendall's W) {_fmt(board.diversity)}; sensitivity (max rank change, leave "
                       f"one context out) win rate {board.sensitivity_win_rate}, cardinal "
                       f"{board.sensitivity_cardinal}"))


__all__ = ["print_board_across_runs", "print_tables"]
