"""Plain requests for consistency --variations: the two shapes read, every other shape refused
with one message naming the file and line."""

from __future__ import annotations

import json

import pytest

from robusteval.data.audit import SourceAudit
from robusteval.data.prompts import PlainPrompt, load_prompts
from robusteval.errors import UserError


def test_jsonl_and_txt(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"id": "a", "prompt": " Hi there "}\n\n{"id": 7, "text": "Hallo", "language": "de", '
                     '"hint": "x"}\n')
    assert load_prompts(str(jsonl)) == [PlainPrompt("a", "Hi there"), PlainPrompt("7", "Hallo", "de", "x")]
    txt = tmp_path / "p.txt"
    txt.write_text("first\n\n  second  \n")
    audit = SourceAudit("p.txt")
    assert load_prompts(str(txt), limit=1, seed=0, audit=audit) in ([PlainPrompt("p1", "first")],
                                                                    [PlainPrompt("p3", "second")])
    assert (audit.rows_read, audit.rows_used) == (2, 1)


@pytest.mark.parametrize("name, text, message", [
    ("sets.jsonl", json.dumps({"id": "s", "variants": [{"prompt": "a"}, {"prompt": "b"}]}),
     r"sets.jsonl:1: a prompt set \(it has 'variants'; run it without --variations\)"),
    ("p.jsonl", '{"prompt": "no id"}', r"p.jsonl:1: a dict without an 'id' and a non-empty 'prompt'"),
    ("p.jsonl", '{"id": "a", "prompt": ""}', r"p.jsonl:1: a dict without"),
    ("p.jsonl", '["a", "b"]', r"p.jsonl:1: a list without"),
    ("p.jsonl", '{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}', r"p.jsonl:2: id 'a' repeats line 1"),
    ("p.jsonl", "{oops", r"p.jsonl:1: not valid JSON"),
    ("sets.json", "[]", r"with --variations, give one request per line"),
    ("sets.yaml", "items: []", r"with --variations, give one request per line"),
    ("p.txt", "\n\n", r"no requests in it"),
])
def test_other_shapes_are_refused_with_one_message(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserError, match=message) as info:
        load_prompts(str(path))
    assert "\n" not in str(info.value)


def test_a_missing_file(tmp_path):
    with pytest.raises(UserError, match=r"--data .*nope.txt: no such file"):
        load_prompts(str(tmp_path / "nope.txt"))
    with pytest.raises(UserError, match=r"--variations needs --data FILE"):
        load_prompts(None)
