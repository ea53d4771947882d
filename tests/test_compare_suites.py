"""`robusteval compare` gives paired differences for every suite whose samples (or results) carry
per-item values, each equal to a hand computation from the run's files; a measure with no paired
unit says so; mcq also shows the valid-only sensitivity its results stored. Runs are made through the
deterministic stub; where the stub cannot give a suite a non-trivial value (it never names a
hypothesis or a similarity score), one run's file is edited, and the hand computation reads the edit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.report.leaderboard import item_scores
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parent / "fixtures"
TOL = 1e-9


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines() if line.strip()]


def _write_rows(folder: Path, rows: list[dict]) -> None:
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _item_means(rows: list[dict], key: str) -> dict[str, float]:
    """item -> mean of ``key`` over the item's rows, by hand."""
    sums: dict[str, list[float]] = {}
    for r in rows:
        s = sums.setdefault(r["item_id"], [0.0, 0])
        s[0] += float(r[key])
        s[1] += 1
    return {item: total / n for item, (total, n) in sums.items()}


def _paired(a: dict[str, float], b: dict[str, float]) -> tuple[float, float, float, int]:
    """(mean of A, mean of B, mean of B - A, n) over the items both have, by hand."""
    shared = sorted(set(a) & set(b))
    n = len(shared)
    return (sum(a[i] for i in shared) / n, sum(b[i] for i in shared) / n,
            sum(b[i] - a[i] for i in shared) / n, n)


def _compare_json(capsys, a: Path, b: Path, out: Path | None = None) -> dict:
    capsys.readouterr()
    extra = ["--out", str(out)] if out else []
    assert main(["compare", str(a), str(b), "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _assert_difference(d: dict, expected: tuple[float, float, float, int]) -> None:
    a, b, diff, n = expected
    assert d["n"] == n
    assert d["a"] == pytest.approx(a, abs=TOL) and d["b"] == pytest.approx(b, abs=TOL)
    assert d["diff"] == pytest.approx(diff, abs=TOL)
    assert d["ci_low"] <= d["diff"] <= d["ci_high"]


# ---------------------------------------------------------------------------------------------- tree

@pytest.fixture(scope="module")
def tree_runs(tmp_path_factory):
    """Two models on 8 questions whose gold is a letter the stub may name ("B"/"C" or "D"): about
    half the nodes are right, differently for each model."""
    tmp = tmp_path_factory.mktemp("tree-paired")
    rows = [{"id": 200 + n, "subj": f"Person {n}", "prop": "occupation", "obj": "x", "s_pop": 10 + n,
             "question": f"Which letter does person number {n} like best?",
             "possible_answers": json.dumps(["B", "C"] if n % 2 else ["D"])} for n in range(8)]
    (tmp / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with StubServer() as stub:
        for run_id, model in (("a", "m1"), ("b", "m2")):
            assert main(["run", "tree", "--model", stub.model(model), "--retries", "0",
                         "--modes", "closed", "--max-tokens", "16", "--quiet", "--cache-dir", str(tmp / "cache"),
                         "--out", str(tmp / "runs"), "--run-id", run_id, "--data", str(tmp / "d.jsonl"),
                         "--depth", "1", "--paraphrases", "1", "--lexical", "2", "--lexical-kinds", "ocr,visual"]) == 0
    return tmp / "runs" / "a", tmp / "runs" / "b"


def test_tree_paired_accuracy_and_f1_equal_the_hand_computation(tree_runs, capsys, tmp_path):
    a, b = tree_runs
    doc = _compare_json(capsys, a, b, tmp_path / "cmp")
    paired = doc["paired"][str(b)]
    rows_a = [r for r in _rows(a) if r["mode"] == "closed" and r["status"] != "failed"]
    rows_b = [r for r in _rows(b) if r["mode"] == "closed" and r["status"] != "failed"]
    expected = _paired(_item_means(rows_a, "correct"), _item_means(rows_b, "correct"))
    assert expected[2] != 0 and expected[3] == 8  # the two models differ: the test can fail
    _assert_difference(paired["closed accuracy"], expected)
    _assert_difference(paired["closed F1"], _paired(_item_means(rows_a, "f1"), _item_means(rows_b, "f1")))
    assert (paired["closed accuracy"]["model_a"], paired["closed accuracy"]["model_b"]) == ("openai:m1", "openai:m2")
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert f"## Paired: B = {b} vs A = {a}" in md
    assert f"| closed accuracy | question | 8 | {expected[0]:.3f} | {expected[1]:.3f} | {expected[2]:+.3f}" in md

    assert main(["compare", str(a), str(b)]) == 0
    printed = capsys.readouterr().out
    assert "closed accuracy" in printed and f"{expected[2]:+.3f}" in printed


def test_leaderboard_ranks_tree_runs_on_the_same_per_item_values(tree_runs):
    a, _ = tree_runs
    rows = [r for r in _rows(a) if r["mode"] == "closed" and r["status"] != "failed"]
    scores = item_scores(a / "samples.jsonl", "closed accuracy")
    assert scores["openai:m1"] == pytest.approx(_item_means(rows, "correct"), abs=TOL)


# ------------------------------------------------------------------------------------- hallucination

@pytest.fixture(scope="module")
def hallucination_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hallucination-paired")
    with StubServer() as stub:
        for run_id, model in (("a", "m1"), ("b", "m2")):
            assert main(["run", "hallucination", "--quiet", "--model", stub.model(model),
                         "--judge", "none", "--limit", "4", "--prompts", "incorrect,support", "--orders", "both",
                         "--bootstrap", "100", "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "runs"),
                         "--run-id", run_id]) == 0
    b = tmp / "runs" / "b"
    # the stub names no hypothesis, so every verdict is wrong: B's support prompt is made right on
    # its first two sources in order 12 and on the first source in order 21 (per-item values 1, .5, 0, 0)
    sources = list(dict.fromkeys(r["item_id"] for r in _rows(b) if r["step"] == "detection"))
    right = {(sources[0], "12"), (sources[0], "21"), (sources[1], "12")}
    _write_rows(b, [{**r, "correct": True} if r["step"] == "detection" and r["variant"] == "support"
                    and (r["item_id"], r["order"]) in right else r for r in _rows(b)])
    return tmp / "runs" / "a", b


def test_hallucination_paired_detection_accuracy_equals_the_hand_computation(hallucination_runs, capsys):
    a, b = hallucination_runs
    paired = _compare_json(capsys, a, b)["paired"][str(b)]

    def detection(folder: Path, variant: str) -> dict[str, float]:
        return _item_means([r for r in _rows(folder) if r["step"] == "detection" and r["variant"] == variant
                            and r["status"] != "failed"], "correct")

    expected = _paired(detection(a, "support"), detection(b, "support"))
    assert expected == pytest.approx((0.0, 0.375, 0.375, 4))
    _assert_difference(paired["detection accuracy (support)"], expected)
    _assert_difference(paired["detection accuracy (incorrect)"], (0.0, 0.0, 0.0, 4))
    assert paired["detection accuracy (vote)"]["model_a"] == "ensemble"
    # F1 has no paired unit: said so, with the reason, never a number
    assert set(paired["detection F1"]) == {"unit", "reason"}
    assert "not a mean of per-item values" in paired["detection F1"]["reason"]


def test_leaderboard_ranks_by_f1_on_intervals_not_on_another_measures_items(hallucination_runs):
    a, _ = hallucination_runs
    results = json.loads((a / "results.json").read_text())
    assert item_scores(a / "samples.jsonl", "detection F1 (openai:m1/incorrect)", results) == {}
    sources = {r["item_id"] for r in _rows(a) if r["step"] == "detection"}
    assert item_scores(a / "samples.jsonl", "detection accuracy (incorrect)", results)["openai:m1"] == dict.fromkeys(
        sources, 0.0)


# ----------------------------------------------------------------------------------------- consistency

@pytest.fixture(scope="module")
def consistency_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("consistency-paired")
    with StubServer() as stub:
        for run_id, model in (("a", "m1"), ("b", "m2")):
            assert main(["run", "consistency", "--quiet", "--model", stub.model(model),
                         "--judge", "oracle", "--oracle", stub.model("judge"), "--limit", "3",
                         "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "runs"), "--run-id", run_id]) == 0
    # the stub's oracle never writes "Similarity score: N": every rating is missing; the items x
    # models table of each run is given ratings (A: 5, 4, missing; B: 3, 4, 2)
    for run_id, scores in (("a", (5.0, 4.0, None)), ("b", (3.0, 4.0, 2.0))):
        path = tmp / "runs" / run_id / "results.json"
        results = json.loads(path.read_text())
        table = results["metrics"]["judges"]["oracle"]["table"]
        for item, score in zip(table, scores):
            table[item] = dict.fromkeys(table[item], score)
        path.write_text(json.dumps(results))
    return tmp / "runs" / "a", tmp / "runs" / "b"


def test_consistency_paired_similarity_equals_the_hand_computation(consistency_runs, capsys):
    a, b = consistency_runs

    def table(folder: Path) -> dict[str, float]:
        t = json.loads((folder / "results.json").read_text())["metrics"]["judges"]["oracle"]["table"]
        return {item: score for item, by_model in t.items() for score in by_model.values() if score is not None}

    expected = _paired(table(a), table(b))
    assert expected == pytest.approx((4.5, 3.5, -1.0, 2))  # the item A left unrated is not paired
    d = _compare_json(capsys, a, b)["paired"][str(b)]["oracle mean similarity (0-5)"]
    _assert_difference(d, expected)
    assert d["unit"] == "item"
    results = json.loads((b / "results.json").read_text())
    assert item_scores(b / "samples.jsonl", "oracle mean similarity (0-5)", results) == {"openai:m2": table(b)}


def test_consistency_runs_of_other_items_are_refused_in_one_line(consistency_runs, tmp_path, capsys):
    """B13's rule for every suite: two runs with no item in common have no paired difference."""
    import shutil

    a, b = consistency_runs
    other = tmp_path / "other"
    shutil.copytree(b, other)
    results = json.loads((other / "results.json").read_text())
    table = results["metrics"]["judges"]["oracle"]["table"]
    results["metrics"]["judges"]["oracle"]["table"] = {f"other-{item}": row for item, row in table.items()}
    (other / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["compare", str(a), str(other)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share no item to compare" in err[0], err


# --------------------------------------------------------------------------------------------- persona

def test_persona_has_no_paired_unit_and_says_why(tmp_path, capsys):
    fix = FIXTURES / "persona"
    with StubServer() as stub:
        for run_id, model in (("a", "m1"), ("b", "m2")):
            assert main(["run", "persona", "--quiet", "--model", stub.model(model),
                         "--population", str(fix / "population.jsonl"), "--personas", "4", "--questionnaire",
                         str(fix / "questionnaire.yaml"), "--contexts", "no_conv,fixed:chess", "--turns", "1",
                         "--bootstrap", "20", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"),
                         "--run-id", run_id]) == 0
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    d = _compare_json(capsys, a, b)["paired"][str(b)]
    assert list(d) == ["rank-order stability"]
    assert d["rank-order stability"]["unit"] == "persona" and "diff" not in d["rank-order stability"]
    assert "not a mean of per-persona values" in d["rank-order stability"]["reason"]
    assert main(["compare", str(a), str(b)]) == 0
    assert "n/a: rank-order stability is a rank correlation" in " ".join(capsys.readouterr().out.split())


# ------------------------------------------------------------------------------------------------- mcq

def test_mcq_compare_shows_the_stored_valid_only_sensitivity_beside_the_as_scored(tmp_path, capsys):
    """Two-option questions: the stub answers A-D, so about half its replies name no option and each
    run stores its sensitivity over valid replies only; compare shows exactly those figures."""
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{n}", "question": f"Is {n} even?", "choices": ["yes", "no"],
                                        "answer": n % 2}) + "\n" for n in range(8)))
    with StubServer() as stub:
        for run_id, model in (("a", "stub"), ("b", "other")):
            assert main(["run", "mcq", "--data", str(data), "--families", "order", "--model",
                         stub.model(model), "--quiet", "--cache-dir", str(tmp_path / "cache"),
                         "--out", str(tmp_path / "runs"), "--run-id", run_id]) == 0
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    capsys.readouterr()
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out), "--out", str(tmp_path / "md")]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    result = json.loads(out.read_text())["order"]
    for run, key, model in ((a, "a", "openai:stub"), (b, "b", "openai:other")):
        stored = json.loads((run / "results.json").read_text())["metrics"][model]["order"]
        assert stored["sensitivity_valid"] != stored["sensitivity"]
        for measure, m in result["sensitivity_valid"].items():
            assert m[key] == stored["sensitivity_valid"][measure], (key, measure)
    assert "valid replies only" in printed
    # compare.md carries the paired accuracy the terminal shows
    acc = result["accuracy"]
    md = (tmp_path / "md" / "compare.md").read_text()
    assert f"| order accuracy | question | {acc['n']} | {acc['a']:.3f} | {acc['b']:.3f} | {acc['diff']:+.3f}" in md


def test_mcq_leaderboard_pairs_consistency_rate_too(tmp_path):
    """The mcq extractor gives the consistency-rate headline per question, so its ranks are paired."""
    rows = []
    for n in range(6):  # model m answers q0-q2 the same under both orders, q3-q5 differently
        for variant, option in (("o1", 0), ("o2", 0 if n < 3 else 1)):
            rows.append({"model": "m", "item_id": f"q{n}", "family": "order", "variant": variant, "sample": 0,
                         "correct": option == 0, "answer_option": option, "status": "ok"})
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    results = {"suite": "mcq"}
    assert item_scores(tmp_path / "samples.jsonl", "order consistency rate", results) == {
        "m": {"q0": 1.0, "q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.0, "q5": 0.0}}
    assert item_scores(tmp_path / "samples.jsonl", "order accuracy", results)["m"]["q4"] == 0.5


def test_a_run_of_several_models_needs_model_a_and_an_unknown_model_is_refused(tmp_path, capsys):
    """Hand-made consistency results (no samples: only the stored items x models table is read)."""
    for run_id, table in (("a", {"i1": {"x": 4.0, "y": 2.0}, "i2": {"x": 3.0, "y": 5.0}}),
                          ("b", {"i1": {"z": 1.0}, "i2": {"z": 4.0}})):
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "results.json").write_text(json.dumps({
            "run_id": run_id, "suite": "consistency", "models": {m: {} for m in table["i1"]},
            "metrics": {"judges": {"oracle": {"table": table}}}}))
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["compare", str(a), str(b)]) == 2
    assert "holds several models with oracle mean similarity (0-5) values (x, y)" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--model-a", "w"]) == 2
    assert "has no model 'w'" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--model-a", "y", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)["paired"][str(b)]["oracle mean similarity (0-5)"]
    _assert_difference(d, (3.5, 2.5, -1.0, 2))  # (1 - 2 + 4 - 5) / 2
    assert (d["model_a"], d["model_b"]) == ("y", "z")
