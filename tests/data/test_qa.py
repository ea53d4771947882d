"""Question sets for the tree suite: PopQA-schema files, stratified sampling, the offline sets."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from robusteval.data.qa import QAItem, load_qa, squad_rows, stratified_sample
from robusteval.errors import UserError

POPQA = Path(__file__).parent.parent / "fixtures" / "popqa_small.jsonl"


def test_popqa_schema_file():
    items, total = load_qa(str(POPQA))
    assert total == 6
    first = items[0]
    assert first == QAItem("101", "What is Marla Quenby's occupation?",
                           ("lighthouse keeper", "keeper of the lighthouse"),
                           subject="Marla Quenby", popularity=45.0, prop="occupation", source=f"{POPQA}:1")


def test_stratified_sample_spreads_over_prop():
    items, total = load_qa(str(POPQA), limit=3, seed=0)
    assert total == 6 and len(items) == 3
    assert Counter(i.prop for i in items) == {"occupation": 1, "country": 1, "genre": 1}
    assert load_qa(str(POPQA), limit=3, seed=0)[0] == items  # seeded
    many = [QAItem(str(i), "q?", ("a",), prop="big" if i < 8 else "small") for i in range(10)]
    picked = stratified_sample(many, 6, seed=1)
    assert Counter(i.prop for i in picked) == {"big": 4, "small": 2}  # the small stratum is used up
    assert len({i.id for i in picked}) == 6


def test_bad_rows_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Who?", "answers": ["A"]}\n{"question": "What?"}\n')
    with pytest.raises(UserError, match=r"bad.jsonl:2: no gold answer"):
        load_qa(str(bad))
    bad.write_text('{"question": "Who?", "possible_answers": "[not json"}\n')
    with pytest.raises(UserError, match="not valid JSON"):
        load_qa(str(bad))
    bad.write_text('{"question": "Who?", "answer": "A", "s_pop": "lots"}\n')
    with pytest.raises(UserError, match="'s_pop' must be a finite number"):
        load_qa(str(bad))
    for text in ("nan", "inf", "-Infinity"):  # float() reads them; a popularity they are not
        bad.write_text(f'{{"question": "Who?", "answer": "A", "s_pop": "{text}"}}\n')
        with pytest.raises(UserError, match=rf"bad.jsonl:1: 's_pop' must be a finite number, got '{text}'"):
            load_qa(str(bad))
    with pytest.raises(UserError, match="not a known dataset"):
        load_qa(str(tmp_path / "missing.jsonl"))


def test_csv_with_plain_answer(tmp_path):
    f = tmp_path / "qa.csv"
    f.write_text("question,answer\nWhere is Hesk?,the north sea\n")
    items, _ = load_qa(str(f))
    assert items[0].answers == ("the north sea",) and items[0].subject is None and items[0].id == "qa-0"


def test_squad_offline_questions_and_paragraphs():
    rows = list(squad_rows())
    assert len(rows) == 1000
    item, doc = rows[0]
    assert item.subject == "Harvard University" and item.answers[0] == "23 years"
    assert "Harvard-Yale Regatta" in doc.text and doc.title == "Harvard University"
    assert all(i.answers and i.question for i, _ in rows)


@pytest.mark.parametrize("name, n", [("nq-open", 3610), ("triviaqa", 7993)])
def test_offline_open_domain_sets(name, n):
    items, total = load_qa(name, limit=5, seed=0)
    assert total == n and len(items) == 5
    assert all(i.answers for i in items)
    if name == "triviaqa":  # aliases and the value
        full = {i.id: i for i in load_qa(name)[0]}
        assert "Sunset Boulevard" in full["tc_33"].answers and "Sunset Blvd" in full["tc_33"].answers


def test_popqa_from_the_hub_needs_datasets():
    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(UserError, match="robusteval\\[hub\\]"):
            load_qa("popqa")
    else:
        pytest.skip("datasets is installed; the hub itself is not reachable from tests")


def test_the_audit_counts_the_set_and_the_sample():
    from robusteval.data.audit import SourceAudit

    audit = SourceAudit(str(POPQA))
    items, total = load_qa(str(POPQA), limit=3, seed=1, audit=audit)
    assert (audit.rows_read, audit.rows_used) == (total, len(items)) == (6, 3)
    assert audit.notes == ["a seeded sample (--limit 3, seed 1) of the 6 questions, stratified by relation (prop)"]
