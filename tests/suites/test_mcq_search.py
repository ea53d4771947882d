"""``run mcq --search best-worst --calls F``, end to end through the deterministic stub: only the cells
the search picks are asked, never more than F of them, and a rerun resumes from the store (it asks
nothing new and reaches the same best and worst)."""

from __future__ import annotations

import pytest

from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections


def _model(stub) -> str:
    return f"openai:stub?base_url={stub.base_url}"


@pytest.mark.parametrize("method", ["halving", "thompson", "uniform"])
def test_search_asks_its_share_and_a_rerun_asks_nothing_new(cli_run, stub, method):
    flags = ("run", "mcq", "--model", _model(stub), "--families", "prompt", "--limit", "30", "--search", "best-worst",
             "--calls", "0.2", "--search-method", method, "--seed", "3")
    first = cli_run(*flags, "--run-id", "first")
    assert first.code == 0, first.err
    found = first.results()["search"]["openai:stub"]["prompt"]
    assert found["method"] == method and found["cells"] == 300 and found["share"] == 0.2
    asked = first.samples()
    assert 0 < len(asked) == found["calls"] <= 60  # 20% of 30 questions x 10 templates, never more
    assert len({(s["item_id"], s["variant"]) for s in asked}) == len(asked)
    assert first.results()["models"]["openai:stub"]["usage"]["new"] == len(asked) == stub.state.total
    assert found["best"]["name"] != found["worst"]["name"]
    assert found["best"]["text"] and found["worst"]["text"]  # the templates' texts
    for v in (found["best"], found["worst"], found["spread"]):
        assert v["accuracy" if "accuracy" in v else "value"] is not None
    best = found["best"]["accuracy"]
    assert best["ci_low"] <= best["value"] <= best["ci_high"]
    assert found["spread"]["ci_low"] <= found["spread"]["value"] <= found["spread"]["ci_high"]
    assert "search for the best and worst" in first.out

    again = cli_run(*flags, "--run-id", "again")
    assert again.code == 0, again.err
    usage = again.results()["models"]["openai:stub"]["usage"]
    assert usage["new"] == 0 and usage["cached"] == len(asked)
    assert again.results()["search"] == first.results()["search"]
    report = [s for s in sections(Run(again.folder, again.results())) if "search" in s.title]
    assert len(report) == 1 and len(report[0].tables[0].rows) == 3


def test_search_flags_are_checked_before_any_request(cli_run, stub):
    base = ("run", "mcq", "--model", _model(stub), "--families", "prompt", "--limit", "5")
    for extra, words in ((("--search", "best-worst"), "--calls"),
                         (("--calls", "0.1"), "apply with --search"),
                         (("--search", "best-worst", "--calls", "0.1", "--search-method", "nope"), "--search-method"),
                         (("--search", "best-worst", "--calls", "0.1", "--budget", "0.1"), "--budget"),
                         (("--search", "best-worst", "--calls", "1.5"), "--calls")):
        out = cli_run(*base, *extra)
        assert out.code == 2 and words in out.err, (extra, out.err)
    assert stub.state.total == 0


def test_a_formats_search_shows_each_formats_own_strings(cli_run, stub):
    """The text of a found format is the format on the example question, as results.json's design keeps it:
    the whole prompt began with the instruction, whose label list differs per format, and hid the format."""
    flags = ("run", "mcq", "--model", _model(stub), "--families", "formats:8", "--limit", "20", "--search",
             "best-worst", "--calls", "0.25", "--run-id", "f")
    run = cli_run(*flags)
    assert run.code == 0, run.err
    results = run.results()
    found = results["search"]["openai:stub"]["formats:8"]
    formats = results["design"]["formats"]
    for role in ("best", "worst"):
        assert found[role]["text"] == formats[found[role]["name"]]["example"]
        assert not found[role]["text"].startswith("Answer the following")
