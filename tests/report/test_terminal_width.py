"""Every suite's terminal tables on an 80-column terminal: no cell cut with an ellipsis, no table
line wider than the terminal, and every number that a wide terminal shows shown whole (issue 34:
"accura…", "0.2…")."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from robusteval.report.terminal import Table, transposed
from robusteval.results.records import run_record
from robusteval.suites import get_suite
from robusteval.suites.base import SuiteResult

CASES = sorted((Path(__file__).parent.parent / "fixtures" / "streaming").glob("*.json"))
NUMBER = re.compile(r"-?\d+\.\d+")
BOX = tuple("┏┃┡│├└┌┗╇┼┠")


def _summary(case: Path, width: int) -> str:
    results = json.loads(case.read_text())["results"]
    results = json.loads(results) if isinstance(results, str) else results
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, markup=False, emoji=False, highlight=False, soft_wrap=True)
    record = run_record(results)
    get_suite(results["suite"]).print_summary(console, SuiteResult(metrics=record.metrics, samples=[],
                                                                   extra=record.extra))
    return buffer.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_tables_fit_80_columns_with_every_number_whole(case):
    narrow, wide = _summary(case, 80), _summary(case, 250)
    assert "…" not in narrow
    assert all(len(line) <= 80 for line in narrow.splitlines() if line.startswith(BOX))
    assert Counter(NUMBER.findall(narrow)) == Counter(NUMBER.findall(wide))


def test_a_table_too_wide_for_its_numbers_is_drawn_transposed():
    table = Table(title="t")
    for name in ("model", *(f"metric {i}" for i in range(12))):
        table.add_column(name)
    table.add_row("m", *(f"0.{i:03d} [0.100, 0.900]" for i in range(12)))
    buffer = io.StringIO()
    Console(file=buffer, width=80).print(table)
    lines = buffer.getvalue().splitlines()
    assert any("metric 11" in line and "0.011 [0.100, 0.900]" in line for line in lines)  # one line per column
    assert all(len(line) <= 80 for line in lines)
    assert transposed(table).row_count == 13
