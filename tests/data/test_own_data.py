"""Own data as people have it (issue 34): capitalised headers, MMLU's headerless CSVs, answers
written out as the option's text, ARC's hub and original layouts, and any other layout through
``--columns``; each read as the same items, with the audit saying what was assumed."""

from __future__ import annotations

import json

import pytest

from robusteval.data.audit import DataAudit
from robusteval.data.mcq import ANSWER_AS_TEXT, load_items, parse_columns
from robusteval.errors import UserError

QUESTION = "Which planet is closest to the Sun?"
OPTIONS = ("Mercury", "Venus", "Earth", "Mars")


def _check(items, answer: int = 0) -> None:
    assert len(items) == 2
    first = items[0]
    assert first.question == QUESTION and first.options == OPTIONS and first.answer == answer


def _load(path, **kw):
    audit = DataAudit()
    return load_items(str(path), audit=audit, **kw), audit.source(str(path))


def test_a_capitalised_csv_header(tmp_path):
    path = tmp_path / "caps.csv"
    path.write_text(f"Question,A,B,C,D,Answer,Subject\n{QUESTION},{','.join(OPTIONS)},A,astronomy\n"
                    "What is 2+2?,3,4,5,6,B,math\n")
    items, _ = _load(path)
    _check(items)
    assert items[0].category == "astronomy" and items[1].answer == 1


def test_mmlu_headerless_csv(tmp_path):
    path = tmp_path / "astronomy_test.csv"
    path.write_text(f'"{QUESTION}",{",".join(OPTIONS)},A\n"What is 2+2?",3,4,5,6,B\n')
    items, audit = _load(path)
    _check(items)
    assert "no header line" in audit.as_dict()["assumed"]["columns"]


def test_answers_given_as_the_option_text(tmp_path):
    path = tmp_path / "text.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (
        {"question": QUESTION, "choices": list(OPTIONS), "answer": "mercury "},
        {"question": "What is 2+2?", "choices": ["3", "4", "5", "6"], "answer": "B"},
        {"question": "Unknown?", "choices": ["x", "y"], "answer": "z"}, )) + "\n")
    items, audit = _load(path)
    _check(items)
    assert audit.anomalies[ANSWER_AS_TEXT] == 1 and sum(audit.left_out.values()) == 1


def test_arc_hub_and_original_layouts(tmp_path):
    hub = tmp_path / "arc.jsonl"
    hub.write_text("\n".join(json.dumps(r) for r in (
        {"id": "Mercury_1", "question": QUESTION, "choices": {"text": list(OPTIONS), "label": ["A", "B", "C", "D"]},
         "answerKey": "A"},
        {"id": "Mercury_2", "question": "What is 2+2?", "choices": {"text": ["3", "4", "5", "6"],
                                                                     "label": ["1", "2", "3", "4"]},
         "answerKey": "2"})) + "\n")
    items, _ = _load(hub)
    _check(items)
    assert items[0].id == "Mercury_1" and items[1].answer == 1
    original = tmp_path / "arc-original.jsonl"
    original.write_text("\n".join(json.dumps({"id": f"o{i}", "answerKey": key, "question": {
        "stem": stem, "choices": [{"text": t, "label": label} for t, label in zip(texts, "ABCD")]}})
        for i, (stem, texts, key) in enumerate(((QUESTION, OPTIONS, "A"), ("What is 2+2?", "3456", "B")))) + "\n")
    items, _ = _load(original)
    _check(items)


def test_any_layout_through_columns(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(f"Prompt,Opt1,Opt2,Opt3,Opt4,Gold\n{QUESTION},{','.join(OPTIONS)},Mercury\n"
                    "What is 2+2?,3,4,5,6,1\n")
    with pytest.raises(UserError, match="--columns"):
        _load(path)  # refused, with the hint
    columns = parse_columns("question=Prompt,choices=Opt1|Opt2|Opt3|Opt4,answer=Gold")
    items, audit = _load(path, columns=columns)
    _check(items)
    assert audit.as_dict()["assumed"]["columns"].startswith("--columns question=Prompt")
    with pytest.raises(UserError, match="has no column 'Opt5'; its columns are 'Prompt'"):
        _load(path, columns=parse_columns("question=Prompt,choices=Opt1|Opt5,answer=Gold"))


@pytest.mark.parametrize("text", ["question=Q", "question=Q,choices=A,answer=G", "quest=Q,choices=A|B,answer=G"])
def test_bad_columns_are_user_errors(text):
    with pytest.raises(UserError, match="--columns"):
        parse_columns(text)
