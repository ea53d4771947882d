"""The consistency files written piece by piece (an item at a time, from spooled responses) are the
bytes the whole-document writers give: one `json.dumps(..., indent=2)`, one Markdown text."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from robusteval.data.consistency import PromptSet, PromptVariant
from robusteval.report.consistency_files import (
    answers_chunks,
    answers_file,
    answers_markdown,
    answers_markdown_chunks,
    submission,
    submission_chunks,
)

ITEMS = [PromptSet("a", "style", (PromptVariant("en", "Hi\nthere |x|"), PromptVariant("sv", "Hej ä", "language:sv")),
                   hint="Compare content."),
         PromptSet("b", "language", (PromptVariant("en", "Q?"),))]
SAID = {"x": [["x: one\n\"quoted\"", "x: två"], ["x: b"]], "y": [["y: one", None], ["y | b"]]}


def test_submission_chunks_are_one_json_dump():
    for items in (ITEMS, []):
        text = "".join(submission_chunks(zip(items, SAID["y"]), "team"))
        payload = {"eloquent-robustness-results": {"source": "team", "year": "2024", "items": [
            {"id": i.id, "responses": [{"response": r} for r in said]} for i, said in zip(items, SAID["y"])]}}
        assert text == json.dumps(payload, indent=2, ensure_ascii=False)


def test_answers_chunks_are_one_json_dump():
    for items in (ITEMS, []):
        text = "".join(answers_chunks(zip(items, SAID["x"]), "x", "team"))
        payload = {"robusteval-answers": {
            "team": "team", "system": "x", "date": time.strftime("%Y-%m-%d"),
            "items": [{"id": i.id, "variation": i.variation,
                       "variants": [{"language": v.language, "prompt": v.prompt, "response": r}
                                    for v, r in zip(i.variants, said)]} for i, said in zip(items, SAID["x"])]}}
        assert text == json.dumps(payload, indent=2, ensure_ascii=False)


def test_chunks_equal_the_writers_over_samples():
    answers = [SimpleNamespace(model=m, item_id=item.id, variant=v, sample=k,
                               response=SAID[m][n][v] if k == 0 else "k1")
               for m in SAID for n, item in enumerate(ITEMS) for v in range(len(item.variants)) for k in range(2)]
    ratings = [SimpleNamespace(model="x", item_id="a", judge="oracle", scope="variants", score=3.5),
               SimpleNamespace(model="y", item_id="b", judge="oracle", scope="sampling:0", score=1.0)]
    assert "".join(submission_chunks(zip(ITEMS, SAID["y"]), "t")) == submission(answers, ITEMS, "y", "t")
    assert "".join(answers_chunks(zip(ITEMS, SAID["y"]), "y", "t")) == answers_file(answers, ITEMS, "y", "t")
    rows = ((item, {m: SAID[m][n] for m in SAID}) for n, item in enumerate(ITEMS))
    text = "".join(answers_markdown_chunks(rows, ratings, ["x", "y"]))
    assert text == answers_markdown(answers, ratings, ITEMS, ["x", "y"])
    assert text.count("## ") == 2 and "| 2 (language:sv) | sv | Hej ä | x: två | *(failed)* |" in text
    assert "Ratings (0-5): x oracle: 3.50, y oracle: missing" in text
