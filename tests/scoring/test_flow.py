"""`scoring.flow.score_request`: ``robusteval score``'s flags and `robusteval.score`'s arguments decoded
by one rule, a run's settings decoder: ranges checked (``--seed -1``), one string taken as a list of
names as `evaluate` takes it, an unknown ``--as`` kind refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robusteval
from robusteval.cli import main
from robusteval.errors import UserError
from robusteval.scoring.flow import score_request

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mcq_small.jsonl"


@pytest.fixture
def replies(tmp_path) -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"item_id": q, "variant": f"gold@{at}", "reply": f"The best answer is {at}"})
                            + "\n" for q in ("q2", "q3") for at in "ABCD"))
    return path


def test_a_negative_seed_is_one_message_from_the_command(tmp_path, capsys, replies):
    argv = ["score", str(replies), "--data", str(FIXTURE), "--families", "order", "--out", str(tmp_path / "runs")]
    assert main([*argv, "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--seed -1: out of range; it must be in [0, 4294967295]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("settings", "message"), [
    ({"seed": -1}, "--seed -1: out of range; it must be in [0, 4294967295]"),
    ({"seed": 2**40}, "--seed 1099511627776: out of range"),
    ({"kind": "bogus"}, "score: --as 'bogus': the files are one of replies, mmlu-pro, lm-eval, inspect, grid"),
    ({"budget": 0.0}, "--budget 0: out of range; it must be in (0, 1]"),
    ({"families": 3}, "setting 'families' must be a list of names"),
])
def test_the_api_refuses_what_the_command_refuses(tmp_path, replies, settings, message):
    with pytest.raises(UserError) as caught:
        robusteval.score(replies, data=str(FIXTURE), out_dir=str(tmp_path / "runs"), **settings)
    assert message in str(caught.value)


def test_one_string_is_one_name_as_in_evaluate(tmp_path, replies):
    record = robusteval.score(replies, data=str(FIXTURE), families="order", out_dir=str(tmp_path / "runs"))
    assert list(record.metrics["r"]) == ["order"]  # once: "families o, r, d, e, r cannot be rebuilt"
    request = score_request({"paths": ("g.csv",), "families": "order,format", "covariates": "names"})
    assert request.families == ("order", "format") and request.covariates == ("names",)
