"""``robusteval score GRID --search best-worst --calls F --seed S [--method NAME]``: the search replayed
on a known grid, in results.json (``search`` as ``run --search`` writes it, ``search_truth`` the grid's
own best and worst) and the terminal; its flags' mistakes one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robusteval.results.codec import encode


def _grid(tmp_path, items: int = 80, variants: int = 12):
    rng = np.random.default_rng(5)
    logit = rng.normal(0.3, 1.5, items)[:, None] + rng.normal(0, 0.3, variants)[None, :]
    truth = rng.random(logit.shape) < 1 / (1 + np.exp(-logit))
    truth[:, 3], truth[:, 8] = True, False  # a plain best and worst
    path = tmp_path / "grid.csv"
    path.write_text("item,variant,family,correct\n" + "".join(
        f"q{i},t{j},prompt,{int(truth[i, j])}\n" for i in range(items) for j in range(variants)))
    texts = tmp_path / "texts.csv"
    texts.write_text("variant,text\n" + "".join(f"t{j},Template {j}: {{question}}\n" for j in range(variants)))
    return path, texts


def _score(cli_run, tmp_path, *flags):
    out = cli_run("score", *flags, "--out", tmp_path / "runs", "--model", "m")
    return out.code, out.out, out.err


@pytest.mark.parametrize("method", ["halving", "thompson", "uniform"])
def test_a_searched_score_of_a_grid_names_the_best_and_worst_beside_the_grids(tmp_path, cli_run, method):
    path, texts = _grid(tmp_path)
    code, out, err = _score(cli_run, tmp_path, str(path), "--search", "best-worst", "--calls", "0.25", "--seed", "2",
                            "--method", method, "--variant-texts", str(texts), "--run-id", method)
    assert code == 0, err
    results = json.loads((tmp_path / "runs" / method / "results.json").read_text())
    found, truth = results["search"]["m"]["prompt"], results["search_truth"]["m"]["prompt"]
    assert found["method"] == method and found["share"] == 0.25 and found["cells"] == 960
    assert 0 < found["calls"] <= 240
    assert (found["best"]["name"], found["worst"]["name"]) == ("t3", "t8")
    assert found["best"]["text"] == "Template 3: {question}"
    assert found["best"]["accuracy"]["value"] == 1.0 and found["worst"]["accuracy"]["value"] == 0.0
    assert (truth["best"]["name"], truth["worst"]["name"]) == ("t3", "t8") and truth["spread"]["value"] == 1.0
    assert truth["accuracies"]["t3"] == 1.0 and len(truth["accuracies"]) == 12 and found["accuracies"] == {}
    assert results["design"]["search_method"] == method and results["design"]["search_calls"] == 0.25
    assert "search for the best and worst" in out and "full grid's best" in out
    assert "100% of the full grid's spread" in out


def test_the_same_seed_replays_the_same_search(tmp_path, cli_run):
    path, _ = _grid(tmp_path)
    runs = []
    for run_id in ("a", "b"):
        code, _, err = _score(cli_run, tmp_path, str(path), "--search", "best-worst", "--calls", "0.05", "--seed", "4",
                              "--run-id", run_id)
        assert code == 0, err
        runs.append(json.loads((tmp_path / "runs" / run_id / "results.json").read_text())["search"])
    assert runs[0] == runs[1] and runs[0]["m"]["prompt"]["method"] == "halving"


def test_search_flags_mistakes_are_one_line(tmp_path, cli_run):
    path, _ = _grid(tmp_path, 10)
    for flags, words in ((("--search", "best-worst"), "--calls"),
                         (("--calls", "0.1"), "apply with --search"),
                         (("--search", "best-worst", "--calls", "0.1", "--method", "nope"), "--method"),
                         (("--search", "best-worst", "--calls", "0"), "calls")):
        code, _, err = _score(cli_run, tmp_path, str(path), *flags)
        assert code == 2 and words in err and "Traceback" not in err, (flags, err)
    replies = tmp_path / "replies.jsonl"
    replies.write_text('{"item_id": "q1", "variant": "base", "reply": "A"}\n')
    code, _, err = _score(cli_run, tmp_path, str(replies), "--search", "best-worst", "--calls", "0.1",
                          "--as", "replies")
    assert code == 2 and "correctness grid" in err


def test_the_api_replays_the_search_as_the_command_does(tmp_path):
    import robusteval

    path, _ = _grid(tmp_path)
    record = robusteval.score(path, model="m", search="best-worst", calls=0.25, method="uniform", seed=2,
                              out_dir=str(tmp_path / "runs"), run_id="api")
    found = json.loads((tmp_path / "runs" / "api" / "results.json").read_text())["search"]["m"]["prompt"]
    assert record.run_id == "api" and encode(record.extra.search["m"]["prompt"]) == found
    assert (found["method"], found["best"]["name"], found["worst"]["name"]) == ("uniform", "t3", "t8")
