"""The sample explorer: the variants of one item side by side, with what changed between them.

Works on any suite's samples.jsonl: rows are grouped by ``item_id``; each row's label is the one its
suite wrote (``label``: model, family, variant, sample, ...); the prompt is diffed word by word
against the group's first prompt, so a reader sees exactly which words a perturbation touched.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PROMPT_KEYS = ("prompt", "question", "source", "text")
RESPONSE_KEYS = ("response", "answer", "output")


# SequenceMatcher's time grows with the product of the lengths it compares, and much faster on
# repetitive text: a 1 MB repetitive question kept the report busy for minutes. Past this many
# words on either side (after the shared head and tail are cut), the rest is shown unmarked.
MAX_DIFF_WORDS = 1000


@dataclass(frozen=True)
class DiffPart:
    op: str  # "same" | "ins" | "del" | "cut" (a note: the diff stops here) | "rest" (the words after it, unmarked)
    text: str


@dataclass(frozen=True)
class ExplorerRow:
    label: str
    prompt_diff: tuple[DiffPart, ...]
    response: str | None
    verdict: str
    status: str


@dataclass(frozen=True)
class ExplorerItem:
    item_id: str
    rows: tuple[ExplorerRow, ...]
    verdicts_differ: bool
    total: int = 0  # the item's rows in samples.jsonl (more than ``rows`` where the explorer cut them)


def word_diff(base: str, other: str) -> tuple[DiffPart, ...]:
    """``other`` against ``base`` as runs of same / inserted / deleted words.

    The shared leading and trailing words are cut off before difflib sees them: variants of one
    prompt mostly share the question and the instructions, and SequenceMatcher's time grows with the
    square of what it compares (1,000 diffs took 0.36 s of a cached rerun's report, profiled; 0.24 s now).
    What still differs is compared over at most `MAX_DIFF_WORDS` words per side; a "cut" part then
    says so and a "rest" part carries the remaining words of ``other`` as they are."""
    a, b = base.split(), other.split()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    parts: list[DiffPart] = [DiffPart("same", " ".join(a[:head]))] if head else []
    a_mid, b_mid = a[head:len(a) - tail], b[head:len(b) - tail]
    rest = b_mid[MAX_DIFF_WORDS:] if max(len(a_mid), len(b_mid)) > MAX_DIFF_WORDS else None
    if rest is not None:
        skipped = max(len(a_mid), len(b_mid)) - MAX_DIFF_WORDS
        a_mid, b_mid = a_mid[:MAX_DIFF_WORDS], b_mid[:MAX_DIFF_WORDS]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a_mid, b=b_mid, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(DiffPart("same", " ".join(b_mid[j1:j2])))
            continue
        if op in ("delete", "replace"):
            parts.append(DiffPart("del", " ".join(a_mid[i1:i2])))
        if op in ("insert", "replace"):
            parts.append(DiffPart("ins", " ".join(b_mid[j1:j2])))
    if rest is not None:
        parts.append(DiffPart("cut", f"[word diff truncated: only the first {MAX_DIFF_WORDS:,} differing words are "
                                     f"compared, {skipped:,} more are shown unmarked]"))
        if rest:
            parts.append(DiffPart("rest", " ".join(rest)))
    if tail:
        parts.append(DiffPart("same", " ".join(a[len(a) - tail:])))
    return tuple(parts)


def verdict(sample: dict[str, Any]) -> str:
    if sample.get("status") == "failed":
        return "failed"
    if "correct" in sample and sample["correct"] is not None:
        shown = sample.get("answer_label") or sample.get("prediction") or ""
        return f"{'correct' if sample['correct'] else 'wrong'}{f' ({shown})' if shown else ''}"
    if sample.get("score") is not None:
        return f"score {float(sample['score']):.2f}"
    if sample.get("status") == "invalid":
        return "invalid"
    return sample.get("status") or ""


def _label(sample: dict[str, Any]) -> str:
    """The row's own ``label`` (each suite's Sample names the fields that tell its rows apart); runs
    written before samples carried one show model and variant."""
    if sample.get("label"):
        return str(sample["label"])
    return " · ".join(str(sample[k]) for k in ("model", "variant") if sample.get(k) not in (None, ""))


MAX_ITEMS = 200  # items the explorer shows: the first ones of samples.jsonl
MAX_ROWS = 100  # rows it shows of one item (a persona run's questionnaire item has a row per persona)
ITEM_ROWS = "_item_rows"  # set on an item's first row when rows were left out: how many it has


def explorer_samples(samples: Iterable[dict[str, Any]], *, max_items: int = MAX_ITEMS,
                     max_rows: int = MAX_ROWS) -> list[dict[str, Any]]:
    """The samples `build_explorer` shows (the first ``max_rows`` rows of each of the first
    ``max_items`` items), picked while reading: a report of a million samples holds only these."""
    counts: dict[str, int] = {}
    first: dict[str, dict[str, Any]] = {}
    rows = []
    for s in samples:
        item_id = str(s.get("item_id", "?"))
        if item_id not in counts:
            if len(counts) >= max_items:
                continue
            counts[item_id] = 0
            first[item_id] = s
        counts[item_id] += 1
        if counts[item_id] <= max_rows:
            rows.append(s)
    for item_id, n in counts.items():
        if n > max_rows:
            first[item_id][ITEM_ROWS] = n
    return rows


def build_explorer(samples: list[dict[str, Any]], *, max_items: int = MAX_ITEMS) -> list[ExplorerItem]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        groups.setdefault(str(s.get("item_id", "?")), []).append(s)
    items = []
    for item_id, rows in list(groups.items())[:max_items]:
        base = _first(rows[0], PROMPT_KEYS) or ""
        built = tuple(ExplorerRow(
            label=_label(s),
            prompt_diff=word_diff(base, _first(s, PROMPT_KEYS) or ""),
            response=_first(s, RESPONSE_KEYS) or (s.get("detail") if s.get("kind") == "rating" else None),
            verdict=verdict(s), status=str(s.get("status", ""))) for s in rows)
        answers = {s.get("answer_option", s.get("answer_label")) for s in rows if s.get("status") == "ok"}
        items.append(ExplorerItem(item_id, built, len(answers) > 1, total=rows[0].get(ITEM_ROWS, len(rows))))
    return items


def _first(sample: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = sample.get(key)
        if isinstance(value, str):
            return value
    return None
