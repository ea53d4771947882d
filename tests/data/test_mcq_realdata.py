"""Conformance of the mcq loader on the real releases in ../shared/realdata (AGIEval, MMLU-Pro).

Every expectation here is computed from the raw file by a few plain lines, independently of the
loader: which option the source's label names (by its printed letter), how many rows are usable,
and how many rows carry each quirk.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from robusteval.data import mcq
from robusteval.data.audit import DataAudit

AGIEVAL = ("aqua-rat", "logiqa-en", "lsat-lr", "sat-math")
LETTER = re.compile(r"\(([A-E])\)|([A-E])[?.] |([A-E]) ")


def raw_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def printed(option: str, position: int) -> tuple[str | None, str]:
    """(printed letter, text without it); a bare "A " counts only at its own position."""
    m = LETTER.match(option)
    if not m or (m.group(3) and m.group(3) != "ABCDE"[position]):
        return None, option.strip()
    return next(g for g in m.groups() if g), option[m.end():].strip()


def label_option(row: dict) -> str:
    """The text of the option the row's label names: printed with that letter, or (where no
    option prints it) the one at the letter's place."""
    parsed = [printed(o, i) for i, o in enumerate(row["options"])]
    named = [text for letter, text in parsed if letter == row["label"]]
    return named[0] if named else parsed["ABCDE".index(row["label"])][1]


def load(path: Path) -> tuple[list, object]:
    audit = DataAudit()
    items = mcq.load_items(str(path), audit=audit)
    return items, audit.source(str(path))


@pytest.mark.parametrize("name", AGIEVAL)
def test_agieval_every_gold_is_the_option_the_label_prints(realdata, name):
    path = realdata / "agieval" / f"{name}.jsonl"
    rows = raw_rows(path)
    items, audit = load(path)
    usable = [r for r in rows if r.get("label") and len(r["options"]) >= 2]
    assert len(items) == len(usable) == audit.rows_used and audit.rows_read == len(rows)
    for row, item in zip(rows, items):
        assert item.options[item.answer] == label_option(row), item.source
        # only the printed letter is stripped: every option text ends one raw option
        assert all(any(raw.strip().endswith(text) for raw in row["options"]) for text in item.options)
        assert not any(re.match(r"\([A-E]\)", text) for text in item.options)


def test_logiqa_row_115_scores_against_the_printed_letter(realdata):
    """(A) (C) (B) (D) printed; label B: the gold is the option printed (B), third in the list."""
    items, _ = load(realdata / "agieval" / "logiqa-en.jsonl")
    item = items[114]
    assert item.options[item.answer] == "Some northerners are not workers."
    assert item.options == ("Some northerners are workers.", "Some northerners are not workers.",
                            "Some workers are Northerners.", "Some workers are not Northerners.")


def test_logiqa_letters_without_parentheses_are_stripped(realdata):
    items, _ = load(realdata / "agieval" / "logiqa-en.jsonl")
    assert items[2].options == ("No dangshen", "No Shouwu", "有 白 术", "不 白 术")  # "A No dangshen", ...
    assert items[10].options[0].startswith("Many Chinese people")  # "A? Many Chinese ..."
    assert items[15].options[0] == "A is a male doctor;"  # "(A)A is ...": A is a name, not a second label


def expected_anomalies(rows: list[dict]) -> Counter:
    """The quirks of AGIEval rows, counted once per row, by plain means."""
    out: Counter = Counter()
    seen: dict[str, set] = {}
    for row in rows:
        parsed = [printed(o, i) for i, o in enumerate(row["options"])]
        letters = [letter for letter, _ in parsed]
        texts = [text for _, text in parsed]
        if any(letter and not o.startswith("(") for letter, o in zip(letters, row["options"])):
            out[mcq.LOOSE_LETTERS] += 1
        if None in letters:
            out[mcq.NO_LETTER] += 1
        present = [letter for letter in letters if letter]
        if present != sorted(present):
            out[mcq.OUT_OF_ORDER] += 1
        gold = label_option(row)
        if len(set(texts)) < len(texts):
            out[mcq.REPEATED_GOLD_TEXT if texts.count(gold) > 1 else mcq.REPEATED_TEXT] += 1
        question = f"{row['passage']}\n\n{row['question']}".strip() if row.get("passage") else row["question"]
        if question in seen and tuple(sorted(texts)) not in seen[question]:
            out[mcq.OTHER_OPTIONS] += 1
        seen.setdefault(question, set()).add(tuple(sorted(texts)))
    return out


@pytest.mark.parametrize("name", AGIEVAL)
def test_agieval_anomalies_are_counted(realdata, name):
    path = realdata / "agieval" / f"{name}.jsonl"
    _, audit = load(path)
    assert audit.anomalies == expected_anomalies(raw_rows(path))
    assert not audit.left_out


def test_agieval_counts_match_the_issue(realdata):
    """The figures seen by hand: 19 logiqa-en rows out of order (12 of them with the gold at B or
    C, the rows positions would score wrongly), aqua-rat's 4 rows repeating the gold's text."""
    logiqa = raw_rows(realdata / "agieval" / "logiqa-en.jsonl")
    _, audit = load(realdata / "agieval" / "logiqa-en.jsonl")
    assert audit.anomalies[mcq.OUT_OF_ORDER] == 19
    assert "line 115" in audit.examples[mcq.OUT_OF_ORDER]
    wrong_by_position = [n for n, row in enumerate(logiqa, 1) if (at := "ABCD".index(row["label"]))
                         is not None and printed(row["options"][at], at)[0] not in (row["label"], None)]
    assert len(wrong_by_position) == 12 and 115 in wrong_by_position
    _, aqua = load(realdata / "agieval" / "aqua-rat.jsonl")
    assert aqua.anomalies[mcq.REPEATED_GOLD_TEXT] == 4 and aqua.anomalies[mcq.REPEATED_TEXT] == 3
    assert aqua.examples[mcq.REPEATED_GOLD_TEXT][0] == "line 118"


def test_mmlu_pro_sample_loads_every_row_with_its_gold(realdata):
    path = realdata / "mmlu-pro" / "test-sample-400.jsonl"
    rows = raw_rows(path)
    items, audit = load(path)
    assert len(items) == len(rows) == audit.rows_used == audit.rows_read == 400
    for row, item in zip(rows, items):
        assert item.id == str(row["question_id"]) and item.category == row["category"]
        assert item.options == tuple(o.strip() for o in row["options"])
        assert item.options[item.answer] == row["options"][row["answer_index"]].strip()
        assert item.options[item.answer] == row["options"]["ABCDEFGHIJ".index(row["answer"])].strip()
    assert Counter(len(i.options) for i in items) == Counter(len(r["options"]) for r in rows)
    repeated = Counter(r["question"] for r in rows)
    assert audit.anomalies == Counter({mcq.OTHER_OPTIONS: sum(n - 1 for n in repeated.values())})


def test_mmlu_pro_quirks_of_the_full_split(realdata):
    """Our fixture reproduces what the 400-row sample lacks: rows with 1 option (left out, counted),
    with 2 to 9 options (kept, fewer order variants), an answer outside the options, a null answer
    beside a good answer_index, and 'answer' disagreeing with 'answer_index'."""
    path = Path(__file__).parents[1] / "fixtures" / "mmlu_pro_quirks.jsonl"
    rows = raw_rows(path)
    items, audit = load(path)
    assert audit.rows_read == len(rows) == 9
    assert dict(audit.left_out) == {mcq.FEW_OPTIONS: 2, mcq.ANSWER_OUTSIDE: 1}
    assert audit.examples[mcq.FEW_OPTIONS] == ["line 2", "line 6"]
    assert [len(i.options) for i in items] == [10, 9, 2, 3, 10, 4]
    assert audit.anomalies == Counter({mcq.ANSWER_FIELDS_DISAGREE: 1})
    disagree = next(i for i in items if i.id == "9008")
    assert disagree.answer == 3  # answer_index wins over answer
    null_answer = next(i for i in items if i.id == "9007")
    assert null_answer.answer == 1


def test_agieval_quirks_of_the_full_release():
    """sat-en style: the same passage, question and options twice with different labels (left out,
    both), an exact repeat (kept, counted); logiqa style: an option printed with two letters."""
    path = Path(__file__).parents[1] / "fixtures" / "agieval_quirks.jsonl"
    items, audit = load(path)
    assert audit.rows_read == 6 and audit.rows_used == len(items) == 4
    assert dict(audit.left_out) == {mcq.CONTRADICTION: 2}
    assert audit.examples[mcq.CONTRADICTION] == ["line 1", "line 2"]
    assert audit.anomalies == Counter({mcq.EXACT_REPEAT: 1, mcq.TWO_LETTERS: 1, mcq.LOOSE_LETTERS: 1})
    two = next(i for i in items if "herbs" in i.question)
    assert two.options == ("No ginseng", "No rhubarb", "Both", "Neither")
    assert two.options[two.answer] == "No rhubarb"


MMLU_PRO_OUTPUTS = ("Meta-Llama-3_1-8B-Instruct", "Mistral-7B-Instruct-v0.2", "gemma-7b")


def full_split_rows(realdata: Path) -> list[dict]:
    """The whole 12,032-row test split, as one of the released answer zips holds it."""
    import zipfile

    path = realdata / "mmlu-pro" / "outputs" / f"model_outputs_{MMLU_PRO_OUTPUTS[2]}_5shots.zip"
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(z.namelist()[0]))


def test_mmlu_pro_rows_whose_options_all_start_with_a_parenthesised_letter_keep_answer_index(realdata, tmp_path):
    """Ids 95, 255 and 6894 print "(A) ..." in every option (6894 even out of order: "(G)", "(B)",
    ...); they have ``answer_index``, which names the option as listed: none is dropped or re-sorted."""
    rows = {r["question_id"]: r for r in full_split_rows(realdata)}
    odd = [rows[i] for i in (95, 255, 6894)]
    assert all(all(re.match(r"\s*\([A-P]\)", o) for o in r["options"]) for r in odd)
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in odd), encoding="utf-8")
    items, audit = load(path)
    assert [i.id for i in items] == ["95", "255", "6894"] and not audit.left_out
    for row, item in zip(odd, items):
        assert item.options == tuple(o.strip() for o in row["options"])  # as listed, letters kept
        assert item.answer == row["answer_index"]
        assert item.options[item.answer] == row["options"]["ABCDEFGHIJ".index(row["answer"])].strip()


def test_mmlu_pro_full_split_every_gold_is_answer_index(realdata, tmp_path):
    rows = full_split_rows(realdata)
    path = tmp_path / "full.jsonl"
    path.write_text("".join(json.dumps({k: r[k] for k in ("question_id", "question", "options", "answer",
                                                            "answer_index", "category")}) + "\n" for r in rows),
                    encoding="utf-8")
    items, audit = load(path)
    usable = [r for r in rows if len(r["options"]) >= 2]
    assert audit.rows_read == len(rows) == 12032
    assert dict(audit.left_out) == ({mcq.FEW_OPTIONS: len(rows) - len(usable)} if len(usable) < len(rows) else {})
    assert [i.id for i in items] == [str(r["question_id"]) for r in usable]
    assert all(i.answer == r["answer_index"] and i.options == tuple(o.strip() for o in r["options"])
               for i, r in zip(items, usable))
