"""Atomic writes and newline-only JSONL reading (robusteval/files.py)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys

import pytest

from robusteval.errors import UserError
from robusteval.files import atomic_write, read_jsonl

SEPARATORS = "\u2028\u2029\x85\x1c\x1d\x1e\x0b\x0c"  # all of them split str.splitlines()


def test_read_jsonl_keeps_unicode_line_separators_inside_strings(tmp_path):
    rows = [{"response": f"one{c}two", "n": n} for n, c in enumerate(SEPARATORS)]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert read_jsonl(path) == rows


def test_read_jsonl_names_file_and_line_of_a_broken_row(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n')
    with pytest.raises(UserError, match=r"samples.jsonl:3: not valid JSON"):
        read_jsonl(path)


def test_atomic_write_replaces_whole_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "report.html"
    atomic_write(target, "old")
    atomic_write(target, "new ü")
    atomic_write(tmp_path / "p.png", b"\x89PNG")
    assert target.read_text(encoding="utf-8") == "new ü" and (tmp_path / "p.png").read_bytes() == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.png", "report.html"]


def _limit_file_size():  # in the child: files may not grow past 20 kB, as on a full disk
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.slow
def test_a_failed_report_write_keeps_the_previous_report_whole(real_mcq_run, tmp_path):
    """`robusteval report` on a full disk: one clear error, and report.html is the old one, not half a page."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(real_mcq_run, run)
    before = (run / "report.html").read_bytes()
    assert len(before) > 20_000 and before.rstrip().endswith(b"</html>")
    proc = subprocess.run([sys.executable, "-m", "robusteval.cli", "report", str(run)], capture_output=True,
                          text=True, timeout=300, preexec_fn=_limit_file_size)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "could not write" in proc.stderr
    assert (run / "report.html").read_bytes() == before
    assert not [p.name for p in run.rglob("*.tmp")]


def test_csv_with_a_repeated_header_column_is_refused_naming_both(tmp_path):
    from robusteval.files import csv_rows

    text = "item,variant,correct,correct\nq1,A.,1,0\n"
    with pytest.raises(UserError, match=r"g.csv:1: the header names column 'correct' twice \(columns 3 and 4\)"):
        list(csv_rows(text, "g.csv"))
    assert [row for _, row in csv_rows("a,b,,\n1,2,,\n", "ok.csv")] == [{"a": "1", "b": "2", "": ""}]  # blank: no name


def test_a_score_grid_and_a_data_csv_with_a_repeated_column_end_in_one_line(tmp_path, capsys):
    from robusteval.cli import main

    grid = tmp_path / "grid.csv"
    grid.write_text("item,variant,correct,correct\nq1,A.,1,0\nq1,B.,0,0\nq2,A.,1,0\nq2,B.,1,0\n")
    assert main(["score", str(grid), "--run-id", "g", "--out", str(tmp_path / "runs"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "column 'correct' twice" in err and not (tmp_path / "runs" / "g").exists()
    data = tmp_path / "dupans.csv"
    data.write_text("question,A,B,C,D,answer,answer\nQ1?,w,x,y,z,A,B\nQ2?,w,x,y,z,B,C\n")
    assert main(["data", "check", str(data)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{data}:1: the header names column 'answer' twice (columns 6 and 7)" in err


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_json_data_with_nan_or_infinity_is_refused_naming_the_line(tmp_path, token):
    from robusteval.files import parse_json

    with pytest.raises(UserError, match=rf"^d.json:3: {token} is not a finite number"):
        parse_json(f'{{\n "a": "NaN in a string is text",\n "b": [1, {token}]\n}}', "d.json")
    assert parse_json(f'{{"b": {token}}}', "ours", finite=False)["b"] != 0  # our own files: read as written


def test_nan_options_in_an_mcq_file_are_refused_with_the_line(tmp_path, capsys):
    from robusteval.cli import main

    path = tmp_path / "nan.jsonl"
    path.write_text('{"id":"n1","question":"Pick one?","choices":[NaN, Infinity, 1, 2],"answer":"C"}\n'
                    '{"id":"n2","question":"Pick two?","choices":["a","b","c","d"],"answer":"A"}\n')
    assert main(["data", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{path}:1: NaN is not a finite number" in err
