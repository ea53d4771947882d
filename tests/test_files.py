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
