"""Ranking stability across variants (`metrics.rank_stability`) as a table: one row per pair of models
(the share of variants each wins, with its interval), and a line with Kendall's W and the chance the
top model changes under a new variant. One rendering for ``compare`` (terminal and compare.md) and
the HTML report; the leaderboard's column reads `holds_text`."""

from __future__ import annotations

from robusteval.metrics.rank_stability import PairShare, RankStability
from robusteval.report.model import TableData

COLUMNS = ("A", "B", "variants", "share A wins [95% CI]", "share B wins [95% CI]", "across the variants")
NOTE = ("Share of variants won: of the variants asked (a sample of the population of prompts), the share under "
        "which one model scores above the other on the same items (a tie counts half), with Wilson's interval over "
        "the variants: the share of the population's variants under which it wins. Kendall's W: 1 when every variant "
        "ranks the models alike, 0 when their rankings share nothing. Top changes: the chance another model beats "
        "the top one under a new variant, each variant left out in turn (docs/statistics.md).")


def holds_text(p: PairShare) -> str:
    """Whether the pair's order holds across the variants: the interval of the share is above (or
    below) one half, or the variants disagree."""
    if p.low > 0.5:
        return f"{p.a} ahead under most variants"
    if p.high < 0.5:
        return f"{p.b} ahead under most variants"
    return "the variants disagree"


def _share(wins: float, p: PairShare, low: float, high: float) -> str:
    return f"{wins:g}/{p.variants} = {wins / p.variants:.2f} [{low:.2f}, {high:.2f}]"


def pair_rows(rs: RankStability) -> tuple[tuple[str, ...], ...]:
    """One row per pair of models, in the order `COLUMNS` names."""
    return tuple((p.a, p.b, str(p.variants), _share(p.wins, p, p.low, p.high),
                  _share(p.variants - p.wins, p, 1 - p.high, 1 - p.low), holds_text(p)) for p in rs.pairs)


def summary(rs: RankStability) -> str:
    """Kendall's W and the top model's chance of losing its place under a new variant, in one line."""
    w = "n/a" if rs.kendall_w is None else f"{rs.kendall_w:.2f}"
    if rs.top_change is None:
        change = "n/a (fewer than 3 variants)"
    else:
        change = f"{rs.top_change:.2f} [{rs.top_change_low:.2f}, {rs.top_change_high:.2f}]"
    return (f"{len(rs.models)} models on {len(rs.variants)} variants: Kendall's W {w}; top model {rs.top}; "
            f"chance another model beats it under a new variant {change}")


def table(title: str, rs: RankStability) -> TableData:
    """The pairs as a report table, the summary line in its title."""
    return TableData(f"{title}: {summary(rs)}", COLUMNS, pair_rows(rs))


def markdown(title: str, rs: RankStability) -> list[str]:
    """compare.md's lines for one family."""
    lines = ["", f"## {title}", "", summary(rs), "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    return lines + ["| " + " | ".join(row) + " |" for row in pair_rows(rs)]


def versus_next_text(p: PairShare | None) -> str:
    """The leaderboard's cell for a row against the next rank group's weakest challenge: whether it
    wins under most variants (its order holds across the variants) or the variants disagree."""
    if p is None:
        return ""
    share = f"wins {p.wins:g}/{p.variants} variants [{p.low:.2f}, {p.high:.2f}]"
    return f"holds: {share}" if p.holds else f"variants disagree: {share}"
