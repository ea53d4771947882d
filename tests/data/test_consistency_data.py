import json

import pytest

from robusteval.data.consistency import load_prompt_sets, repair_json
from robusteval.errors import UserError

BROKEN = """{"eloquent-robustness-test": {"source": "test", "items": [
  {"id": "001", "variation": "formality", "variants": [
    {"language": "en", "prompt": "hi, how do bees make honey?"}
    {"language": "en", "prompt": "Could you explain how bees produce honey?"},
  ]}
  {"id": "002", "variation": "spelling", "variants": [{"language": "en", "prompt": "only one variant"}]},
  {"variation": "no id", "variants": [{"prompt": "a"}, {"prompt": "b"}]},
  {"id": "003", "variation": "language", "hint": "ignore the language", "variants": [
    {"language": "en", "prompt": "What is a leap year?"},
    {"language": "de", "prompt": "Was ist ein Schaltjahr?"}]}
]}}
"""


def test_lenient_loader_repairs_and_reports_with_lines(tmp_path):
    path = tmp_path / "eloquent.json"
    path.write_text(BROKEN)
    items, report = load_prompt_sets(str(path))
    assert [i.id for i in items] == ["001", "003"]
    assert report.fixes == ("line 3: inserted a missing comma", "line 4: removed a trailing comma",
                            "line 5: inserted a missing comma")
    assert report.skipped == ("line 6: item 002: fewer than two variants with a prompt", "unknown line: no 'id'")
    assert items[0].variants[1].prompt == "Could you explain how bees produce honey?"
    assert items[1].hint == "ignore the language" and items[1].languages == ("en", "de")
    assert all(line.startswith(str(path)) for line in report.lines())


def test_unrepairable_json_names_line_and_column():
    with pytest.raises(UserError, match=r"x.json:2:\d+: .*could not repair"):
        repair_json('{"items": [\n  {"id": 1, "variants": [}]}', "x.json")
    value, fixes = repair_json('[1, 2,]', "y.json")
    assert value == [1, 2] and fixes == ["line 1: removed a trailing comma"]


def test_own_jsonl_and_yaml_formats(tmp_path):
    jsonl = tmp_path / "sets.jsonl"
    rows = [{"id": "a", "variation": "dialect", "hint": "h", "variants": [{"language": "en", "prompt": "p1"},
                                                                         {"language": "en", "prompt": "p2"}]},
            {"id": "b", "variants": ["just text", "more text"]}]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json at all\n")
    items, report = load_prompt_sets(str(jsonl))
    assert [(i.id, i.variation, len(i.variants)) for i in items] == [("a", "dialect", 2), ("b", "unspecified", 2)]
    assert len(report.skipped) == 1 and report.skipped[0].startswith("line 3:")
    yml = tmp_path / "sets.yaml"
    yml.write_text("items:\n  - id: y1\n    variation: vocabulary\n    variants:\n"
                   "      - {language: en, prompt: one}\n      - {language: en, prompt: two}\n")
    items, _ = load_prompt_sets(str(yml))
    assert items[0].id == "y1" and items[0].variants[1].prompt == "two"


def test_missing_file_and_empty_set_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such file or prompt set"):
        load_prompt_sets(str(tmp_path / "nope.json"))
    empty = tmp_path / "empty.json"
    empty.write_text('{"items": [{"id": "x", "variants": []}]}')
    with pytest.raises(UserError, match="no usable prompt sets"):
        load_prompt_sets(str(empty))


def test_bundled_sets_cover_the_task():
    english, report = load_prompt_sets("robusteval-en")
    assert not report.fixes and not report.skipped
    assert len({i.variation for i in english}) >= 15
    assert all(3 <= len(i.variants) <= 5 for i in english)
    assert len({i.id for i in english}) == len(english)
    multi, _ = load_prompt_sets("robusteval-multi")
    assert {i.id for i in multi} <= {i.id for i in english}
    for item in multi:
        assert "en" in item.languages and len(set(item.languages) - {"en"}) >= 3


def test_limit_is_a_seeded_sample_in_file_order():
    a, _ = load_prompt_sets("robusteval-en", limit=4, seed=1)
    b, _ = load_prompt_sets("robusteval-en", limit=4, seed=1)
    full, _ = load_prompt_sets("robusteval-en")
    assert [i.id for i in a] == [i.id for i in b] and len(a) == 4
    order = [i.id for i in full]
    assert [order.index(i.id) for i in a] == sorted(order.index(i.id) for i in a)


def test_the_audit_counts_repairs_and_left_out_sets(tmp_path):
    from robusteval.data.audit import SourceAudit

    path = tmp_path / "eloquent.json"
    path.write_text(BROKEN)
    audit = SourceAudit(str(path))
    items, report = load_prompt_sets(str(path), limit=1, audit=audit)
    assert len(items) == 1
    assert (audit.rows_read, audit.rows_used) == (4, 1)
    assert audit.left_out == {f"left out: {s}": 1 for s in report.skipped}
    assert sum(audit.anomalies.values()) == len(report.fixes) == 3
    assert audit.notes == ["a seeded sample (--limit 1, seed 0) of the 2 usable prompt sets"]
