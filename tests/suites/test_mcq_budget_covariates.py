"""``run mcq --budget F --budget-covariates LIST`` and ``score GRID --budget F --covariates LIST``, end
to end through the deterministic stub (offline): the flag's checks, the covariates reaching the
estimate, and results.json, the terminal and the report saying which were used. MiniLM is replaced
by a deterministic fake here (tests/metrics/test_budget_covariates.py runs the real one, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import robusteval.metrics.budget as budget_module
import robusteval.metrics.budget_covariates as covariates_module
from robusteval.probes.templates import load_templates
from robusteval.report.model import Run
from robusteval.report.sections.mcq import sections

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _fake_embed(texts: list[str]) -> np.ndarray:
    return np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz{}"] for t in texts], dtype=float)


@pytest.fixture
def told(monkeypatch):
    """The texts embedded and the covariates each estimate was given, with the fake embedder."""
    seen: dict[str, list] = {"texts": [], "covariates": []}

    def embed(texts: list[str]) -> np.ndarray:
        seen["texts"].append(list(texts))
        return _fake_embed(texts)

    real = budget_module.estimate

    def spy(observed, **kw):
        seen["covariates"].append(kw.get("covariates"))
        return real(observed, **kw)

    monkeypatch.setattr(covariates_module, "embed_minilm", embed)
    monkeypatch.setattr(budget_module, "estimate", spy)
    return seen


def _flags(stub, *more: str) -> tuple[str, ...]:
    return ("--model", f"openai:stub?base_url={stub.base_url}", "--limit", "30", "--budget", "0.2", *more)


def test_text_covariates_embed_the_templates_and_reach_the_estimate(cli_run, stub, told):
    out = cli_run("run", "mcq", *_flags(stub, "--families", "prompt", "--budget-covariates", "text,names"))
    assert out.code == 0, out.err
    assert told["texts"] == [[t.text for t in load_templates()]]  # once, before asking, the templates' own texts
    x = told["covariates"][-1]
    assert x is not None and x.shape[0] == 10 and 1 <= x.shape[1] <= 3
    results = out.results()
    est = results["budget"]["openai:stub"]["prompt"]
    assert est["covariates"] == {"text": x.shape[1], "names": 0}
    assert results["design"]["budget_covariates"] == ["text", "names"]
    cols = f"{x.shape[1]} column{'s' * (x.shape[1] != 1)}"
    assert f"covariates: text ({cols}), names (nothing for this family)" in " ".join(out.out.split())
    report = next(s for s in sections(Run(out.folder, results)) if s.title == "mcq · budgeted estimate")
    assert any(f"text ({cols})" in note for note in report.notes)


def test_none_gives_the_estimate_of_no_covariates(cli_run, stub, told):
    # the prompt family's names say nothing (one setting each): the default's estimate is the uncovaried one
    default = cli_run("run", "mcq", *_flags(stub, "--families", "prompt", "--run-id", "d"))
    none = cli_run("run", "mcq", *_flags(stub, "--families", "prompt", "--budget-covariates", "none", "--run-id", "n"))
    assert default.code == 0 and none.code == 0, none.err
    a, b = default.results()["budget"]["openai:stub"]["prompt"], none.results()["budget"]["openai:stub"]["prompt"]
    assert a["covariates"] == {"names": 0} and b["covariates"] == {}
    for name, e in a["variants"].items():
        assert b["variants"][name]["value"] == pytest.approx(e["value"], abs=1e-9)
    assert b["spread"]["value"] == pytest.approx(a["spread"]["value"], abs=1e-9)
    assert all(x is None for x in told["covariates"]) and told["texts"] == []


def test_gold_tells_the_order_family_where_the_gold_is_and_text_that_it_has_none(cli_run, stub, told):
    out = cli_run("run", "mcq", *_flags(stub, "--families", "order,format", "--budget-covariates", "gold,text"))
    assert out.code == 0, out.err
    est = out.results()["budget"]["openai:stub"]
    assert est["order"]["covariates"] == {"gold": 1, "text": 0}  # an order has no text of its own
    assert est["format"]["covariates"]["gold"] == 0 and est["format"]["covariates"]["text"] >= 1
    assert "text (nothing for this family)" in " ".join(out.out.split())


@pytest.mark.parametrize("flags, message", [
    (("--budget", "0.2", "--budget-covariates", "text,embedding"),
     "--budget-covariates embedding: unknown; give a comma list of names, text, gold, none"),
    (("--budget", "0.2", "--budget-covariates", "none,gold"), "'none' stands alone"),
    (("--budget-covariates", "text"), "--budget-covariates applies with --budget"),
])
def test_a_bad_budget_covariates_flag_is_one_message(cli_run, flags, message):
    out = cli_run("run", "mcq", "--data", FIXTURES / "mcq_small.jsonl", *flags)
    assert out.code == 2 and message in out.err and "Traceback" not in out.err


def _grid(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    names = [t.name for t in load_templates()]
    logit = rng.normal(0, 1.5, 120)[:, None] + np.linspace(-1, 1, len(names))[None, :]
    truth = rng.random(logit.shape) < 1 / (1 + np.exp(-logit))
    path = tmp_path / "grid.csv"
    path.write_text("item,variant,family,correct\n" + "".join(
        f"q{i},{v},prompt,{int(truth[i, j])}\n" for i in range(120) for j, v in enumerate(names)))
    return path


def _texts(tmp_path: Path, templates=None, name: str = "texts.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"variant": t.name, "text": t.text}) + "\n"
                            for t in (templates or load_templates())))
    return path


def test_a_grid_s_estimate_is_told_the_variant_texts_file(cli_run, tmp_path, told):
    grid, texts = _grid(tmp_path), _texts(tmp_path)
    out = cli_run("score", grid, "--budget", "0.1", "--covariates", "names,text", "--variant-texts", texts,
                  "--out", tmp_path / "runs", "--run-id", "s", "--model", "m")
    assert out.code == 0, out.err
    assert told["texts"] == [[t.text for t in load_templates()]]
    results = out.results()
    k = told["covariates"][-1].shape[1]
    assert results["budget"]["m"]["prompt"]["covariates"] == {"names": 0, "text": k}
    assert results["design"]["budget_covariates"] == ["names", "text"] and results["design"]["variant_texts"]
    assert "full grid" in out.out and "covariates: names (nothing for this family), text" in " ".join(out.out.split())


@pytest.mark.parametrize("flags, message", [
    (("--budget", "0.1", "--covariates", "text"), "--covariates text embeds each variant's text, read from "
                                                  "--variant-texts"),
    (("--budget", "0.1", "--covariates", "names", "--variant-texts", "TEXTS"), "give both or neither"),
    (("--covariates", "names,text", "--variant-texts", "TEXTS"), "apply with --budget"),
    (("--budget", "0.1", "--covariates", "words"), "score: --covariates words: unknown; give a comma list of names, "
                                                   "text, gold, none"),
    (("--budget", "0.1", "--covariates", "text", "--variant-texts", "SHORT"), "has no text for 8 of family "
                                                                              "'prompt''s 10 variants"),
])
def test_bad_grid_covariates_are_one_message(cli_run, tmp_path, flags, message):
    grid = _grid(tmp_path)
    paths = {"TEXTS": str(_texts(tmp_path)), "SHORT": str(_texts(tmp_path, load_templates()[:2], "short.jsonl"))}
    out = cli_run("score", grid, *(paths.get(f, f) for f in flags), "--out", tmp_path / "runs")
    assert out.code == 2 and message in out.err and "Traceback" not in out.err
