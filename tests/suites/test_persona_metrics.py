"""The persona suite's metrics and leaderboard from hand-made answers (no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robusteval.data.persona import Persona, load_questionnaire
from robusteval.metrics.persona import PersonaTally, answer_matrix, games, leaderboard, model_metrics
from robusteval.probes.persona import Context
from robusteval.results.codec import encode
from robusteval.suites.persona import Sample, scores_csv

FIX = Path(__file__).parent.parent / "fixtures" / "persona"
Q = load_questionnaire(str(FIX / "questionnaire.yaml"))  # warmth: w1, w2 (reversed); drive: d1, d2; 4 points
PEOPLE = [Persona(f"p{i}", f"P{i}", "female" if i % 2 else "male", "d") for i in range(4)]
CONTEXTS = [Context("no_conv", "no_conv"), Context("fixed_x", "fixed", ("x",))]


def samples(model: str, table: dict[str, list[list[int | None]]]) -> list[Sample]:
    """table: context -> persona rows of answers (1..4, None = invalid) in item order w1, w2, d1, d2."""
    out = []
    for context, rows in table.items():
        for person, row in zip(PEOPLE, rows):
            for item, answer in zip(Q.items, row):
                out.append(Sample(model=model, item_id=item.id, persona_id=person.id, persona=person.name,
                                  context=context, value=item.value, prompt="q", turns=1, response="reply", error=None,
                                  status="ok" if answer else "invalid", answer=answer, clue="letter", cached=False,
                                  key="k"))
    return out


# warmth (w1 high, w2 reversed low) rises with the persona index, drive falls: ranks are clear
BASE = [[1, 4, 4, 4], [2, 3, 3, 3], [3, 2, 2, 2], [4, 1, 1, 1]]
SAME = [[1, 4, 4, 3], [2, 3, 3, 3], [3, 2, 2, 2], [4, 1, None, 1]]
FLIPPED = [[4, 1, 1, 1], [3, 2, 2, 2], [2, 3, 3, 3], [1, 4, 4, 4]]


def test_answer_matrix_keeps_invalid_answers_missing():
    m = answer_matrix(samples("m", {"fixed_x": SAME}), PEOPLE, "fixed_x", Q)
    assert m.shape == (4, 4) and np.isnan(m[3, 2]) and m[0, 3] == 3


def test_stable_model_by_hand():
    metrics = model_metrics(samples("m", {"no_conv": BASE, "fixed_x": SAME}), PEOPLE, CONTEXTS, Q, n_resamples=200)
    # warmth: reversed w2 makes both items rise with the index in both contexts (rho 1);
    # drive falls in both (rho 1): stability 1, and the bootstrap interval sits at 1
    assert metrics["rank_order_stability"]["value"] == pytest.approx(1.0)
    assert metrics["stability_matrix"]["contexts"] == ["no_conv", "fixed_x"]
    assert metrics["stability_per_value"] == {"warmth": pytest.approx(1.0), "drive": pytest.approx(1.0)}
    assert metrics["invalid"] == 1 and metrics["answers"] == 32
    assert metrics["validity"]["fixed_x"]["invalid_rate"] == pytest.approx(1 / 16)
    assert set(metrics["validity"]["no_conv"]["cfa"]) == {"openness_to_change", "self_enhancement", "conservation",
                                                           "self_transcendence"}


def test_flipped_model_and_the_leaderboard():
    stable = model_metrics(samples("a", {"no_conv": BASE, "fixed_x": SAME}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    flipped = model_metrics(samples("b", {"no_conv": BASE, "fixed_x": FLIPPED}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    assert flipped["rank_order_stability"]["value"] == pytest.approx(-1.0)
    names = ["no_conv", "fixed_x"]
    played, table, groups = games({"a": stable, "b": flipped}, names)
    columns = [game.name for game in played]  # names for people; groups come from each game's contexts
    assert columns[0] == "stability:no_conv|fixed_x" and table[:, 0].tolist() == pytest.approx([1.0, -1.0])
    assert len(columns) == 1 + 4 * 2  # one pair + (CFI, SRMR, RMSEA, Stress-1) per context
    assert groups[0] == [0, 1, 2, 3, 4] and groups[1] == [0, 5, 6, 7, 8]
    board = leaderboard({"a": stable, "b": flipped}, names)
    # 4 personas are too few for CFA: the defined games are stability (a wins) and the two Stress-1
    # games (tied in no_conv, where both answered the same; b's is lower in fixed_x, where a has an invalid answer)
    defined = [c for c, x in zip(columns, table[0]) if np.isfinite(x)]
    assert defined == ["stability:no_conv|fixed_x", "stress1:no_conv", "stress1:fixed_x"]
    assert table[0, 4] == table[1, 4] and table[0, 8] < table[1, 8]
    assert board["models"]["a"]["win_rate"] == pytest.approx(1 / 3)
    assert board["models"]["b"]["win_rate"] == pytest.approx(1 / 3)
    assert board["models"]["a"]["cardinal"] == pytest.approx(np.nanmean(table[0]))
    assert board["models"]["a"]["cardinal"] > board["models"]["b"]["cardinal"]
    assert board["kendalls_w"] is not None and board["diversity"] == pytest.approx(1 - board["kendalls_w"])
    assert board["sensitivity_win_rate"] is not None


def test_scores_csv_has_a_row_per_model_context_persona():
    tally = PersonaTally(PEOPLE, [c.name for c in CONTEXTS], Q)
    for sample in samples("m", {"no_conv": BASE, "fixed_x": SAME}):
        tally.add(sample)
    text = scores_csv({"m": tally}, PEOPLE, CONTEXTS, Q)
    lines = text.strip().splitlines()
    assert lines[0] == "model,context,persona_id,persona,warmth,drive" and len(lines) == 1 + 2 * 4
    # persona 0 in no_conv: answers 1, (5-4)=1, 4, 4 -> mean 2.5 -> warmth -1.5, drive 1.5
    assert lines[1] == "m,no_conv,p0,P0,-1.5000,1.5000"


def test_logprob_scorings_turn_the_first_token_into_an_answer():
    import math

    from robusteval.errors import UserError
    from robusteval.suites.persona import _sample
    from robusteval.types import Response, TokenLogprob

    top = ((" A", math.log(0.2)), (" D", math.log(0.6)), ("The", math.log(0.2)))
    reply = Response(key="k", text="Answer: D", logprobs=(TokenLogprob(" D", math.log(0.6), top),))
    ctx, item = CONTEXTS[0], Q.items[0]
    best = _sample("m", PEOPLE[0], ctx, Q, item, "q", 1, reply, None, "logprobs")
    assert (best.status, best.answer, best.letter_mass) == ("ok", 4, pytest.approx(0.8))
    mean = _sample("m", PEOPLE[0], ctx, Q, item, "q", 1, reply, None, "expected")
    assert mean.answer == pytest.approx(0.25 * 1 + 0.75 * 4) and mean.probs == pytest.approx((0.25, 0, 0, 0.75))
    failed = _sample("m", PEOPLE[0], ctx, Q, item, "q", 1, Response(key="k", text=None, error="boom"), None, "expected")
    assert failed.status == "failed" and failed.answer is None
    with pytest.raises(UserError, match="needs log-probabilities"):
        _sample("m", PEOPLE[0], ctx, Q, item, "q", 1, Response(key="k", text="D"), None, "logprobs")


def test_leaderboard_across_runs_scores_each_run_and_model(tmp_path):
    """`robusteval compare` on persona runs: every run x model is a contestant on the same games,
    exactly as if they had been models of one run."""
    import json

    from robusteval.compare import persona_leaderboard
    from robusteval.errors import UserError

    stable = model_metrics(samples("m", {"no_conv": BASE, "fixed_x": SAME}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    flipped = model_metrics(samples("m", {"no_conv": BASE, "fixed_x": FLIPPED}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    names = [c.name for c in CONTEXTS]
    for run, metrics, contexts in (("r1", stable, names), ("r2", flipped, names), ("r3", stable, ["no_conv"])):
        (tmp_path / run).mkdir()
        (tmp_path / run / "results.json").write_text(json.dumps(
            {"suite": "persona", "contexts": [{"name": c} for c in contexts], "metrics": {"m": metrics}}))
    board = persona_leaderboard([str(tmp_path / "r1"), str(tmp_path / "r2")])
    assert encode(board) == leaderboard({"r1/m": stable, "r2/m": flipped}, names)
    assert board.models["r1/m"].cardinal > board.models["r2/m"].cardinal
    with pytest.raises(UserError, match="different contexts"):
        persona_leaderboard([str(tmp_path / "r1"), str(tmp_path / "r3")])
    (tmp_path / "r2" / "results.json").write_text(json.dumps({"suite": "mcq", "metrics": {}}))
    assert persona_leaderboard([str(tmp_path / "r1"), str(tmp_path / "r2")]) is None


def _fail(rows: list[Sample], context: str, error: str, persons: int = 4) -> list[Sample]:
    """The answers of the first ``persons`` personas in ``context`` failed (as when their conversation did)."""
    from dataclasses import replace

    failing = {p.id for p in PEOPLE[:persons]}
    return [replace(s, status="failed", answer=None, response=None, error=error)
            if s.context == context and s.persona_id in failing else s for s in rows]


WINDOW = ("persona turn 1 failed: llama.cpp: bad response: request (522 tokens) exceeds the available context "
          "size (256 tokens)")


def test_a_context_that_lost_answers_makes_its_figures_n_a():
    """Every conversation of fixed_x failed (the context did not fit the window): no figure may be
    computed from what is left, and the reason says how to fix it."""
    rows = _fail(samples("a", {"no_conv": BASE, "fixed_x": SAME}), "fixed_x", WINDOW)
    m = model_metrics(rows, PEOPLE, CONTEXTS, Q, n_resamples=50)
    assert m["rank_order_stability"]["value"] is None and m["rank_order_stability"]["ci_low"] is None
    assert m["stability_matrix"]["values"] == [[1.0, None], [None, None]]
    assert m["stability_per_value"] == {"warmth": None, "drive": None}
    assert m["lost_contexts"] == {"fixed_x": {"failed": 16, "answers": 16, "error": WINDOW}}
    lost = m["validity"]["fixed_x"]
    assert lost["failed"] == 16 and lost["mds"]["stress1"] is None and lost["cfa_mean"]["cfi"] is None
    assert m["validity"]["no_conv"]["mds"]["stress1"] is not None  # the context that kept its answers keeps its figures
    assert "context fixed_x lost 16 of 16 answers" in m["na_reason"]
    assert "--context-max-tokens N" in m["na_reason"] and "n_ctx" in m["na_reason"]
    other = model_metrics(samples("b", {"no_conv": BASE, "fixed_x": FLIPPED}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    board = leaderboard({"a": m, "b": other}, ["no_conv", "fixed_x"])
    assert board["models"]["a"]["cardinal"] is None and "lost" in board["models"]["a"]["na_reason"]
    assert board["models"]["b"]["cardinal"] is not None  # b lost nothing: its mean is over all its games
    assert all(row["win_rate"] is None for row in board["models"].values())  # win rates compare with a's lost games
    assert board["diversity"] is None and board["sensitivity_win_rate"] is None and board["na_reason"]


def test_one_lost_cell_is_enough_and_other_failures_say_rerun():
    rows = _fail(samples("a", {"no_conv": BASE, "fixed_x": SAME}), "no_conv", "HTTP 500 from the server", persons=1)
    m = model_metrics(rows, PEOPLE, CONTEXTS, Q, n_resamples=50)
    assert m["rank_order_stability"]["value"] is None and m["lost_contexts"]["no_conv"]["failed"] == 4
    assert "rerun the same command" in m["na_reason"] and "--context-max-tokens" not in m["na_reason"]
    assert leaderboard({"a": m}, ["no_conv", "fixed_x"])["models"]["a"]["cardinal"] is None


def test_mds_method_is_chosen_recorded_and_checked():
    from types import SimpleNamespace

    from robusteval.errors import UserError
    from robusteval.suites.persona import Options, default_mds, validate

    table = {"no_conv": BASE, "fixed_x": SAME}
    classic = model_metrics(samples("m", table), PEOPLE, CONTEXTS, Q, n_resamples=20)
    board = model_metrics(samples("m", table), PEOPLE, CONTEXTS, Q, n_resamples=20, mds_method="leaderboard")
    assert {v["mds"]["method"] for v in classic["validity"].values()} == {"classic"}
    assert {v["mds"]["method"] for v in board["validity"].values()} == {"leaderboard"}
    # the leaderboard's own questionnaires get its MDS by default, ours the classic one
    assert (default_mds("pvq40"), default_mds("svs"), default_mds("ours")) == ("leaderboard", "leaderboard", "classic")
    with pytest.raises(UserError, match="--mds must be one of leaderboard, classic"):
        validate(SimpleNamespace(samples=1), Options(mds="metric"))


def test_games_carry_their_contexts_whatever_the_names():
    """A context named after its file may hold "|" or ":" (``file:a|b:c.jsonl`` is ``file_a|b:c``):
    each game carries its contexts as fields, so leaving one context out drops exactly its games
    (the columns were grouped by splitting the name "stability:a|b", which lost this context's)."""
    odd = [Context("no_conv", "no_conv"), Context("file_a|b:c", "chunk", ("x",))]
    names = [c.name for c in odd]
    stable = model_metrics(samples("a", {"no_conv": BASE, "file_a|b:c": SAME}), PEOPLE, odd, Q, n_resamples=20)
    flipped = model_metrics(samples("b", {"no_conv": BASE, "file_a|b:c": FLIPPED}), PEOPLE, odd, Q, n_resamples=20)
    played, _, groups = games({"a": stable, "b": flipped}, names)
    assert groups == [[0, 1, 2, 3, 4], [0, 5, 6, 7, 8]]
    assert played[0].contexts == ("no_conv", "file_a|b:c") and played[5].contexts == ("file_a|b:c",)
    assert played[0].name == "stability:no_conv|file_a|b:c"  # a label for people, never parsed
    # the same answers under a plain name score the same, sensitivity (leave one context out) included
    plain = leaderboard({m: model_metrics(samples(m, {"no_conv": BASE, "fixed_x": rows}), PEOPLE, CONTEXTS, Q,
                                          n_resamples=20) for m, rows in (("a", SAME), ("b", FLIPPED))},
                        ["no_conv", "fixed_x"])
    board = leaderboard({"a": stable, "b": flipped}, names)
    keys = ("models", "kendalls_w", "diversity", "sensitivity_win_rate", "sensitivity_cardinal")
    assert {k: board[k] for k in keys} == {k: plain[k] for k in keys}


def test_a_stability_from_some_correlations_says_how_many():
    """The figure is a mean of context pair x value correlations; one that is undefined (every persona
    answered the value alike) is left out, and then the figure says of how many it is the mean (issue
    34: a persona "stability 0.500" was 1 of 10 values); none defined is n/a."""
    from robusteval.results.persona import ModelStability, decode_metrics, stability_caveat

    full = model_metrics(samples("m", {"no_conv": BASE, "fixed_x": SAME}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    assert (full["stability_defined"], full["stability_correlations"]) == (2, 2)
    assert stability_caveat(decode_metrics({"m": full})["m"]) is None
    alike = [[2, 2, 2, 2]] * 4  # every persona the same: no value ranks anybody
    flat = model_metrics(samples("m", {"no_conv": alike, "fixed_x": alike}), PEOPLE, CONTEXTS, Q, n_resamples=50)
    assert (flat["stability_defined"], flat["stability_correlations"]) == (0, 2)
    assert flat["rank_order_stability"]["value"] is None
    assert (stability_caveat(decode_metrics({"m": flat})["m"]) or "").startswith("n/a: none of the 2")
    some = ModelStability(stability_correlations=10, stability_defined=1)
    assert (stability_caveat(some) or "").startswith("the mean of 1 of 10 value correlations; the other 9")
    assert stability_caveat(ModelStability()) is None  # a run from before the count: nothing claimed
