"""A long-form correctness grid (model, item, variant, correct, category: what `robusteval score GRID`
and `benchmarks/budget.py --grid` read) from the samples of one or more runs, e.g. the shards of
``robusteval run mcq --families prompt --limit 200 --shard I/N``.

    .venv/bin/python benchmarks/grid_from_runs.py OUT.csv RUN_DIR [RUN_DIR ...]

A reply that could not be read counts as wrong, as in the run's own accuracy; a failed request
(no reply) leaves its cell out, and `budget.py` then leaves its item out of the truth.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path


def main() -> None:
    out, runs = sys.argv[1], sys.argv[2:]
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "item", "variant", "correct", "category"])
        for run in runs:
            for line in (Path(run) / "samples.jsonl").read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                if row.get("correct") is not None:
                    writer.writerow([row["model"], row["item_id"], row["variant"], int(bool(row["correct"])),
                                     row.get("category") or ""])


if __name__ == "__main__":
    main()
