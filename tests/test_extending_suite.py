"""docs/extending.md's sixth suite (`shout`), taken from the page and run as it stands: its typed record,
its module and its spec line are all it adds (no encoder), and it runs end to end through the
deterministic stub, then through ``report``, ``compare`` and the leaderboard like the five suites,
each showing its intervals."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from robusteval.config import RunConfig
from robusteval.data.mcq import load_items
from robusteval.suite_specs import SUITES
from robusteval.testing.openai_stub import expected_answer
from robusteval.types import GenParams, Message

DOC = Path(__file__).parents[1] / "docs" / "extending.md"
MODULE = "robusteval.suites.shout"
RECORDS = "robusteval.results.shout"


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return next(b for b in blocks if marker in b)


@pytest.fixture
def shout(monkeypatch):
    """The page's record and module, importable under the names its spec gives, and its spec line run
    (all undone after the test)."""
    records = types.ModuleType(RECORDS)
    records.__file__ = str(DOC)
    monkeypatch.setitem(sys.modules, RECORDS, records)
    exec(compile(_block("class ShoutScores"), "docs/extending.md (record)", "exec"), records.__dict__)
    module = types.ModuleType(MODULE)
    module.__file__ = str(DOC)
    monkeypatch.setitem(sys.modules, MODULE, module)
    exec(compile(_block('NAME = "shout"'), "docs/extending.md (module)", "exec"), module.__dict__)
    monkeypatch.setitem(SUITES, "shout", None)  # the key goes with the test, whatever the line sets
    exec(compile(_block('SUITES["shout"]'), "docs/extending.md (spec line)", "exec"), {})
    return module


def _expected_kept(module, data: Path, model: str, options=None) -> tuple[float, float]:
    """The share of questions the stub answers alike written and shouted, and its accuracy as
    written: computed from the stub's own rule, not from the run."""
    config = RunConfig()
    params = GenParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                       seed=config.seed)
    items = load_items(str(data))
    options = options or module.Options()
    kept = right = 0
    for item in items:
        letters = [expected_answer(model, (Message("user", module.prompt(item, v, options)),), params)[-2]
                   for v in module.VARIANTS]
        kept += letters[0] == letters[1]
        right += "ABCD".index(letters[0]) == item.answer
    return kept / len(items), right / len(items)


def test_the_sixth_suite_runs_with_report_compare_and_leaderboard(shout, cli_run, stub, mcq_file, tmp_path):
    from robusteval.report.leaderboard import boards

    first = cli_run("run", "shout", "--data", mcq_file, "--model", f"openai:stub?base_url={stub.base_url}",
                    "--run-id", "a")
    second = cli_run("run", "shout", "--data", mcq_file, "--shout-options",
                     "--model", f"openai:other?base_url={stub.base_url}", "--run-id", "b")
    assert first.code == 0 and second.code == 0, first.err + second.err
    n = len(mcq_file.read_text().splitlines())
    samples = first.samples()
    assert len(samples) == 2 * n and [s["variant"] for s in samples[:2]] == ["written", "shouted"]
    kept, accuracy = _expected_kept(shout, mcq_file, "stub")
    metrics = first.results()["metrics"]["openai:stub"]
    assert metrics["kept"]["value"] == pytest.approx(kept)
    assert metrics["accuracy_written"]["value"] == pytest.approx(accuracy)
    # the record has no encoder: the codec writes it by its declared type, intervals and all
    assert set(metrics["kept"]) == {"value", "ci_low", "ci_high", "n"} and metrics["kept"]["n"] == n
    assert metrics["kept"]["ci_low"] < kept < metrics["kept"]["ci_high"]
    interval = f"{kept:.3f} [{metrics['kept']['ci_low']:.3f}, {metrics['kept']['ci_high']:.3f}]"
    assert "shout metrics" in first.out and interval in first.out  # the default terminal table
    assert second.results()["config"]["options"] == {"shout_options": True}

    report = cli_run("report", first.folder)
    assert report.code == 0, report.err
    html = (first.folder / "report.html").read_text(encoding="utf-8")
    assert "shout metrics" in html and "accuracy_shouted" in html and interval in html

    compared = cli_run("compare", first.folder, second.folder)
    assert compared.code == 0, compared.err
    assert interval in compared.out  # each run's headline with its interval
    kept_b, _ = _expected_kept(shout, mcq_file, "other", shout.Options(shout_options=True))
    paired = next(line for line in compared.out.splitlines() if line.split("│")[1:2] == [" kept   "])
    assert "question" in paired and f"{kept_b - kept:.3f}" in paired  # B - A over the questions

    board = next(b for b in boards(tmp_path / "runs") if b.suite == "shout")
    assert board.metrics[0] == "kept" and {r.model for r in board.rows} == {"openai:stub", "openai:other"}
    assert all(r.rank is not None for r in board.rows)
    kept_values = {r.model: r.values["kept"][0] for r in board.rows}
    assert kept_values == pytest.approx({"openai:stub": kept, "openai:other": kept_b})
    low, high = next(r.values["kept"][1:] for r in board.rows if r.model == "openai:stub")
    assert f"{low:.3f}" == f"{metrics['kept']['ci_low']:.3f}" and f"{high:.3f}" == f"{metrics['kept']['ci_high']:.3f}"
