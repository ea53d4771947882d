"""`robusteval compare` on two runs written as the suite writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.compare import UNSTORED
from robusteval.probes.design import expand
from robusteval.report.table import fmt_estimate
from robusteval.suites.mcq.ask import _sample
from robusteval.types import Item, Response

FIXTURES = Path(__file__).parent / "fixtures"
ITEMS = [Item(f"q{n}", f"Q{n}?", ("p", "q", "r", "s"), answer=n % 4) for n in range(30)]


def _write_run(folder, model, reply):
    folder.mkdir()
    with open(folder / "samples.jsonl", "w") as f:
        for item in ITEMS:
            for v in expand(item, ["order"]):
                f.write(json.dumps(_sample(model, item, v, 0, Response("k", reply(item, v))).as_dict()) + "\n")


def test_compare_two_runs(tmp_path, capsys):
    # A always says "A" (right only for gold@A); B always finds the gold
    _write_run(tmp_path / "a", "m1", lambda item, v: "The best answer is A")
    _write_run(tmp_path / "b", "m2", lambda item, v: f"The best answer is {v.labels[v.order.index(item.answer)]}")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())["order"]
    assert result["questions"] == 30
    assert result["accuracy"]["a"] == 0.25 and result["accuracy"]["b"] == 1.0
    assert result["accuracy"]["p_value"] < 0.01 and result["accuracy"]["ci_low"] > 0.5
    assert result["consistency_rate"]["b"] == 1.0
    assert result["intervals"] == {"a": UNSTORED, "b": UNSTORED}  # bare samples.jsonl: nothing stored to show
    assert "order" in capsys.readouterr().out


def test_compare_errors(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "none"), str(tmp_path / "none")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def _oracle_run(folder, run_id: str, acc: float, **config) -> None:
    """A consistency run folder whose one model's oracle mean similarity is ``acc`` (interval +-0.1, n 30)."""
    (folder / run_id).mkdir()
    est = {"value": acc, "ci_low": acc - 0.1, "ci_high": acc + 0.1, "n": 30}
    results = {"run_id": run_id, "suite": "consistency", "models": {"m": {}},
               "metrics": {"judges": {"oracle": {"models": {"m": {"mean": est}}}}}}
    if config:
        results["config"] = config
    (folder / run_id / "results.json").write_text(json.dumps(results))


def test_compare_headlines_across_runs_writes_table_and_plots(tmp_path, capsys):
    for run_id, acc in (("r1", 0.25), ("r2", 0.75)):
        _oracle_run(tmp_path, run_id, acc)
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "oracle mean similarity" in printed and "0.250 [0.150, 0.350]" in printed and "0.750" in printed
    md = (out / "compare.md").read_text()
    assert "| r2 | m | 0.750 [0.650, 0.850] |" in md
    assert (out / "compare-1.png").read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "r2" / "results.json").write_text(json.dumps({"run_id": "r2", "suite": "mcq", "models": {},
                                                              "metrics": {}}))
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2")]) == 2
    assert "different suites" in capsys.readouterr().err


def test_compare_shows_runs_on_other_data_side_by_side_unranked(tmp_path, capsys):
    for run_id, acc, limit in (("r1", 0.25, 20), ("r2", 0.75, None)):
        _oracle_run(tmp_path, run_id, acc, limit=limit)
    out = tmp_path / "cmp"
    assert main(["compare", str(tmp_path / "r1"), str(tmp_path / "r2"), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert "| - | r1 | m | 0.250 [0.150, 0.350] |" in md and "| - | r2 | m | 0.750 [0.650, 0.850] |" in md
    assert "not ranked" in md and "rank: by" not in md


def test_compare_md_lists_the_tie_groups(tmp_path, capsys):
    for run_id, acc in (("r1", 0.50), ("r2", 0.52), ("r3", 0.95)):
        _oracle_run(tmp_path, run_id, acc)
    out = tmp_path / "cmp"
    assert main(["compare", *(str(tmp_path / r) for r in ("r1", "r2", "r3")), "--out", str(out)]) == 0
    md = (out / "compare.md").read_text()
    assert "- tie group =2: r1/m, r2/m" in md and "| 1 | r3 | m |" in md


def test_compare_shows_every_sensitivity_measure_paired_where_it_exists(tmp_path, capsys):
    # A always says "A": right only on gold@A. B always finds the gold. 30 questions, 4 orders each.
    _write_run(tmp_path / "a", "m1", lambda item, v: "The best answer is A")
    _write_run(tmp_path / "b", "m2", lambda item, v: f"The best answer is {v.labels[v.order.index(item.answer)]}")
    out = tmp_path / "cmp.json"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(out)]) == 0
    s = json.loads(out.read_text())["order"]["sensitivity"]
    # worst case: A is wrong somewhere on every question (0), B never (1); paired difference +1
    assert (s["worst_case"]["a"]["value"], s["worst_case"]["b"]["value"]) == (0.0, 1.0)
    assert s["worst_case"]["difference"]["diff"] == 1.0 and s["worst_case"]["difference"]["n"] == 30
    # PSS: A's (1, 0, 0, 0) per question gives 3 differing pairs of 6; B's none
    assert s["prompt_sensi_score"]["a"]["value"] == 0.5 and s["prompt_sensi_score"]["difference"]["diff"] == -0.5
    # flips against the published order (whose A shows option 0): where the gold is not option 0 (22
    # questions) only gold@A moves A's answer (1 of 3); where it is (8 questions) every swap does (3 of 3)
    assert s["flip_rate"]["a"]["value"] == pytest.approx((22 * 1 + 8 * 3) / 90)
    assert s["flip_rate"]["difference"]["diff"] == pytest.approx(-(22 / 3 + 8) / 30)
    assert s["flip_rate"]["b"]["value"] == 0.0
    # MaxP / CPS are statistics of the whole matrix: side by side, no paired difference
    assert s["max_p"]["a"]["value"] == 1.0 and s["max_p"]["b"]["value"] == 1.0 and s["max_p"]["difference"] is None
    assert s["cps"]["a"]["value"] == 1.0 * (1 - (1.0 - 0.25))
    printed = capsys.readouterr().out
    assert "sensitivity: B =" in printed and "worst-case accuracy" in printed and "+1.000" in printed
    assert "n/a (not a per-question mean)" in printed


def _stub_mcq(tmp_path, url: str, data, run_id: str, model: str, *extra: str) -> None:
    assert main(["run", "mcq", "--data", str(data), "--families", "order,format", "--model",
                 f"openai:{model}?base_url={url}", "--quiet", "--cache-dir", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "runs"), "--run-id", run_id, *extra]) == 0


def test_compare_shows_the_intervals_the_run_stored_as_report_and_serve_do(tmp_path, capsys):
    """A run with --seed 7 whose question ids do not sort in the data's order (the bootstrap draws
    questions by position): compare shows exactly the intervals results.json holds, and the report
    prints the same. Drawing them again (seed 0, sorted ids), as compare did, gives other bounds."""
    from robusteval.compare import STORED, _report, load_samples
    from robusteval.report.leaderboard import boards_from
    from robusteval.testing.openai_stub import StubServer

    rows = [json.loads(line) for line in (FIXTURES / "mcq_small.jsonl").read_text().splitlines()]
    data = tmp_path / "shuffled.jsonl"  # ids 9, 10, 8, 11, 7: "10" < "11" < "7" < "8" < "9" as strings
    data.write_text("".join(json.dumps({**r, "id": str(n)}) + "\n" for r, n in zip(rows, (9, 10, 8, 11, 7))))
    with StubServer() as stub:
        _stub_mcq(tmp_path, stub.base_url, data, "a", "stub", "--seed", "7")
        _stub_mcq(tmp_path, stub.base_url, data, "b", "other")
    runs = tmp_path / "runs"
    out = tmp_path / "cmp.json"
    capsys.readouterr()
    assert main(["compare", str(runs / "a"), str(runs / "b"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    stored = json.loads((runs / "a" / "results.json").read_text())["metrics"]["openai:stub"]
    report = (runs / "a" / "report.md").read_text()
    for family in ("order", "format"):
        assert result[family]["intervals"] == {"a": STORED, "b": STORED}
        for measure, m in result[family]["sensitivity"].items():
            assert m["a"] == stored[family]["sensitivity"][measure], (family, measure)
        spread = fmt_estimate(stored[family]["sensitivity"]["spread"])
        assert spread in report and spread in printed
    board = boards_from([("a", stored_results := json.loads((runs / "a" / "results.json").read_text()))])[0]
    assert board.rows[0].values["order accuracy"][1:] == (stored_results["metrics"]["openai:stub"]["order"]
                                                          ["accuracy"]["ci_low"],
                                                          stored_results["metrics"]["openai:stub"]["order"]
                                                          ["accuracy"]["ci_high"])
    # what compare printed before: a new draw, seed 0, questions sorted, differs from the stored bounds
    order = [r for r in load_samples(str(runs / "a")) if r.family == "order"]
    redrawn = _report(order, sorted({r.item_id for r in order}), 0)
    moved = [name for name, _, e in redrawn.measures()
             if (e.low, e.high) != (stored["order"]["sensitivity"][name]["ci_low"],
                                    stored["order"]["sensitivity"][name]["ci_high"])]
    assert moved  # here the CPS bound: 5 questions leave most intervals at their clipped ends


def test_compare_recomputes_on_the_shared_cells_with_the_runs_seed_and_says_so(tmp_path, capsys):
    """When run B lacks a question, A's measures are of other cells than A stored: computed again on
    the shared ones, marked so in the JSON and under the table."""
    from robusteval.compare import SHARED, STORED
    from robusteval.testing.openai_stub import StubServer

    full = FIXTURES / "mcq_small.jsonl"
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("".join(full.read_text().splitlines(keepends=True)[:4]))
    with StubServer() as stub:
        _stub_mcq(tmp_path, stub.base_url, full, "a", "stub")
        _stub_mcq(tmp_path, stub.base_url, fewer, "b", "other")
    runs = tmp_path / "runs"
    out = tmp_path / "cmp.json"
    capsys.readouterr()
    assert main(["compare", str(runs / "a"), str(runs / "b"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())["order"]
    assert result["questions"] == 4 and result["intervals"] == {"a": SHARED, "b": STORED}
    assert result["sensitivity"]["worst_case"]["a"]["n"] == 4
    assert f"{SHARED} for order (A)" in " ".join(capsys.readouterr().out.split())


def test_two_shards_of_one_run_share_no_question_one_line(tmp_path, capsys):
    """B13: shards 1/2 and 2/2 hold different questions: nothing to pair; exit 2 and one line, not a
    traceback from the empty matrix."""
    from robusteval.testing.openai_stub import StubServer

    with StubServer() as stub:
        for k in (1, 2):
            _stub_mcq(tmp_path, stub.base_url, FIXTURES / "mcq_small.jsonl", f"f{k}", "m", "--shard", f"{k}/2")
    runs = tmp_path / "runs"
    capsys.readouterr()
    assert main(["compare", str(runs / "f1"), str(runs / "f2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share no item to compare" in err[0] and ", 0 in both" in err[0], err
