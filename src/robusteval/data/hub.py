"""Datasets on the Hugging Face hub, for online users (`pip install 'robusteval[hub]'`).

Offline, these fail with a clear message; the same schemas load from local files, which is how
the tests check them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from robusteval.errors import UserError

AGIEVAL_SUBSETS = ("sat-math", "lsat-lr", "lsat-rc", "logiqa-en", "aqua-rat", "sat-en", "lsat-ar")
# name -> (hub id, split for few-shot examples or None)
HUB_SETS: dict[str, tuple[str, str | None]] = {
    "mmlu-pro": ("TIGER-Lab/MMLU-Pro", "validation"),
    **{f"agieval-{s}": (f"hails/agieval-{s}", None) for s in AGIEVAL_SUBSETS},
}


def rows(name: str, split: str) -> Iterator[tuple[str, dict[str, Any]]]:
    hub_id = HUB_SETS[name][0]
    try:
        import datasets
    except ImportError:
        raise UserError(f"dataset {name!r} loads from the Hugging Face hub: pip install 'robusteval[hub]'") from None
    try:
        data = datasets.load_dataset(hub_id, split=split)
    except Exception as exc:  # offline, unknown split, hub error: one message, no traceback
        raise UserError(f"cannot load {hub_id} (split {split}) from the Hugging Face hub: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    for n, row in enumerate(data, 1):
        yield f"{hub_id}:{split}:{n}", dict(row)
