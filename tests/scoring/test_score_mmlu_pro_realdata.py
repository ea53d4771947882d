"""``robusteval score --reader mmlu-pro`` on MMLU-Pro's released answers (../shared/realdata/mmlu-pro/
outputs: three models, the whole 12,032-row test split) gives exactly the accuracy of the authors'
chain without its random guess: the same replies right, wrong and unreadable, overall and per
category. The expected counts are computed here from the raw zips by a few plain lines (the
authors' three regexes, written out again), and pinned as literals too."""

from __future__ import annotations

import json
import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.scoring.replies import AUTHORS_GOLD

MODELS = ("Meta-Llama-3_1-8B-Instruct", "Mistral-7B-Instruct-v0.2", "gemma-7b")
# (right, wrong, unreadable) of 12,032 under the authors' chain without the guess, counted once by hand
PINNED = {"Meta-Llama-3_1-8B-Instruct": (5244, 6094, 694), "Mistral-7B-Instruct-v0.2": (3631, 7335, 1066),
          "gemma-7b": (3945, 6954, 1133)}


def authors_letter(text: str) -> str | None:
    """compute_accuracy.py's chain, without the random guess: the first "answer is (X)"; else
    ``re.search(r".*[aA]nswer:\\s*([A-J])", text)``; else the last standalone A-J. The second and
    third steps are their patterns' results, found in linear time (the patterns themselves take
    minutes on these files)."""
    if m := re.search(r"answer is \(?([A-J])\)?", text):
        return m.group(1)
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"(?=[aA]nswer:\s*([A-J]))", text)]
    if starts:
        first_line = text.count("\n", 0, starts[0][0])
        return [letter for at, letter in starts if text.count("\n", 0, at) == first_line][-1]
    letters = re.findall(r"\b[A-J]\b", text)
    return letters[-1] if letters else None


def test_the_linear_second_step_is_the_authors_pattern():
    cases = ["x Answer: B then answer: C\nAnswer: D", "no\nfoo answer:\n  E and Answer: Answer: F\nAnswer: G",
             "Answer: Answer: B", "answer is maybe", "nothing here"]
    for text in cases:
        m = re.search(r".*[aA]nswer:\s*([A-J])", text)
        starts = [(x.start(), x.group(1)) for x in re.finditer(r"(?=[aA]nswer:\s*([A-J]))", text)]
        ours = None
        if starts:
            line = text.count("\n", 0, starts[0][0])
            ours = [g for at, g in starts if text.count("\n", 0, at) == line][-1]
        assert ours == (m.group(1) if m else None), text


def expected(path: Path) -> tuple[Counter, dict[str, Counter]]:
    with zipfile.ZipFile(path) as z:
        rows = json.loads(z.read(z.namelist()[0]))
    overall: Counter = Counter()
    by_category: dict[str, Counter] = {}
    for row in rows:
        letter = authors_letter(row["generated_text"] or "")
        verdict = "unreadable" if letter is None else "right" if letter == row["answer"] else "wrong"
        overall[verdict] += 1
        by_category.setdefault(row["category"], Counter())[verdict] += 1
    return overall, by_category


@pytest.fixture(scope="module")
def scored(realdata, tmp_path_factory):
    out = tmp_path_factory.mktemp("mmlu-pro-score")
    zips = [realdata / "mmlu-pro" / "outputs" / f"model_outputs_{m}_5shots.zip" for m in MODELS]
    code = main(["score", *map(str, zips), "--reader", "mmlu-pro", "--quiet", "--out", str(out), "--run-id", "s"])
    assert code == 0
    return zips, json.loads((out / "s" / "results.json").read_text())


@pytest.mark.parametrize("n", range(len(MODELS)))
def test_counts_equal_the_authors_chain_overall_and_per_category(scored, n):
    zips, results = scored
    model = MODELS[n]
    overall, by_category = expected(zips[n])
    assert (overall["right"], overall["wrong"], overall["unreadable"]) == PINNED[model]
    fm = results["metrics"][model]["released"]
    assert fm["samples"] == sum(overall.values()) == 12032
    assert fm["invalid"] == overall["unreadable"] and fm["failed"] == 0
    assert fm["accuracy"]["value"] == pytest.approx(overall["right"] / 12032, abs=1e-12)
    assert set(fm["categories"]) == set(by_category) and len(by_category) == 14
    for category, want in by_category.items():
        got = fm["categories"][category]
        assert (got["correct"], got["answered"] - got["correct"] - got["invalid"], got["invalid"]) == \
            (want["right"], want["wrong"], want["unreadable"]), category
        assert got["accuracy"]["value"] == pytest.approx(want["right"] / sum(want.values()), abs=1e-12)
        assert got["accuracy"]["ci_low"] < got["accuracy"]["value"] < got["accuracy"]["ci_high"]


def test_the_results_say_how_they_were_read(scored):
    zips, results = scored
    assert results["scored"]["kind"] == "mmlu-pro" and results["scored"]["reader"] == "mmlu-pro"
    assert results["design"]["reader"] == "mmlu-pro"
    assert list(results["metrics"]) == list(MODELS)
    # one-option rows are scored, as the authors score them; a row whose 'answer' and 'answer_index'
    # disagree is scored against 'answer', as the authors do; both said in the audit
    for zip_path, audit in zip(zips, results["data"]["sources"]):
        with zipfile.ZipFile(zip_path) as z:
            rows = json.loads(z.read(z.namelist()[0]))
        assert audit["source"] == str(zip_path) and audit["rows_read"] == audit["rows_used"] == 12032
        one = sum(len(r["options"]) == 1 for r in rows)
        disagree = sum("ABCDEFGHIJ".index(r["answer"]) != r["answer_index"] for r in rows)
        assert audit["anomalies"].get("one option only: kept, as the released answers' authors score it", 0) == one
        assert audit["anomalies"].get(AUTHORS_GOLD, 0) == disagree
    assert [a["anomalies"].get(AUTHORS_GOLD, 0) for a in results["data"]["sources"]] == [1, 0, 0]


def test_the_default_reader_reads_another_phrasing_and_says_so(realdata, tmp_path, capsys):
    """The authors' replies say "The answer is (X)", not robusteval's "The best answer is X": its default
    reader reads most of them by that phrasing, and says so beside the figures (terminal, results.json,
    report). Chains of thought that name another option's text beside the stated label, or none that
    can be read, stay invalid: over the warning's threshold, so the terminal and the report warn,
    quote examples, and show the sensitivity over valid replies beside the figures as scored."""
    path = realdata / "mmlu-pro" / "outputs" / f"model_outputs_{MODELS[1]}_5shots.zip"
    assert main(["score", str(path), "--out", str(tmp_path), "--run-id", "d"]) == 0
    printed = capsys.readouterr()
    results = json.loads((tmp_path / "d" / "results.json").read_text())
    fm = results["metrics"][MODELS[1]]["released"]
    assert (fm["samples"], fm["invalid"]) == (12032, 3121) and results["scored"]["reader"] == "robusteval"
    # before the default reader read other phrasings and options' texts: 12028 invalid, 4 by the sentence
    assert fm["read_as"] == {"label": 4, "phrase": 8588, "text": 319, "invalid": 3121}
    assert results["invalid_replies"][MODELS[1]]["invalid"] == 3121
    assert f"warning: {MODELS[1]}: 3121 of 12032 replies (26%) are invalid" in printed.out
    read_as = (f"{MODELS[1]} · released: 12032 replies read: 4 by \"The best answer is [label]\" (0%), 8588 by a "
               "label in another phrasing (71%), 319 by an option's text (3%), 3121 unread (invalid) (26%)")
    assert read_as in " ".join(printed.out.split())
    assert "invalid reply 3:" in printed.out and "released (valid replies only)" in printed.out
    assert fm["sensitivity_valid"] is not None and fm["sensitivity"] is not None
    report = (tmp_path / "d" / "report.md").read_text()
    assert "3121 of 12032 replies (26%) are invalid" in report and "valid replies only" in report
    assert read_as in report
