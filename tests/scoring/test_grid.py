"""`scoring.grid`: a cell that would make a name up is refused with its line: a blank ``model`` cell
(once a phantom model named after the file) and an item, variant or any cell given as a JSON list or
object (once the id ``"{'x': 1}"``)."""

from __future__ import annotations

import json

import pytest

from robusteval.cli import main
from robusteval.data.audit import DataAudit
from robusteval.errors import UserError
from robusteval.scoring.grid import load_grid


def test_a_blank_model_cell_is_refused_with_its_line(tmp_path, capsys):
    grid = tmp_path / "models.csv"
    grid.write_text("item,variant,correct,model\nq1,A.,1,m1\nq1,B.,0,m2\nq2,A.,1,\nq2,B.,1,m1\n")
    assert main(["score", str(grid), "--out", str(tmp_path / "runs"), "--run-id", "mc"]) == 2
    err = capsys.readouterr().err
    assert f"{grid} line 4: the 'model' cell is blank" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs" / "mc").exists()


def test_with_model_given_a_blank_cell_is_that_model(tmp_path):
    grid = tmp_path / "models.csv"
    grid.write_text("item,variant,correct,model\nq1,A.,1,\nq2,A.,0,\n")
    assert {c.model for c in load_grid(grid, DataAudit().source("g"), model="m")} == {"m"}
    plain = tmp_path / "plain.csv"  # no model column at all: the file's name, as before
    plain.write_text("item,variant,correct\nq1,A.,1\n")
    assert {c.model for c in load_grid(plain, DataAudit().source("g"))} == {"plain"}


@pytest.mark.parametrize(("key", "value"), [("item", {"x": 1}), ("variant", ["A."]), ("answer", {"label": "A"})])
def test_a_cell_given_as_a_json_list_or_object_is_refused(tmp_path, key, value):
    grid = tmp_path / "g.jsonl"
    rows = [{"item": "q1", "variant": "A.", "correct": 1}, {"item": "q2", "variant": "A.", "correct": 1, key: value}]
    grid.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UserError, match=rf"g\.jsonl line 2: '{key}' must be text or a number, got an? "):
        load_grid(grid, DataAudit().source("g"))
