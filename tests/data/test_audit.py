"""The data audit: counts, examples, round trip through results.json, and the report's Data section."""

from __future__ import annotations

import json

from robusteval.data.audit import MAX_EXAMPLES, DataAudit
from robusteval.report.sections import data_section


def _audit() -> DataAudit:
    audit = DataAudit()
    s = audit.source("x.jsonl")
    s.rows_read, s.rows_used = 10, 7
    for line in range(1, 8):
        s.leave_out("fewer than 2 options", f"x.jsonl:{line}")
    s.anomaly("duplicate option text [kept]", "x.jsonl:3")
    s.assume("language", "sv (file name)")
    return audit


def test_counts_examples_and_lines():
    audit = _audit()
    s = audit.source("x.jsonl")
    assert s.left_out["fewer than 2 options"] == 7
    assert len(s.examples["fewer than 2 options"]) == MAX_EXAMPLES
    lines = audit.lines()
    assert lines[0] == "x.jsonl: 10 rows read, 7 used"
    assert "left out 7: fewer than 2 options (e.g. x.jsonl:1, x.jsonl:2, x.jsonl:3, x.jsonl:4, x.jsonl:5, +2 more)" \
        in lines[1]
    assert "  1 x duplicate option text [kept] (e.g. x.jsonl:3)" in lines
    assert "  assumed language: sv (file name)" in lines
    assert audit.has_findings()
    assert not DataAudit().has_findings() and not DataAudit()


def test_round_trip_and_report_section():
    audit = _audit()
    back = DataAudit.from_dict(json.loads(json.dumps(audit.as_dict())))
    assert back.lines() == audit.lines()
    section = data_section(audit.as_dict())
    assert section is not None and section.title == "Data"
    rows = section.tables[0].rows
    assert ("x.jsonl", "rows read / used", "10 / 7") in rows
    assert ("x.jsonl", "left out: fewer than 2 options", "7") in rows
    assert ("x.jsonl", "assumed language", "sv (file name)") in rows
    assert data_section({}) is None and data_section(None) is None
