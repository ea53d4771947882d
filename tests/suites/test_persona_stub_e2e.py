"""The persona suite end to end through the deterministic stub, with exact metrics: two models
(one label holding "/") answer the 4-item questionnaire as 4 personas in three contexts; the
stub's letters are a hash of each request, so every answer, and every figure, is fixed. The report
section, the headlines and ``compare``'s leaderboard across runs read that run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.report.render import load_run
from robusteval.report.sections import headlines, sections
from robusteval.results.records import encode_metrics, read_run
from robusteval.testing.openai_stub import StubServer

FIX = Path(__file__).parent.parent / "fixtures" / "persona"
A, B = "openai:org/persona-7B", "openai:other"
CONTEXTS = ["no_conv", "fixed_chess", "fixed_grammar"]


@pytest.fixture(scope="module")
def stub_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("persona")
    with StubServer() as stub:
        for run_id in ("r", "s"):  # the second is the same run again, from the cache
            code = main(["run", "persona", "--quiet", "--model", f"{A}?base_url={stub.base_url}", "--model",
                         f"{B}?base_url={stub.base_url}", "--population", str(FIX / "population.jsonl"),
                         "--personas", "4", "--questionnaire", str(FIX / "questionnaire.yaml"),
                         "--contexts", "no_conv,fixed:chess,fixed:grammar", "--turns", "1", "--bootstrap", "50",
                         "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "runs"), "--run-id", run_id])
            assert code == 0
    return tmp / "runs" / "r", tmp / "runs" / "s"


def test_exact_metrics(stub_runs):
    folder = stub_runs[0]
    results = json.loads((folder / "results.json").read_text())
    # 4 personas x (2 conversations of 1 turn + 3 contexts x 4 items)
    assert [results["models"][m]["usage"]["requests"] for m in (A, B)] == [4 * (2 + 3 * 4)] * 2
    expected = {A: ([0.4, -0.10540925533894598, -0.21081851067789195],
                    [0.005585762266162365, 0.026554538438131034, None],
                    [-0.07928630234531886, 0.4107736841055918, 0.5748753794212034]),
                B: ([0.632455532033676, -0.2581988897471611, 0.2721655269759087],
                    [0.03721870209878262, 0.032065081979024974, 0.0057537286371387485],
                    [0.28038060335189624, -0.2059264944800311, 0.41202456592314246])}
    for model, (pairs, stress, item_r) in expected.items():
        m = results["metrics"][model]
        assert (m["answers"], m["invalid"], m["failed"], m["invalid_rate"]) == (48, 0, 0, 0.0)
        matrix = m["stability_matrix"]
        assert matrix["contexts"] == CONTEXTS
        assert [matrix["values"][0][1], matrix["values"][0][2], matrix["values"][1][2]] == pytest.approx(pairs)
        stability = m["rank_order_stability"]
        assert stability["value"] == pytest.approx(sum(pairs) / 3) and stability["n"] == 4
        # 4 personas: resamples that repeat personas may have no defined rank correlation; where more
        # than stats.MAX_UNDEFINED of them have none (model B), no interval is given
        interval = (stability["ci_low"], stability["ci_high"])
        assert interval == ((None, None) if model == B else pytest.approx((-1 / 3, 1.0))), (model, interval)
        assert m["stability_per_value"] == {"warmth": pytest.approx(sum(pairs) / 3),
                                            "drive": pytest.approx(sum(pairs) / 3)}
        assert [m["validity"][c]["mds"]["stress1"] for c in CONTEXTS] == pytest.approx(stress, abs=1e-6)
        assert [m["validity"][c]["mean_item_r"] for c in CONTEXTS] == pytest.approx(item_r)
        assert all(m["validity"][c]["cfa_mean"] == {"cfi": None, "srmr": None, "rmsea": None} for c in CONTEXTS)
        assert "lost_contexts" not in m and "na_reason" not in m
    mds = results["metrics"][A]["validity"]["fixed_grammar"]["mds"]
    assert mds == {"stress1": None, "method": "classic", "error": "fewer than 4 items vary across personas",
                   "dropped_items": ["w1"]}
    board = results["leaderboard"]
    assert board["games"][:3] == ["stability:no_conv|fixed_chess", "stability:no_conv|fixed_grammar",
                                  "stability:fixed_chess|fixed_grammar"] and len(board["games"]) == 3 + 4 * 3
    assert board["models"] == {A: {"cardinal": pytest.approx(0.41032638665577376), "win_rate": pytest.approx(0.6)},
                               B: {"cardinal": pytest.approx(0.5952307760912462), "win_rate": pytest.approx(0.4)}}
    assert (board["kendalls_w"], board["diversity"]) == pytest.approx((0.04, 0.96))
    assert (board["sensitivity_win_rate"], board["sensitivity_cardinal"]) == (1, 0)
    # the typed record reads back and encodes to exactly what was written
    assert encode_metrics("persona", read_run(folder).metrics) == results["metrics"]
    rerun = json.loads((stub_runs[1] / "results.json").read_text())
    assert rerun["metrics"] == results["metrics"] and rerun["models"][A]["usage"]["new"] == 0


def test_report_section_and_headlines_of_the_run(stub_runs):
    run = load_run(stub_runs[0])
    persona = sections(run)[:-1]  # before the data audit
    assert [s.title for s in persona] == [f"persona · {A}", f"persona · {B}"]
    assert [f.name for f in persona[0].figures] == ["stability-openai_org_persona-7B"]
    (table,) = persona[0].tables
    assert table.columns[1] == "MDS Stress-1 (classic)"
    assert [row[:4] for row in table.rows] == [("no_conv", "0.006", "0.000", "-0.079"),
                                               ("fixed_chess", "0.027", "0.000", "0.411"),
                                               ("fixed_grammar", "n/a", "0.000", "0.575")]
    assert table.rows[0][4].startswith("openness_to_change: fewer than 3 items")
    assert persona[0].notes[0] == "Rank-order stability (mean over values and context pairs): 0.028 [-0.333, 1.000]"
    assert [(h.model, h.metric, round(h.value, 6)) for h in headlines(run.results)] == [
        (A, "rank-order stability", 0.027924), (B, "rank-order stability", 0.215474)]


def test_compare_scores_every_run_and_model_on_the_same_games(stub_runs, tmp_path, capsys):
    r, s = stub_runs
    assert main(["compare", str(r), str(s), "--out", str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "persona leaderboard across runs (15 games)" in out and f"r/{A}" in out and f"s/{B}" in out
    board = json.loads((tmp_path / "persona_leaderboard.json").read_text())
    assert list(board["models"]) == [f"r/{A}", f"r/{B}", f"s/{A}", f"s/{B}"]
    # the same run twice: each model ties with its copy, and the two models keep their cardinal scores
    cardinal = pytest.approx(0.41032638665577376)
    assert board["models"][f"r/{A}"]["cardinal"] == board["models"][f"s/{A}"]["cardinal"] == cardinal
    assert board["sensitivity_cardinal"] == 0
