"""A correctness grid from any source: one row per (model, item, variant) cell, in long form.

A grid is what a paper's release, a spreadsheet or another tool can give when it keeps no reply
text: whether each question was answered correctly under each variant. It feeds every measure
that needs only correctness (accuracy per variant and category, spread, worst and best case,
drop rates, PromptSensiScore, MaxP/AvgP/CPS); given the option each cell chose (``answer``), the
consistency and flip rates too. ``robusteval score GRID`` reads it with `load_grid`; so does any
other command that checks figures against a grid (``--budget``'s estimates).

Columns (CSV/TSV header, or JSONL keys), only the first three required:

``item`` (or ``item_id``), ``variant``, ``correct`` (1/0, true/false, yes/no);
``model`` (default: the file's name or ``--model``; a blank cell in the column is refused, as it
would make a model of the file's name), ``family`` (default ``grid``), ``category``,
``answer`` (the option chosen, any text or number; empty/null: no readable answer, an invalid
reply), ``valid`` (0/false: the reply could not be read; counted wrong and invalid),
``reference`` (1/true: this variant is the question's unperturbed one; without the column the
variant names decide, as in a run: the base style, the base template, the original text).

Nothing is dropped silently: a row without an item, a variant or a readable ``correct``, and a
repeated (model, family, item, variant) cell, are counted in the data audit by reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.data.audit import SourceAudit
from robusteval.errors import UserError
from robusteval.files import csv_rows, read_text
from robusteval.scoring.replies import generic_rows, scalar_fields

GRID_FAMILY = "grid"
TRUE = frozenset({"1", "true", "yes", "y", "t", "correct", "1.0"})
FALSE = frozenset({"0", "false", "no", "n", "f", "wrong", "incorrect", "0.0"})

NO_ITEM = "no item id"
NO_VARIANT = "no variant"
BAD_CORRECT = "'correct' neither true nor false"
REPEATED_CELL = "the same (model, family, item, variant) cell again: the first kept"


@dataclass(frozen=True)
class GridCell:
    """One cell of a correctness grid. ``answer`` is the option chosen as the source names it (None:
    not given, or ``valid`` False); ``answer_known`` whether the source gives chosen options at all."""

    model: str
    family: str
    item_id: str
    variant: str
    correct: bool
    valid: bool = True
    answer: str | None = None
    answer_known: bool = False
    category: str | None = None
    reference: bool | None = None  # None: the variant's name decides
    where: str = ""


def load_grid(path: str | Path, audit: SourceAudit, *, model: str | None = None) -> list[GridCell]:
    """Every usable cell of the grid file ``path`` (CSV, TSV or JSONL), in file order; rows left out
    and repeated cells are counted in ``audit``. A file with no usable cell stops with one message."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"{path}: no such file")
    default_model = model or p.stem
    cells: list[GridCell] = []
    seen: set[tuple[str, str, str, str]] = set()
    for where, row in _rows(p):
        audit.rows_read += 1
        scalar_fields(row, tuple(row), f"{path} {where}")  # a cell is text or a number, never a list or object
        item = _text(row.get("item", row.get("item_id")))
        variant = _text(row.get("variant"))
        correct = _truth(row.get("correct"))
        reason = NO_ITEM if item is None else NO_VARIANT if variant is None else BAD_CORRECT if correct is None \
            else None
        if reason is not None or item is None or variant is None or correct is None:
            audit.leave_out(reason or BAD_CORRECT, where)
            continue
        if model is None and "model" in row and _text(row["model"]) is None:
            raise UserError(f"{path} {where}: the 'model' cell is blank; name the model in every row, or give "
                            "--model for the whole file")
        cell_model = model or _text(row.get("model")) or default_model
        family = _text(row.get("family")) or GRID_FAMILY
        key = (cell_model, family, item, variant)
        if key in seen:
            audit.leave_out(REPEATED_CELL, where)
            continue
        seen.add(key)
        valid = _truth(row.get("valid"))
        answer_known = "answer" in row
        answer = _text(row.get("answer"))
        valid = (True if valid is None else valid) and not (answer_known and answer is None)
        answer = answer if valid else None
        reference = _truth(row.get("reference")) if "reference" in row else None
        cells.append(GridCell(cell_model, family, item, variant, correct and valid, valid, answer,
                              answer_known, _text(row.get("category")), reference, where))
    audit.rows_used = len(cells)
    if not cells:
        raise UserError(f"{path}: no usable grid rows among {audit.rows_read} (need columns item, variant, "
                        f"correct; {'; '.join(f'{n} x {r}' for r, n in audit.left_out.most_common(3))})")
    return cells


def load_variant_texts(path: str | Path) -> dict[str, str]:
    """``score GRID --budget F --covariates text --variant-texts FILE``: each variant's text (its
    prompt template's, as a run embeds it), from a CSV/TSV/JSONL file of ``variant`` and ``text``.
    A row without either, or a variant given two different texts, stops with one message naming
    its line: a text silently dropped would change the estimate without saying so."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"--variant-texts {path}: no such file")
    texts: dict[str, str] = {}
    for where, row in _rows(p):
        variant, text = _text(row.get("variant")), row.get("text")
        if variant is None or not isinstance(text, str) or not text.strip():
            raise UserError(f"{path} {where}: need a variant and its text (columns variant, text)")
        if texts.setdefault(variant, text) != text:
            raise UserError(f"{path} {where}: variant {variant!r} given a second, different text")
    if not texts:
        raise UserError(f"{path}: no variant texts (need columns variant, text)")
    return texts


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if path.suffix.lower() in (".csv", ".tsv"):
        text = read_text(path)
        for n, row in csv_rows(text, path, "\t" if path.suffix.lower() == ".tsv" else ","):
            yield f"line {n}", {k.strip().lower(): v for k, v in row.items() if k}
        return
    yield from generic_rows(path)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower() if value is not None else ""
    return True if text in TRUE else False if text in FALSE else None
