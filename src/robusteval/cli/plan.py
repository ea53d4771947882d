"""``robusteval plan PILOT --target-ci W``: how many variants and items an interval of width W needs,
for the population mean of each family whose variants are a sample (the two-way interval) and for
the item-only interval, and what that costs in requests and tokens at the pilot's tokens per request
(`metrics.sample_size`, docs/statistics.md)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, replace

from robusteval.errors import UserError


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="from a pilot run or grid: the variants and items an interval width needs, "
                                    "and their cost", description=__doc__)
    p.add_argument("pilot", metavar="PILOT", help="a finished mcq run folder, or a correctness grid file (CSV/JSONL "
                                                  "of item, variant, correct [, model, family])")
    p.add_argument("--target-ci", dest="target_ci", type=float, required=True, metavar="W",
                   help="the width (high - low) the 95%% interval should have, e.g. 0.05")
    p.add_argument("--variants", metavar="LIST",
                   help="numbers of variants to plan for, comma-separated (default: 2,3,5,10,20,50,100, the pilot's "
                        "and the fewest that can reach the target)")
    p.add_argument("--tokens-per-request", dest="tokens_per_request", type=float, metavar="T",
                   help="tokens (prompt + completion) one request costs, for a grid file (which records none) or "
                        "another design, e.g. what `run ... --estimate` gives per request (default: the pilot "
                        "run's mean)")
    p.add_argument("--assurance", type=float, metavar="P",
                   help="plan with the template variance at its upper P confidence bound from the pilot (e.g. 0.8): "
                        "a small pilot under-states it about half the time (default: the pilot's estimate)")
    p.add_argument("--model", help="plan for this model of the pilot only")
    p.add_argument("--family", help="plan for this family of the pilot only")
    p.add_argument("--format", dest="output_format", choices=("table", "json"), default="table",
                   help="json: the plan as one JSON object on stdout")


@dataclass(frozen=True)
class CostedSize:
    """A `PlannedSize` with what it costs per model: requests (items x variants x samples) and tokens."""

    variants: int
    items: int | None
    width: float | None
    requests: int | None
    tokens: int | None
    item_only_items: int | None
    item_only_width: float | None
    item_only_requests: int | None
    item_only_tokens: int | None


@dataclass(frozen=True)
class FamilyPlan:
    model: str
    family: str
    pilot_items: int
    pilot_variants: int
    pilot_width: float | None  # the pilot's own two-way width
    pilot_item_only_width: float | None
    var_items: float
    var_variants: float
    var_interaction: float
    assurance: float | None  # var_variants is its upper bound at this confidence; None: the estimate
    fewest_variants: int | None  # with fewer, no number of items reaches the target
    tokens_per_request: float | None
    sizes: tuple[CostedSize, ...]


def _variants_arg(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ks = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UserError(f"--variants {text!r}: give whole numbers, comma-separated (e.g. 5,10,20)") from None
    if not ks or ks[0] < 2:
        raise UserError(f"--variants {text!r}: a two-way interval needs at least 2 variants")
    return ks


def plans(args: argparse.Namespace) -> tuple[list[FamilyPlan], list[str]]:
    """The plan of every sampled family of the pilot, and a line for each (model, family) left out."""
    from robusteval.metrics.sample_size import default_variants, fewest_variants, plan, with_upper_variance
    from robusteval.metrics.two_way import complete, components, is_sampled, two_way
    from robusteval.pilot import read_pilot

    target = args.target_ci
    if not 0 < target < 1:
        raise UserError(f"--target-ci {target}: a width between 0 and 1 (e.g. 0.05)")
    asked = _variants_arg(args.variants)
    per_request = args.tokens_per_request
    if args.assurance is not None and not 0 < args.assurance < 1:
        raise UserError(f"--assurance {args.assurance}: a probability between 0 and 1 (e.g. 0.8)")
    if per_request is not None and not per_request > 0:
        raise UserError(f"--tokens-per-request {per_request}: a positive number of tokens")
    out, skipped = [], []
    chosen = [g for g in read_pilot(args.pilot) if (args.model is None or g.model == args.model)
              and (args.family is None or g.family == args.family)]
    if not chosen:
        raise UserError(f"{args.pilot}: no model {args.model or ''} family {args.family or ''} in this pilot".replace(
            "  ", " "))
    for g in chosen:
        y = complete(g.cells)
        if not is_sampled(g.family):
            skipped.append(f"{g.model} · {g.family}: its variants are a fixed design, not a sample of a population "
                           f"(docs/statistics.md): no population interval to plan")
            continue
        if y.shape[0] < 2 or y.shape[1] < 2:
            skipped.append(f"{g.model} · {g.family}: {y.shape[0]} complete items x {y.shape[1]} variants; a plan "
                           f"needs at least 2 of each")
            continue
        if per_request is not None:
            g = replace(g, tokens_per_request=per_request)
        c = components(y)
        tw = two_way(y)
        if args.assurance is not None:
            c = with_upper_variance(c, args.assurance)
        least = fewest_variants(c, target)
        sizes = []
        for row in plan(c, target, asked or default_variants(c.variants, least)):
            sizes.append(CostedSize(row.variants, row.items, row.width, *_cost(g, row.items, row.variants),
                                    row.item_only_items, row.item_only_width,
                                    *_cost(g, row.item_only_items, row.variants)))
        out.append(FamilyPlan(g.model, g.family, c.items, c.variants,
                              None if tw.low is None or tw.high is None else tw.high - tw.low,
                              None if tw.item_low is None or tw.item_high is None else tw.item_high - tw.item_low,
                              c.var_items, c.var_variants, c.var_interaction, args.assurance, least,
                              g.tokens_per_request, tuple(sizes)))
    if not out:
        raise UserError(f"{args.pilot}: nothing to plan: " + "; ".join(skipped))
    return out, skipped


def _cost(g, items: int | None, variants: int) -> tuple[int | None, int | None]:
    if items is None:
        return None, None
    requests = items * variants * g.samples
    return requests, None if g.tokens_per_request is None else round(requests * g.tokens_per_request)


def run_command(args: argparse.Namespace) -> int:
    from robusteval.cli.common import out_console

    found, skipped = plans(args)
    if args.output_format == "json":
        print(json.dumps({"pilot": args.pilot, "target_ci": args.target_ci, "level": 0.95,
                          "plans": [asdict(p) for p in found], "skipped": skipped}, indent=2))
        return 0
    out = out_console()
    for p in found:
        out.print(plan_table(p, args.target_ci))
    for line in skipped:
        out.print(f"not planned: {line}")
    return 0


def _n(x: int | None) -> str:
    return "out of reach" if x is None else f"{x:,}"


def plan_table(p: FamilyPlan, target: float):
    """One family's plan as a terminal table, the pilot's own figures in its caption."""
    from rich.text import Text

    from robusteval.report.terminal import Table

    table = Table(title=Text(f"{p.model} · {p.family}: items needed for a 95% interval {target:g} wide"),
                  title_justify="left")
    for column in ("variants", "items (population mean)", "requests", "tokens", "items (item-only)", "requests",
                   "tokens"):
        table.add_column(column, justify="right")
    for s in p.sizes:
        table.add_row(str(s.variants), _n(s.items), _n(s.requests) if s.items else "-",
                      _n(s.tokens) if s.tokens is not None else "-", _n(s.item_only_items),
                      _n(s.item_only_requests) if s.item_only_items else "-",
                      _n(s.item_only_tokens) if s.item_only_tokens is not None else "-")
    pilot_width = "n/a" if p.pilot_width is None else f"{p.pilot_width:.3f}"
    item_width = "n/a" if p.pilot_item_only_width is None else f"{p.pilot_item_only_width:.3f}"
    least = ("no number of variants up to 10,000 reaches it" if p.fewest_variants is None
             else f"at least {p.fewest_variants} variants are needed, whatever the items")
    tokens = ("tokens: not in a grid file (--tokens-per-request gives them)" if p.tokens_per_request is None
              else f"tokens at {p.tokens_per_request:.1f} per request (prompt + completion)")
    table.caption = Text(
        f"pilot: {p.pilot_items} complete items x {p.pilot_variants} variants, population-mean width {pilot_width}, "
        f"item-only width {item_width}; variance components items {p.var_items:.4f}, variants {p.var_variants:.4f}"
        f"{'' if p.assurance is None else f' (its upper {p.assurance:g} confidence bound)'}, "
        f"interaction {p.var_interaction:.4f}. For the population mean, {least}. Requests and tokens per model; "
        f"{tokens}. Item-only: how sure on the variants asked, not on the population of variants.")
    return table
