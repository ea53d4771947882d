"""Replies written elsewhere, placed on the item and variant they answer: a generic JSONL against
a dataset robusteval loads, MMLU-Pro's released ``model_outputs_*.zip``, and lm-evaluation-harness
``--log_samples`` files (SCORE's robustness tasks included).

Each reader yields `Placed` replies in file order and counts in the data audit every row it could
not place (an item the dataset lacks, a variant the design does not have, a row without a reply
field), by reason: nothing is dropped silently. The replies are then read and scored by the same
code as a run's (`scoring.flow`).
"""

from __future__ import annotations

import json
import re
import string
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from robusteval.config import MAX_SAMPLES
from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.mcq import OUT_OF_ORDER, Parsed, Unusable, parse_row, parse_rows
from robusteval.errors import UserError
from robusteval.files import decode_text, jsonl_lines, parse_json, read_text
from robusteval.labels import LETTERS, ROMAN
from robusteval.ranges import Range, check
from robusteval.types import Item, Message, Variant

UNKNOWN_ITEM = "item id not in the dataset"
UNKNOWN_VARIANT = "variant not in the design (check --families / --templates)"
NO_REPLY_FIELD = "no reply field ('reply', 'response', 'text' or 'generated_text')"
NO_ITEM_ID = "no item id ('item_id', 'item' or 'id')"
NO_VARIANT_NAME = "no variant name ('variant')"
ITEM_DIFFERS = ("the same question id as an earlier row with another question, options or gold: left out (its reply "
                "answers another question)")

SHOWN_ORDER = ("printed option letters out of order: the options as SCORE showed them (by position, relabelled "
               "A, B, ...), the gold the option printed with the gold's letter (SCORE's is the letter's position)")
PAST_OPTIONS = ("SCORE's option-order doc for a label past the question's options (the published order, "
                "repeated): scored under that label, as lm-eval's per_option_accuracy scores it")

REPLY_FIELDS = ("reply", "response", "text", "generated_text")
MMLU_PRO_REPLY_FIELDS = ("model_outputs", "generated_text")  # the authors' compute_accuracy.py reads the first
LM_EVAL_REPLY_FIELDS = ("resps",)
REPLY_FIELDS_OF = {"replies": REPLY_FIELDS, "mmlu-pro": MMLU_PRO_REPLY_FIELDS, "lm-eval": LM_EVAL_REPLY_FIELDS,
                   "inspect": ("output.completion",)}
ID_FIELDS = ("item_id", "item", "id", "question_id")

AUTHORS_GOLD = ("'answer' and 'answer_index' disagree: 'answer' used, the gold the authors score their "
                "released answers against")
RELEASED_FAMILY = "released"  # the authors' own prompt: one variant per released file
SAMPLE_INDEX = Range(0, MAX_SAMPLES - 1)  # a draw's number, as `run --samples K` numbers them 0..K-1
# MMLU-Pro's released outputs are 15-25 MB of JSON; a member far beyond that is not read whole
MAX_ZIP_MEMBER = 256 * 2**20


@dataclass(frozen=True)
class Placed:
    """One reply on its item and variant; ``text`` None where the source records no reply (a
    failed request: never counted wrong)."""

    model: str
    item: Item
    variant: Variant
    text: str | None
    sample: int = 0
    where: str = ""
    file: str = ""  # the file it came from (results.json names each model's files)
    dataset: str = ""  # an lm-eval log's task's dataset (`task_dataset`): lm-eval's figures are per task
    # an lm-eval log's own reading of the reply: (the label its filter read, the gold label it scored against)
    theirs: tuple[str | None, str | None] | None = None


def identity_variant(item: Item, family: str, name: str, prompt: str = "",
                     labels: tuple[str, ...] | None = None) -> Variant:
    """The item as published (options in order, letters A, B, ...) under one variant name."""
    n = len(item.options)
    return Variant(item.id, family, name, labels or tuple(LETTERS[:n]), tuple(range(n)), (Message("user", prompt),))


# ------------------------------------------------------------------ (a) generic JSONL


def generic_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each line's object, read strictly as every user file is (`files`: UTF-8 with a BOM accepted,
    another encoding named, nesting bounded)."""
    for n, line in jsonl_lines(path):
        row = parse_json(line, f"{path}:{n}")
        if not isinstance(row, dict):
            raise UserError(f"{path}:{n}: expected a JSON object per line")
        yield f"line {n}", row


def generic_families(path: Path) -> tuple[str, ...]:
    """The families a generic reply file names (``family`` keys), in order of first appearance."""
    return tuple(dict.fromkeys(str(row["family"]) for _, row in generic_rows(path) if row.get("family")))


def read_generic(path: Path, variants: dict[str, dict[tuple[str, str], Variant]], items: dict[str, Item],
                 audit: SourceAudit, model: str | None) -> Iterator[Placed]:
    """Rows ``{"item_id", "variant", "reply"}`` (optional ``family``, ``model``, ``sample``) placed on
    ``variants`` (item id -> (family, variant name) -> variant, the design's). A row without a
    family is placed on every family with a variant of that name (a run asks such a prompt once per
    family too)."""
    for where, row in generic_rows(path):
        audit.rows_read += 1
        at = f"{path} {where}"
        scalar_fields(row, (*ID_FIELDS, "variant", "family", "model"), at)
        item_id = next((str(row[k]) for k in ID_FIELDS if row.get(k) not in (None, "")), None)
        name = row.get("variant")
        field = next((k for k in REPLY_FIELDS if k in row), None)
        if item_id is None or name in (None, "") or field is None:
            audit.leave_out(NO_ITEM_ID if item_id is None else NO_VARIANT_NAME if name in (None, "")
                            else NO_REPLY_FIELD, where)
            continue
        if item_id not in items:
            audit.leave_out(UNKNOWN_ITEM, where)
            continue
        family = row.get("family")
        of_item = variants[item_id]
        found = [v for (f, n), v in of_item.items() if n == str(name) and (family in (None, "") or f == family)]
        if not found:
            audit.leave_out(UNKNOWN_VARIANT, where)
            continue
        audit.rows_used += 1
        text, sample = reply_text(row, field, at), sample_index(row.get("sample"), at)
        for v in found:
            yield Placed(str(row.get("model") or model or path.stem), items[item_id], v, text, sample, where, str(path))


def reply_text(row: dict[str, Any], field: str, at: str) -> str | None:
    """The reply in ``row[field]``: text, or None (null) where the source records no reply. Anything
    else (a list, a number, an object) is refused, as a live reply that is not text is: reading it
    through ``str()`` would score a list's letters."""
    text = row.get(field)
    if text is not None and not isinstance(text, str):
        raise UserError(f"{at}: {field!r} must be the reply's text (a JSON string, or null for no reply), "
                        f"got {_json_kind(text)}")
    return text


def sample_index(value: Any, at: str) -> int:
    """A row's ``sample`` (absent or null: 0): an integer in `SAMPLE_INDEX`. Why refused otherwise: the
    metrics lay a variant's draws out by index, so -1 lands on the previous variant's column and a
    huge index sizes the matrix by it."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{at}: 'sample' must be a draw's number, an integer from 0, got {_json_kind(value)}")
    check(f"{at}: sample", value, SAMPLE_INDEX, sep="=")
    return value


def scalar_fields(row: dict[str, Any], keys: Iterable[str], at: str) -> None:
    """Refuse a name field (an item id, a variant, a model...) given as a JSON list or object: its
    ``str()`` would become a name no dataset or design has."""
    for key in keys:
        if isinstance(row.get(key), (dict, list)):
            raise UserError(f"{at}: {key!r} must be text or a number, got {_json_kind(row[key])}")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", str: "text", type(None): "null"}.get(
        type(value), "a number")


def _json_kind(value: Any) -> str:
    kind = _kind(value)
    shown = json.dumps(value, ensure_ascii=False)  # as the file spells it: true, not True
    return f"{kind} ({shown if len(shown) <= 40 else shown[:37] + '...'})"


# ------------------------------------------------------------------ (b) MMLU-Pro released outputs

ZIP_NAME = re.compile(r"model_outputs_(?P<model>.+?)_(?P<shots>\d+shots?)$")
REPLIES_DIFFER = ("'model_outputs' and 'generated_text' differ: 'model_outputs' scored, the field the authors' "
                  "compute_accuracy.py reads")
NO_MMLU_PRO_REPLY = "no 'model_outputs' or 'generated_text' (no reply): counted failed"


def not_a_row(value: Any) -> str:
    """Why a value of a released list is left out: it is not a row (a summary appended to the list)."""
    return f"not a row: {_kind(value)} among the released rows, left out"


def is_json_list(path: Path) -> bool:
    """Whether ``path`` is a ``.json`` file holding a JSON list (MMLU-Pro's released answers, unzipped):
    told from its first bytes, the file is not read whole for it."""
    if path.suffix.lower() != ".json":
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"[")


def _released_list(path: Path) -> list[Any]:
    """The JSON list of a released ``.zip`` (its one ``.json`` member) or of that member unzipped."""
    if path.suffix.lower() != ".zip":
        where = str(path)
        rows = parse_json(read_text(path), where)
    else:
        try:
            with zipfile.ZipFile(path) as z:
                members = [n for n in z.namelist() if n.endswith(".json")]
                if len(members) != 1:
                    raise UserError(f"{path}: expected one .json file in the zip (MMLU-Pro's released outputs), "
                                    f"found {len(members)}")
                with z.open(members[0]) as member:
                    raw = member.read(MAX_ZIP_MEMBER + 1)
        except zipfile.BadZipFile:
            raise UserError(f"{path}: not a zip file") from None
        if len(raw) > MAX_ZIP_MEMBER:
            raise UserError(f"{path}: {members[0]} unpacks to more than {MAX_ZIP_MEMBER:,} bytes; MMLU-Pro's "
                            f"released outputs are 15-25 MB, so this is not one of them")
        where = f"{path}:{members[0]}"
        rows = parse_json(decode_text(raw, where), where)  # nesting bounded: a hostile zip is one message
    if not isinstance(rows, list) or not any(isinstance(r, dict) for r in rows):
        raise UserError(f"{where}: expected a JSON list of row objects (MMLU-Pro's released outputs), got "
                        f"{'a list without one object' if isinstance(rows, list) else _json_kind(rows)}")
    return rows


def _mmlu_pro_reply(row: dict[str, Any], at: str, where: str, source: SourceAudit) -> tuple[str, str | None]:
    """The row's reply field and reply: ``model_outputs``, else ``generated_text`` (null or absent: not
    given; neither given: no field, no reply, counted); both given and different, ``model_outputs``,
    as the authors score it, and the row counted."""
    given = {k: reply_text(row, k, at) for k in MMLU_PRO_REPLY_FIELDS if row.get(k) is not None}
    if not given:
        source.anomaly(NO_MMLU_PRO_REPLY, where)
        return "", None
    if len(set(given.values())) > 1:
        source.anomaly(REPLIES_DIFFER, where)
    field = next(iter(given))
    return field, given[field]


def read_mmlu_pro(path: Path, audit: DataAudit, model: str | None) -> Iterator[Placed]:
    """MMLU-Pro's ``model_outputs_<model>_<k>shots.zip`` as its authors publish it (or its ``.json``
    member unzipped): one JSON list of the test rows, each with the model's reply in
    ``model_outputs`` (the field their compute_accuracy.py reads) or ``generated_text`` (most
    releases); their ``pred`` is their own reading, with a random guess where nothing was read, and
    is not used. The object rows are the items (parsed and audited as any MMLU-Pro file); anything
    else in the list (a summary appended to it) is left out and counted with its position. The
    authors' prompt is one variant, family ``released``, named after the file (``5shots``)."""
    m = ZIP_NAME.match(path.stem)
    label = model or (m.group("model") if m else path.stem)
    name = m.group("shots") if m else "as released"
    values = _released_list(path)
    source = audit.source(str(path))
    others = [i for i, r in enumerate(values) if not isinstance(r, dict)]
    for i in others:
        source.rows_read += 1
        source.leave_out(not_a_row(values[i]), f"row {i + 1}")
    if others:
        source.note(f"{len(others)} of {len(values)} values in the list are not rows (left out), at rows "
                    f"{row_ranges(others)}")
    rows = {i: _authors_gold(r, f"row {i + 1}", source) for i, r in enumerate(values) if isinstance(r, dict)}
    items = parse_rows(((i, (f"{path}:row {i + 1}", r)) for i, r in rows.items()), "mmlu-pro", source,
                       min_options=1)
    if not items:
        reasons = ", ".join(f"{n} x {reason}" for reason, n in source.left_out.most_common(3))
        raise UserError(f"{path}: no row is an MMLU-Pro question with its options and gold ({reasons}); a .zip or a "
                        ".json list is read as MMLU-Pro's released answers (generic replies are JSONL: an object "
                        "per line)")
    source.rows_used = len(items)
    by_source = {item.source: item for item in items}
    fields: Counter[str] = Counter()
    for i, row in rows.items():
        item = by_source.get(f"{path}:row {i + 1}")
        if item is None:
            continue  # left out by the loader, counted there
        field, text = _mmlu_pro_reply(row, f"{path} row {i + 1}", f"row {i + 1}", source)
        fields[field] += 1
        yield Placed(label, item, identity_variant(item, RELEASED_FAMILY, name), text, 0, f"row {i + 1}", str(path))
    if replied := [f"{field!r} ({n} rows)" for field, n in fields.items() if field]:
        source.assume("reply field", ", ".join(replied))


def row_ranges(indexes: list[int]) -> str:
    """0-based positions as 1-based row ranges (``3, 10352-10394``), at most 10 ranges and a count."""
    runs: list[list[int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i + 1, i + 1])
    shown = [str(a) if a == b else f"{a}-{b}" for a, b in runs[:10]]
    return ", ".join(shown) + (f" and {len(runs) - 10} more runs" if len(runs) > 10 else "")


def _authors_gold(row: dict[str, Any], where: str, source: SourceAudit) -> dict[str, Any]:
    """The row with the gold its authors score against: ``compute_accuracy.py`` compares the letter
    read to ``answer``, so where ``answer_index`` names another option (test id 3983 in some
    releases), the released answers are scored against ``answer``, and the row is counted."""
    letter, index = row.get("answer"), row.get("answer_index")
    if isinstance(letter, str) and letter in LETTERS and isinstance(index, int) and LETTERS.index(letter) != index:
        source.anomaly(AUTHORS_GOLD, where)
        return {**row, "answer_index": LETTERS.index(letter)}
    return row


# ------------------------------------------------------------------ (c) lm-evaluation-harness --log_samples

LOG_NAME = re.compile(r"samples_(?P<task>.+?)_\d{4}-\d{2}-\d{2}T[\d\-.:]+$")
NUMERALS = tuple(str(n) for n in range(1, 27))


def task_name(path: Path) -> str:
    """The task of a ``samples_<task>_<timestamp>.jsonl`` file (lm-eval's --log_samples naming)."""
    m = LOG_NAME.match(path.stem)
    return m.group("task") if m else path.stem.removeprefix("samples_")


def task_dataset(task: str) -> str:
    """The dataset a task's docs come from. SCORE's task names put the family before it
    (``score_option_order_robustness_mmlu_pro``, ``prompt_robustness_agieval_aqua_rat``: ``mmlu_pro``,
    ``agieval_aqua_rat``), so the same question in two families' logs is one item; another task is
    its own dataset."""
    _, sep, dataset = task.partition("_robustness_")
    return dataset if sep and dataset else task


def log_datasets(paths: Iterable[Path]) -> set[str]:
    """The datasets of lm-eval logs, from their file names."""
    return {task_dataset(task_name(p)) for p in paths}


def is_lm_eval_log(path: Path) -> bool:
    if path.suffix.lower() != ".jsonl":
        return False
    for _, row in generic_rows(path):
        return "doc_id" in row and "resps" in row and "doc" in row
    return False


def _option_index(doc: dict[str, Any], key: str, at: str) -> int:
    """``doc[key]``, the index of one of the doc's options; anything else is refused with its line."""
    value, options = doc.get(key), doc.get("options")
    n = len(options) if isinstance(options, list) else 0
    if n == 0:
        raise UserError(f"{at}: doc {key!r} names one of its options, but the doc has no 'options' list")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise UserError(f"{at}: doc {key!r} must be the index of one of its {n} options (an integer from 0 to "
                        f"{n - 1}), got {_json_kind(value)}")
    return value


def _gold_moved_to(doc: dict[str, Any], gold_at: str | None, n: int, at: str) -> str:
    """The letter an option-order doc moved the gold to: ``always_same_option``, else the swapped
    ``answer_index`` (``gold_at``), else ``answer_index``; neither is refused with its line."""
    same = doc.get("always_same_option")
    if same in (None, ""):
        if gold_at is None and "answer_index" not in doc:
            raise UserError(f"{at}: an option-order doc names where the gold was moved, by 'always_same_option' or "
                            "'answer_index'; this one has neither")
        return gold_at or LETTERS[_option_index(doc, "answer_index", at)]
    # SCORE repeats a question, unswapped, for the labels past its options (gold@E of a 4-option
    # MMLU-Pro question: the published order) and scores it as per_option_accuracy_E: placed so too
    past = gold_at is not None and gold_at == LETTERS[_option_index(doc, "original_answer_index", at)]
    if not isinstance(same, str) or same not in tuple(LETTERS[:len(LETTERS) if past else n]):  # not a run of them
        raise UserError(f"{at}: doc 'always_same_option' must be one of the option letters {', '.join(LETTERS[:n])}, "
                        f"got {_json_kind(same)}")
    return same


def _labels(options_format: str | None, n: int) -> tuple[str, ...]:
    """The labels SCORE's option format shows (``{letter}``, ``{numeral}``, ``{roman_numeral}``,
    ``{lower_case_letter}``)."""
    fmt = options_format or "{letter}"
    if "{roman_numeral}" in fmt:
        return ROMAN[:n]
    if "{numeral}" in fmt:
        return NUMERALS[:n]
    if "{lower_case_letter}" in fmt:
        return tuple(string.ascii_lowercase[:n])
    return tuple(LETTERS[:n])


def _reply(row: dict[str, Any]) -> str | None:
    """The reply as generated (``resps``, before lm-eval's filters: the reader is ours)."""
    resps = row.get("resps")
    while isinstance(resps, list) and resps:
        resps = resps[0]
    return resps if isinstance(resps, str) else None


def _prompt(row: dict[str, Any]) -> str:
    args = row.get("arguments")
    if isinstance(args, dict):  # newer lm-eval: {"gen_args_0": {"arg_0": prompt, ...}}
        args = [list(a.values()) if isinstance(a, dict) else a for a in args.values()]
    while isinstance(args, list) and args:
        args = args[0]
    return args if isinstance(args, str) else ""


def _messages(row: dict[str, Any]) -> tuple[Message, ...]:
    """The prompt as asked: a chat model's (``--apply_chat_template`` with ``local-chat-completions``) is
    logged as the messages' JSON, ``[{"role": ..., "content": ...}, ...]``, read back into messages so a
    sample's ``prompt`` is the question's text, not that JSON; any other text is one user message."""
    text = _prompt(row)
    if text.startswith("[{"):
        try:
            chat = json.loads(text)
        except ValueError:
            chat = None
        if isinstance(chat, list) and chat and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in chat):
            return tuple(Message(m["role"], m["content"]) for m in chat)
    return (Message("user", text),)


def score_family(task: str) -> str | None:
    for key, family in (("option_order_robustness", "order"), ("option_format_robustness", "format"),
                        ("prompt_robustness", "prompt"), ("non_greedy_robustness", "seeds")):
        if key in task:
            return family
    return None


def seed_name(path: Path) -> str:
    """A non-greedy log's draw, from the ``seed_N`` folder SCORE's instructions write each seed's run
    to (``OUT/seed_N/<model>/samples_...jsonl``): ``seedN``, as the ``seeds`` family names its draws."""
    for folder in path.parents:
        if m := re.fullmatch(r"seed[_-]?(\d+)", folder.name):
            return f"seed{m.group(1)}"
    return "seed"


def _their_reading(row: dict[str, Any]) -> tuple[str | None, str | None] | None:
    """What lm-eval made of the reply: SCORE's tasks log, under the row's first metric,
    ``[question_id, variant, answer read, gold label, ...]`` (the non-greedy tasks without the variant:
    ``[question_id, answer read, gold label, category]``); None for other tasks."""
    names = row.get("metrics")
    name = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else ""
    value = row.get(name) if name else None
    if not isinstance(value, list) or len(value) < 4:
        return None
    at = 1 if name.startswith("non_greedy") else 2
    read, gold = value[at], value[at + 1]
    return (read if isinstance(read, str) else None), (gold if isinstance(gold, str) else None)


def _as_shown(parsed: Parsed, doc: dict[str, Any]) -> Parsed:
    """An AGIEval item whose printed letters are out of order, with its options as SCORE showed them:
    the loader sorts them by printed letter, but SCORE strips the letters and shows them by position
    (``options``, the swap undone), so a reply's label names the option at that position. The gold
    stays the option printed with the gold's letter (the authors'); SCORE's is the letter's position."""
    shown = doc.get("options")
    item = parsed.item
    if OUT_OF_ORDER not in parsed.anomalies or not isinstance(shown, list) \
            or not all(isinstance(o, str) for o in shown):
        return parsed
    shown_texts = tuple(o.strip() for o in shown)
    if sorted(shown_texts) != sorted(item.options):
        return parsed  # SCORE stripped them otherwise: the loader's reading kept
    gold = shown_texts.index(item.options[item.answer])
    anomalies = tuple(SHOWN_ORDER if a == OUT_OF_ORDER else a for a in parsed.anomalies)
    return replace(parsed, item=replace(item, options=shown_texts, answer=gold), anomalies=anomalies)


def read_lm_eval(path: Path, audit: DataAudit, model: str | None, items: dict[str, Item], *,
                 qualify: bool = False) -> Iterator[Placed]:
    """One ``samples_<task>_<timestamp>.jsonl``. SCORE's tasks name their variants in each doc:
    ``always_same_option`` (option order: ``gold@X``, the gold swapped to X as `probes.choices`
    does; the published order is recovered by swapping back), ``prompt_id`` (prompt templates:
    ``score-prompt-N``; option formats: ``score-format-N``, labels from the doc's
    ``options_format``). Other tasks are one variant, ``base``, family the task's name. Items are
    the docs (one per dataset and ``question_id`` across files: ``items`` is shared), parsed as any
    row, their anomalies counted once per item as a run counts a dataset's. ``qualify``: the call
    reads logs of several datasets, whose ids (SCORE's AGIEval id is the row index in its subset)
    collide, so each id is ``<dataset>/<question_id>``."""
    task = task_name(path)
    dataset = task_dataset(task)
    family = score_family(task) or task
    label = model or path.parent.name or "lm-eval"
    source = audit.source(str(path))
    for where, row in generic_rows(path):
        source.rows_read += 1
        doc = row.get("doc")
        if not isinstance(doc, dict):
            source.leave_out("no 'doc'", where)
            continue
        doc = dict(doc)
        at = f"{path} {where}"
        order, gold_at = None, None
        if family == "order" and "original_answer_index" in doc and "answer_index" in doc:
            swapped, original = _option_index(doc, "answer_index", at), _option_index(doc, "original_answer_index", at)
            options = list(doc["options"])
            options[swapped], options[original] = options[original], options[swapped]
            doc |= {"options": options, "answer_index": original}
            gold_at = LETTERS[swapped]
            doc.pop("answer", None)
            order = list(range(len(options)))
            order[swapped], order[original] = order[original], order[swapped]
        qid = doc.get("question_id", doc.get("id"))
        if qualify and qid not in (None, ""):
            qid = f"{dataset}/{qid}"
        default_id = f"{task}-{row.get('doc_id')}" if score_family(task) is None else f"{dataset}-{doc.get('question')}"
        try:
            parsed = parse_row({**doc, **({"id": qid} if qid is not None else {})}, f"{path}:{where}", default_id)
        except Unusable as exc:
            source.leave_out(exc.reason, where)
            continue
        parsed = _as_shown(parsed, doc)
        n = len(parsed.item.options)
        if family == "order":
            name = f"gold@{_gold_moved_to(doc, gold_at, n, at)}"
            labels = tuple(LETTERS[:n])
        elif family in ("prompt", "format"):
            name = f"score-{family}-{doc.get('prompt_id', 0)}"
            labels = _labels(doc.get("options_format"), n)
        elif family == "seeds":
            name = seed_name(path)
            labels = tuple(LETTERS[:n])
        else:
            name, labels = "base", tuple(LETTERS[:n])
        item = items.get(parsed.item.id)
        if item is None:  # first seen: what the loader found odd in it, once per item as a run's audit
            item = items[parsed.item.id] = parsed.item
            for kind in parsed.anomalies:
                source.anomaly(kind, where)
        elif (item.question, item.options, item.answer) != (parsed.item.question, parsed.item.options,
                                                           parsed.item.answer):
            source.leave_out(ITEM_DIFFERS, where)  # placed on the first, it was scored against another question
            continue
        if family == "order" and LETTERS.index(name[-1]) >= n:
            source.anomaly(PAST_OPTIONS, where)
        variant = Variant(item.id, family, name, labels, tuple(order) if order else tuple(range(n)),
                          _messages(row))
        source.rows_used += 1
        yield Placed(label, item, variant, _reply(row), 0, where, str(path), dataset, _their_reading(row))
