"""The files a `hallucination` run writes in the layout HalluciGen participants submitted, one per
detector configuration or generator, for the run's one data file:

- ``detection-<config>.csv``: ``id,label``, the hypothesis predicted hallucinated (hyp1/hyp2) per
  item, as in the released prediction files of the lab (e.g. nat-hu/eloquent-hallucination-lab,
  ``Group1_results/Detection_task/*_final.csv``); an empty label where the reply named neither;
- ``generation-<model>.csv``: ``id,hyp+,hyp-``, the faithful and the hallucinated hypothesis per
  source, as in that repository's ``Generation_task/*_final.csv``; empty where the reply did not parse.

Rows are read by attribute (the suite's compact rows), so this module needs no suite import. An
item shown in both orders gives the verdict on the order as published (hyp1 first)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def detection_csv(rows: Sequence[Any], config: str) -> str:
    """``id,label`` for ``config``'s verdicts (detection step rows), in the data's order."""
    chosen: dict[str, Any] = {}
    for r in rows:
        if r.config == config and r.generator is None and (r.item_id not in chosen or r.order == "12"):
            chosen[r.item_id] = r
    return _csv(("id", "label"), ((item_id, r.predicted or "") for item_id, r in chosen.items()))


def generation_csv(rows: Sequence[Any], model: str) -> str:
    """``id,hyp+,hyp-`` for ``model``'s generated pairs, in the data's order."""
    return _csv(("id", "hyp+", "hyp-"), ((r.item_id, r.hyp_plus or "", r.hyp_minus or "")
                                         for r in rows if r.model == model))
