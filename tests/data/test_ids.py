"""data/ids.py: an item id is unique in its dataset, at every loader that takes ids from a file."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from robusteval.cli import main
from robusteval.data import consistency, hallucigen, math, mcq, persona, qa
from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.ids import LATER_ROW, RENAMED, SAME_ROW, unique_ids
from robusteval.errors import UserError

# The reliability README's B2 example: q0 given to two different questions (lines 1 and 5).
DUPIDS = [
    {"id": "q0", "question": "What is 2+2?", "choices": ["3", "4", "5", "6"], "answer": "B"},
    {"id": "q1", "question": "Which planet is largest?", "choices": ["Mars", "Venus", "Jupiter", "Earth"],
     "answer": "C"},
    {"id": "q2", "question": "What is the capital of France?", "choices": ["Paris", "Rome", "Madrid", "Berlin"],
     "answer": "A"},
    {"id": "q3", "question": "Water boils at sea level at?", "choices": ["50 C", "90 C", "120 C", "100 C"],
     "answer": "D"},
    {"id": "q0", "question": "What colour is the sky on a clear day?", "choices": ["Green", "Blue", "Red", "Black"],
     "answer": "B"},
]


@pytest.fixture
def dupids(tmp_path):
    path = tmp_path / "dupids.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in DUPIDS))
    return path


def test_two_different_rows_with_one_id_are_refused_naming_both_lines(dupids):
    with pytest.raises(UserError, match=r"id 'q0' names two different rows \(line 1 and line 5\).*--duplicate-ids"):
        mcq.load_items(str(dupids))


def test_data_check_refuses_the_repeated_id_in_one_line(dupids, capsys):
    assert main(["data", "check", str(dupids)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "id 'q0' names two different rows (line 1 and line 5)" in err
    assert "Traceback" not in err


def test_duplicate_ids_first_keeps_the_first_row_and_says_so(dupids, capsys):
    assert main(["data", "check", str(dupids), "--duplicate-ids", "first"]) == 0
    out = capsys.readouterr().out
    assert f"{dupids}: 5 rows read, 4 used" in out and f"left out 1: {LATER_ROW} (e.g. line 5)" in out
    items = mcq.load_items(str(dupids), duplicate_ids="first")
    assert [i.id for i in items] == ["q0", "q1", "q2", "q3"] and items[0].question == "What is 2+2?"


def test_duplicate_ids_rename_keeps_both_apart(dupids):
    audit = DataAudit()
    items = mcq.load_items(str(dupids), duplicate_ids="rename", audit=audit)
    assert [i.id for i in items] == ["q0", "q1", "q2", "q3", "q0~2"]
    assert items[-1].question == "What colour is the sky on a clear day?"
    assert audit.sources[0].anomalies[RENAMED] == 1


def test_an_exact_repeat_with_its_id_is_one_item(tmp_path):
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in [*DUPIDS[:4], DUPIDS[1]]))
    audit = DataAudit()
    items = mcq.load_items(str(path), audit=audit)
    assert [i.id for i in items] == ["q0", "q1", "q2", "q3"]
    assert audit.sources[0].left_out[SAME_ROW] == 1 and audit.sources[0].rows_read == 5


def test_rows_without_ids_keep_their_line_ids(tmp_path):
    path = tmp_path / "noids.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "id"}) + "\n" for row in DUPIDS))
    assert len(mcq.load_items(str(path))) == 5


@dataclass(frozen=True)
class Row:
    id: str
    text: str
    source: str = ""


def test_rename_never_takes_an_id_a_later_row_or_an_earlier_rename_holds():
    rows = [Row("a", "x", "f:1"), Row("a~2", "y", "f:2"), Row("a", "z", "f:3"), Row("a", "w", "f:4")]
    audit = SourceAudit("f")
    assert [r.id for r in unique_ids(rows, "f", rule="rename", audit=audit)] == ["a", "a~2", "a~3", "a~4"]
    assert audit.anomalies[RENAMED] == 2


def test_an_unknown_rule_is_refused():
    with pytest.raises(UserError, match="--duplicate-ids keep: expected one of error, first, rename"):
        unique_ids([Row("a", "x")], "f", rule="keep")


def test_every_loader_that_takes_ids_from_a_file_refuses_a_repeated_id(tmp_path):
    sets = tmp_path / "sets.jsonl"
    sets.write_text('{"id": "s", "variants": ["a", "b"]}\n{"id": "s", "variants": ["c", "d"]}\n')
    with pytest.raises(UserError, match=r"id 's' names two different rows"):
        consistency.load_prompt_sets(str(sets))
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"id": "m", "question": "1+1?", "answer": "2"}\n'
                        '{"id": "m", "question": "2+2?", "answer": "4"}\n')
    with pytest.raises(UserError, match=r"id 'm' names two different rows \(line 1 and line 2\)"):
        math.load_math(str(problems))
    questions = tmp_path / "qa.jsonl"
    questions.write_text('{"id": "t", "question": "Who?", "answer": "Ann"}\n'
                         '{"id": "t", "question": "Where?", "answer": "Oslo"}\n')
    with pytest.raises(UserError, match=r"id 't' names two different rows \(line 1 and line 2\)"):
        qa.load_qa(str(questions))
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"id": "h", "source": "s"}\n{"id": "h", "source": "t"}\n')
    with pytest.raises(UserError, match=r"id 'h' names two different rows \(line 1 and line 2\)"):
        hallucigen.load_items(str(pairs), need_pairs=False)
    people = tmp_path / "people.csv"
    people.write_text("id,name,gender,description\np1,Ann,female,a\np2,Bo,male,b\np1,Cy,male,c\np3,Di,female,d\n")
    with pytest.raises(UserError, match=r"id 'p1' names two different rows \(line 2 and line 4\)"):
        persona.load_population(str(people))
