"""Leaderboards: one board per suite, dataset and size, an n column, tie groups, and per-item
values read once per version of a run's samples file."""

from __future__ import annotations

import json
import os

import robusteval.report.item_values as item_values_module
from robusteval.report.leaderboard import boards, data_of, item_scores


def _results(run_id: str, accuracy: float, *, data: str | None = None, limit: int | None = 20, n: int = 20) -> dict:
    est = {"value": accuracy, "ci_low": accuracy - 0.05, "ci_high": accuracy + 0.05, "n": n}
    return {"run_id": run_id, "suite": "mcq", "started": "2026-11-23T10:00:00", "models": {"m": {}},
            "config": {"data": data, "limit": limit},
            "data": {"sources": [{"source": "mmlu (offline)"}]},
            "metrics": {"m": {"order": {"accuracy": est, "consistency_rate": est}}}}


def _write(root, run_id, results, rows=()):
    (root / run_id).mkdir()
    (root / run_id / "results.json").write_text(json.dumps(results))
    if rows:
        (root / run_id / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_runs_on_other_data_or_sizes_are_never_ranked_in_one_table(tmp_path):
    _write(tmp_path, "small-a", _results("small-a", 0.9))
    _write(tmp_path, "small-b", _results("small-b", 0.3))
    _write(tmp_path, "big", _results("big", 0.5, limit=None, n=2000))
    _write(tmp_path, "own", _results("own", 0.7, data="my.csv"))
    _write(tmp_path, "tiny", _results("tiny", 0.4, limit=5, n=5))
    found = {(b.dataset, b.size): b for b in boards(tmp_path)}
    # per dataset, the most items first (a string sort put "5 items" after "20 items" and "all" last)
    assert list(found) == [("mmlu (offline)", "all items"), ("mmlu (offline)", "20 items, seed 0"),
                           ("mmlu (offline)", "5 items, seed 0"), ("my.csv", "20 items, seed 0")]
    small = found[("mmlu (offline)", "20 items, seed 0")]
    assert [(r.run_id, r.rank, r.n) for r in small.rows] == [("small-a", 1, 20), ("small-b", 2, 20)]
    assert [(r.run_id, r.rank, r.n) for r in found[("mmlu (offline)", "all items")].rows] == [("big", 1, 2000)]
    assert len({b.key for b in found.values()}) == 4  # one anchor each


def test_data_of_names_the_default_set_and_a_shard():
    assert data_of({}) == ("default", "all items")
    assert data_of({"config": {"limit": 5, "seed": 3, "shard": "1/4"}}) == ("default", "5 items, seed 3, shard 1/4")
    assert data_of({"data": {"sources": 5}}) == ("default", "all items")  # a hand-edited audit: no crash


def test_tie_groups_list_the_rows_that_share_a_rank(tmp_path):
    for run_id, acc in (("best", 0.90), ("mid", 0.88), ("weak", 0.30)):
        _write(tmp_path, run_id, _results(run_id, acc))
    (board,) = boards(tmp_path)
    assert [(rank, sorted(r.run_id for r in rows)) for rank, rows in board.tie_groups] == [(1, ["best", "mid"])]
    assert {r.run_id: r.basis for r in board.rows}["mid"] == "intervals"


def _rows(correct_q0: bool) -> list[dict]:
    return [{"model": "m", "item_id": f"q{n}", "family": "order", "variant": v, "sample": 0,
             "correct": correct_q0 if n == 0 else n % 2 == 0, "answer_option": 0, "status": "ok",
             "prompt": "a long prompt " * 50, "response": "a long reply " * 50}
            for n in range(6) for v in ("o1", "o2")]


def test_item_scores_are_read_once_per_version_of_the_samples_file(tmp_path, monkeypatch):
    _write(tmp_path, "a", _results("a", 0.5), _rows(True))
    samples = tmp_path / "a" / "samples.jsonl"
    reads = []
    real = item_values_module.iter_jsonl

    def counting(path):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(item_values_module, "iter_jsonl", counting)
    first = item_scores(samples, "order accuracy")
    assert first["m"]["q0"] == 1.0 and item_scores(samples, "order accuracy") == first
    boards(tmp_path)  # a page load: the cached values, no read
    assert len(reads) == 1
    samples.write_text("".join(json.dumps(r) + "\n" for r in _rows(False)))
    stat = samples.stat()
    os.utime(samples, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a later version of the file
    assert item_scores(samples, "order accuracy")["m"]["q0"] == 0.0
    assert len(reads) == 2


def test_streamed_rows_keep_no_prompt_or_reply(tmp_path, monkeypatch):
    _write(tmp_path, "a", _results("a", 0.5), _rows(True))
    seen = []
    real = item_values_module.item_values

    def spy(suite, results, rows):
        seen.extend(rows)
        return real(suite, results, rows)

    monkeypatch.setattr(item_values_module, "item_values", spy)
    item_values_module.run_item_values("mcq", {}, tmp_path / "a" / "samples.jsonl")
    assert seen and all("prompt" not in r and "response" not in r for r in seen)


def test_the_page_shows_each_board_its_n_and_its_tie_groups(tmp_path):
    from robusteval.report.render import environment

    for run_id, acc in (("best", 0.90), ("mid", 0.88)):
        _write(tmp_path, run_id, _results(run_id, acc))
    _write(tmp_path, "big", _results("big", 0.5, limit=None, n=2000))
    page = environment().get_template("leaderboard.html.j2").render(boards=boards(tmp_path), runs_dir=str(tmp_path))
    assert page.count('<table class="data leaderboard"') == 2
    assert "mmlu (offline)</bdi> · 20 items, seed 0" in page and "mmlu (offline)</bdi> · all items" in page
    assert ">2000</td>" in page and ">20</td>" in page
    assert page.index("<bdi>best</bdi></td>") < page.index("<bdi>mid</bdi></td>")  # best rank first
    assert "Tie group =1: <bdi>m</bdi> (<bdi>best</bdi>), <bdi>m</bdi> (<bdi>mid</bdi>)" in page


def test_the_page_lists_rows_best_rank_first(tmp_path):
    from robusteval.report.render import environment

    for run_id, acc in (("a-weak", 0.2), ("b-best", 0.9), ("c-mid", 0.5)):
        _write(tmp_path, run_id, _results(run_id, acc))
    (board,) = boards(tmp_path)
    assert [r.run_id for r in board.ranked_rows] == ["b-best", "c-mid", "a-weak"]
    page = environment().get_template("leaderboard.html.j2").render(boards=[board], runs_dir=str(tmp_path))
    assert page.index("<bdi>b-best</bdi>") < page.index("<bdi>c-mid</bdi>") < page.index("<bdi>a-weak</bdi>")


def test_unfinished_and_broken_runs_are_left_out_with_their_reason_never_ranked(tmp_path):
    """A folder still holding `.reserved` (a run stopped as it wrote its files) is no second finished
    row; a results.json that does not fit or is nested too deep leaves its folder out with a word."""
    from robusteval.report.leaderboard import UNFINISHED, leaderboard
    from robusteval.report.render import render_leaderboard

    _write(tmp_path, "done", _results("done", 0.5))
    _write(tmp_path, "killed", _results("done", 0.5))
    (tmp_path / "killed" / ".reserved").write_text("")
    (tmp_path / "running").mkdir()  # reserved, nothing written yet
    (tmp_path / "running" / ".reserved").write_text("")
    tampered = _results("tampered", 0.5)
    tampered["metrics"]["m"]["order"]["accuracy"]["value"] = "high"
    _write(tmp_path, "tampered", tampered)
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "cache").mkdir()  # not a run: no word about it
    page = leaderboard(tmp_path)
    (board,) = page.boards
    assert [r.run_id for r in board.rows] == ["done"]
    reasons = {left.run_id: left.reason for left in page.left_out}
    assert sorted(reasons) == ["deep", "killed", "running", "tampered"]
    assert reasons["killed"] == reasons["running"] == UNFINISHED
    assert "tampered/results.json: not a readable run record" in reasons["tampered"] and "'high'" in reasons["tampered"]
    assert "deep/results.json: JSON nested 100000 deep" in reasons["deep"]
    html = render_leaderboard(tmp_path)
    assert html.count('<li class="left-out-run">') == 4 and "<bdi>killed</bdi>: unfinished" in html
    assert html.count("<bdi>done</bdi></td>") == 1  # one row: the killed copy is not a second one


def test_a_run_whose_rows_cannot_be_built_is_left_out_with_a_word_not_the_page(tmp_path, monkeypatch):
    import robusteval.report.leaderboard as leaderboard_module

    _write(tmp_path, "good", _results("good", 0.5))
    _write(tmp_path, "odd", _results("odd", 0.4))
    real = leaderboard_module.headlines

    def failing_for_odd(results):
        if results.get("run_id") == "odd":
            raise TypeError("unsupported operand")
        return real(results)

    monkeypatch.setattr(leaderboard_module, "headlines", failing_for_odd)
    page = leaderboard_module.leaderboard(tmp_path)
    assert [r.run_id for b in page.boards for r in b.rows] == ["good"]
    assert [(left.run_id, left.reason) for left in page.left_out] == [
        ("odd", "its results.json cannot be shown (TypeError: unsupported operand)")]
