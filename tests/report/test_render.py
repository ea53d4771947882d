import json
from itertools import pairwise
from pathlib import Path

import pytest

from robusteval.errors import UserError
from robusteval.report.explorer import build_explorer, word_diff
from robusteval.report.render import load_run, write_report
from robusteval.report.sections import generic_headlines, generic_section


def test_word_diff_marks_inserted_and_deleted_words():
    parts = word_diff("Which planet is closest to the Sun?", "Which planet is nearest the Sun?")
    assert [(p.op, p.text) for p in parts] == [("same", "Which planet is"), ("del", "closest to"),
                                               ("ins", "nearest"), ("same", "the Sun?")]


def test_word_diff_rebuilds_both_texts_and_never_splits_a_run():
    import random

    rng = random.Random(7)
    words = "A B C D the Sun planet which ( ) 1. 2.".split()
    for _ in range(300):
        base = [rng.choice(words) for _ in range(rng.randrange(0, 14))]
        other = base[:]
        for _ in range(rng.randrange(0, 4)):  # a few edits, as between variants of one prompt
            i = rng.randrange(0, len(other) + 1)
            if other and rng.random() < 0.5:
                del other[min(i, len(other) - 1)]
            else:
                other.insert(i, rng.choice(words))
        parts = word_diff(" ".join(base), " ".join(other))
        assert " ".join(p.text for p in parts if p.op != "ins").split() == base
        assert " ".join(p.text for p in parts if p.op != "del").split() == other
        assert all(p.text for p in parts)
        assert all(not (x.op == y.op == "same") for x, y in pairwise(parts))


def test_explorer_groups_by_item_and_flags_differing_answers():
    samples = [{"item_id": "q1", "model": "m", "variant": "v1", "prompt": "a b", "response": "A",
                "correct": True, "answer_label": "A", "answer_option": 0, "status": "ok"},
               {"item_id": "q1", "model": "m", "variant": "v2", "prompt": "a c", "response": "B",
                "correct": False, "answer_label": "B", "answer_option": 1, "status": "ok"},
               {"item_id": "q2", "model": "m", "variant": "v1", "prompt": "x", "response": None, "status": "failed",
                "correct": None}]
    items = build_explorer(samples)
    assert [i.item_id for i in items] == ["q1", "q2"]
    assert items[0].verdicts_differ and not items[1].verdicts_differ
    assert [r.verdict for r in items[0].rows] == ["correct (A)", "wrong (B)"]
    assert items[1].rows[0].verdict == "failed"
    assert items[0].rows[1].label == "m · v2"


@pytest.mark.slow
def test_report_of_a_real_run(real_mcq_run):
    # every run writes its report at the end
    assert (real_mcq_run / "report.html").is_file() and (real_mcq_run / "report.md").is_file()
    files = write_report(real_mcq_run)
    html = files.html.read_text()
    assert "Headline metrics" in html and "order accuracy" in html and "Sample explorer" in html
    # accuracy, and position bias where a reply was read (3 short replies may all be unreadable: then
    # every position is n/a and that figure is left out, not drawn as an empty axis)
    results = json.loads((real_mcq_run / "results.json").read_text())
    chosen = [b["chosen"]["value"] for b in results["metrics"]["llamacpp"]["order"]["position_bias"].values()]
    expected = 1 + any(v is not None for v in chosen)
    assert html.count('src="data:image/png;base64,') == len(files.plots) == expected
    assert html.index('id="headline-table"') < html.index('src="data:image/png;base64,') < html.index('id="explorer"')
    assert "http://" not in html and "https://" not in html  # self-contained: nothing to fetch
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in files.plots)
    md = files.markdown.read_text()
    assert "| llamacpp | order accuracy |" in md and "](plots/" in md


@pytest.mark.slow
def test_hostile_strings_are_escaped(hostile_run):
    files = write_report(hostile_run)
    html = files.html.read_text()
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    md = files.markdown.read_text()
    assert "<script>" not in md and "&lt;script&gt;" in md


def test_generic_section_lists_every_estimate():
    results = {"suite": "other", "models": {"m": {}},
               "metrics": {"m": {"f1": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 10},
                                 "deep": {"x": {"value": 1.0, "ci_low": None, "ci_high": None, "n": 3}}}}}
    section = generic_section(results)
    assert ("m / f1", "0.500 [0.400, 0.600]") in section.tables[0].rows
    heads = generic_headlines(results)
    assert [(h.model, h.metric, h.value) for h in heads] == [("m", "f1", 0.5), ("m", "deep / x", 1.0)]


def test_not_a_run_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not a run folder"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text("{broken")
    with pytest.raises(UserError, match="not valid JSON"):
        load_run(tmp_path)


def test_hallucination_section_and_headlines_from_metrics():
    from robusteval.report.model import Run
    from robusteval.report.sections import headlines, sections

    est = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 6}
    det = {"f1": est, "accuracy": est, "precision": est, "recall": est, "position_bias": {"chose_first": est},
           "order_consistency": est, "invalid": 1, "failed": 0}
    results = {"suite": "hallucination", "metrics": {
        "detection": {"detectors": {"m/incorrect": det}, "agreement": {"fleiss_kappa": 0.2, "pairwise": {}}},
        "cross": {"detectors": {"m/incorrect": det}, "matrix": {"m": {"m/incorrect": {"f1": est}}}},
        "generation": {"m": {"valid": est, "invalid": 2, "judges": {"m": {"hyp+_faithful": est}}}}}}
    (section,) = sections(Run(None, results))
    assert [f.name for f in section.figures] == ["detection-f1", "cross-f1", "generator-detector"]
    assert section.tables[0].rows[0][:2] == ("m/incorrect", "0.500 [0.400, 0.600]")
    assert any("Fleiss' kappa 0.200" in n for n in section.notes)
    assert [(h.model, h.metric, h.value) for h in headlines(results)] == [
        ("m", "detection F1 (m/incorrect)", 0.5), ("m", "cross F1 (m/incorrect)", 0.5)]


def test_tree_and_persona_sections_from_metrics():
    from robusteval.report.model import Run
    from robusteval.report.sections import headlines, sections

    est = {"value": 0.25, "ci_low": 0.1, "ci_high": 0.4, "n": 10}
    tree = {"suite": "tree", "metrics": {"m": {"modes": {
        "closed": {"accuracy": est, "by_level": {"0": {"accuracy": est}, "1": {"accuracy": est}}},
        "rag-bm25": {"accuracy": est, "by_level": {"0": {"accuracy": est}},
                     "failure_stages": {"correct": {"count": 1, "share": 0.25},
                                        "generator": {"count": 3, "share": 0.75}}}}}}}
    (section,) = sections(Run(None, tree))
    assert [f.name for f in section.figures] == ["level-m-closed", "level-m-rag-bm25", "stages-m"]
    assert [(h.metric, h.value) for h in headlines(tree)] == [("closed accuracy", 0.25), ("rag-bm25 accuracy", 0.25)]
    persona = {"suite": "persona", "metrics": {"m": {
        "rank_order_stability": est,
        "stability_matrix": {"contexts": ["a", "b"], "values": [[1.0, 0.3], [0.3, 1.0]]},
        "validity": {"a": {"mds": {"stress1": 0.2}, "invalid_rate": 0.1, "mean_item_r": 0.85, "letter_mass": 0.7,
                           "cfa": {"openness": {"cfi": None, "error": "too few"}}}}}}, "scoring": "expected"}
    (section,) = sections(Run(None, persona))
    assert [f.name for f in section.figures] == ["stability-m"]
    assert section.tables[0].rows == (("a", "0.200", "0.100", "0.850", "openness: too few"),)
    assert "probability-weighted" in section.notes[1] and "a 0.700" in section.notes[1]
    assert headlines(persona)[0].metric == "rank-order stability"


def _minimal_run(folder, samples: list[dict] | None) -> None:
    """A run folder as `write_run` leaves it: results.json, and samples.jsonl unless None."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(
        {"run_id": folder.name, "suite": "mcq", "models": {"m": {}}, "metrics": {}, "config": {"suite": "mcq"}}))
    if samples is not None:
        (folder / "samples.jsonl").write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples),
                                              encoding="utf-8")


def _sample(item_id: str, variant: str, prompt: str, response: str) -> dict:
    return {"item_id": item_id, "model": "m", "family": "format", "variant": variant, "prompt": prompt,
            "response": response, "status": "ok", "correct": True, "answer_label": "A", "answer_option": 0}


def test_unicode_line_separators_in_answers_do_not_stop_the_report(tmp_path):
    reply = "First line\u2028second line\u2029third\x85fourth. The best answer is A"
    _minimal_run(tmp_path / "r", [_sample("q1", "A:", "Which\u2028one?", reply),
                                  _sample("q1", "A)", "Which one?", "B")])
    files = write_report(tmp_path / "r")
    run = load_run(tmp_path / "r")
    assert len(run.samples) == 2 and run.samples[0]["response"] == reply
    assert "second line" in files.html.read_text(encoding="utf-8")


def test_an_unterminated_right_to_left_override_is_closed_and_isolated(tmp_path):
    evil = "\u202eA rewsna ehT"  # an override nobody closes
    _minimal_run(tmp_path / "r", [_sample("q1", "A:", "Which \u2067one?", evil),
                                  _sample("q1", "A)", "Which one?", "B")])
    html = write_report(tmp_path / "r").html.read_text(encoding="utf-8")
    assert f"<bdi>{evil}\u202c</bdi>" in html  # closed where the answer ends, inside its own isolate
    assert "\u2067" in html and html.count("\u2067") == html.count("\u2069")  # every isolate closed
    opened = sum(html.count(c) for c in "\u202a\u202b\u202d\u202e")
    assert opened == html.count("\u202c")


def test_balance_bidi_closes_only_what_is_open():
    from robusteval.report.render import balance_bidi

    assert balance_bidi("plain text") == "plain text"
    assert balance_bidi("\u202ex\u202c y") == "\u202ex\u202c y"  # already balanced: unchanged
    assert balance_bidi("\u2067a\u202eb\u2069c\u202b") == "\u2067a\u202eb\u2069c\u202b\u202c"


def test_a_folder_without_samples_says_so_in_the_report(tmp_path):
    _minimal_run(tmp_path / "r", None)
    files = write_report(tmp_path / "r")
    html = files.html.read_text(encoding="utf-8")
    assert 'id="explorer-missing"' in html and "samples.jsonl is missing" in html
    assert "samples.jsonl is missing" in files.markdown.read_text(encoding="utf-8")
    assert files.notes and "samples.jsonl is missing" in files.notes[0]


def test_the_word_diff_of_a_huge_repetitive_prompt_is_bounded_and_says_so():
    from robusteval.report.explorer import MAX_DIFF_WORDS

    question = "the cat sat on the mat and " * 40_000  # about 1 MB, 280,000 words
    base = "Answer this. " + question + " A. yes B. no"
    other = "Please answer the following. " + question.replace("mat", "rug") + " A) yes B) no"
    parts = word_diff(base, other)
    cut = [p for p in parts if p.op == "cut"]
    assert len(cut) == 1 and "word diff truncated" in cut[0].text
    compared = [p for p in parts if p.op in ("ins", "del", "same")]
    assert sum(len(p.text.split()) for p in compared if p.op != "del") <= MAX_DIFF_WORDS + 10  # head/tail words
    shown = " ".join(p.text for p in parts if p.op not in ("del", "cut")).split()
    assert shown == other.split()  # every word of the variant is still shown, the rest unmarked
    items = build_explorer([_sample("q", "A:", base, "A"), _sample("q", "A)", other, "B")])
    assert any(p.op == "cut" for p in items[0].rows[1].prompt_diff)


def test_persona_validity_table_names_the_mds_method():
    from robusteval.report.model import Run
    from robusteval.report.sections import sections

    est = {"value": 0.25, "ci_low": 0.1, "ci_high": 0.4, "n": 10}
    validity = {"a": {"mds": {"stress1": 0.2, "method": "leaderboard"}, "invalid_rate": 0.1, "cfa": {}}}
    persona = {"suite": "persona", "metrics": {"m": {"rank_order_stability": est, "validity": validity}}}
    (section,) = sections(Run(None, persona))
    assert section.tables[0].columns[1] == "MDS Stress-1 (leaderboard)"


def test_explorer_rows_carry_the_label_their_suite_wrote(cli_run, mcq_file):
    """Each suite's Sample names the fields that tell its rows apart; samples.jsonl carries the
    label, and the explorer shows it (no list of keys in the report)."""
    from robusteval.files import read_jsonl
    from robusteval.testing.openai_stub import StubServer

    with StubServer() as stub:
        run = cli_run("run", "mcq", "--quiet", "--data", mcq_file, "--families", "order", "--limit", "1",
                      "--model", stub.model())
    assert run.code == 0, run.err
    samples = read_jsonl(run.folder / "samples.jsonl")
    assert {s["label"] for s in samples} == {f"{s['model']} · order · {s['variant']} · 0" for s in samples}
    (item,) = build_explorer(samples)
    assert [r.label for r in item.rows] == [s["label"] for s in samples]
    assert len(item.rows) == 4 and all(" · gold@" in r.label for r in item.rows)


def test_mostly_invalid_replies_are_said_before_the_headline_figures(tmp_path):
    """A run whose replies were mostly unreadable leads its report with that, in HTML and Markdown."""
    _minimal_run(tmp_path / "r", [_sample("q1", "A:", "Which one?", "I cannot say")])
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    results["invalid_replies"] = {"m": {"replies": 200, "invalid": 92, "examples": ["I cannot say"]}}
    results["design"] = {"reader": "robusteval"}
    (tmp_path / "r" / "results.json").write_text(json.dumps(results))
    files = write_report(tmp_path / "r")
    html = files.html.read_text(encoding="utf-8")
    assert "92 of 200 replies (46%) are invalid" in html
    assert html.index("92 of 200 replies") < html.index('id="headline-table"')
    md = files.markdown.read_text(encoding="utf-8")
    assert md.index("> **Warning:** m: 92 of 200") < md.index("| model | metric |")
    results["invalid_replies"]["m"]["invalid"] = 10  # 5%: under the threshold, no warning
    (tmp_path / "r" / "results.json").write_text(json.dumps(results))
    assert "replies (5%) are invalid" not in write_report(tmp_path / "r").html.read_text(encoding="utf-8")


def test_the_jinja_environment_is_built_once():
    from robusteval.report.render import environment

    assert environment() is environment()


def test_a_cell_of_several_lines_keeps_its_lines_in_markdown_and_html():
    """A format shown on an example question is several lines: report.md's table cell carries them as <br>
    (a newline would end the row; a space lost the layout), and the HTML cell keeps them (pre-wrap)."""
    from robusteval.report.render import _md
    assert _md("Question: 2+2?\nOptions:\n(a) 4 | 5") == "Question: 2+2?<br>Options:<br>(a) 4 \\| 5"
    css = (Path(__file__).parents[2] / "src/robusteval/report/templates/style.css.j2").read_text()
    assert "table.data td > bdi { white-space: pre-wrap; }" in css
