"""The covariates a budgeted estimate is told (`metrics.budget_covariates`): the kinds' checks, the
gold's position, the columns each kind gives a family, and ``none`` as no covariates at all."""

from __future__ import annotations

import numpy as np
import pytest

from robusteval.errors import UserError
from robusteval.metrics.budget import Grid, choose_cells, estimate, estimate_grid
from robusteval.metrics.budget_covariates import (
    Covariates,
    check_covariates,
    family_covariates,
    gold_covariates,
    minilm_covariates,
)


def _fake_embed(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in for MiniLM: letter counts, so texts that share words lie close."""
    return np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=float)


@pytest.mark.parametrize("kinds, message", [
    (("names", "embedding"), "embedding: unknown; give a comma list of names, text, gold, none"),
    (("none", "text"), "'none' stands alone"),
    (("gold", "gold"), "a kind given twice"),
    ((), "give one or more of names, text, gold, none"),
])
def test_a_bad_list_of_kinds_is_one_message_naming_the_choices(kinds, message):
    with pytest.raises(UserError, match="--budget-covariates") as err:
        check_covariates("--budget-covariates", kinds)
    assert message in str(err.value)


def test_good_lists_pass_as_given():
    assert check_covariates("--x", ["text", "names"]) == ("text", "names")
    assert check_covariates("--x", ("none",)) == ("none",)


def test_the_gold_position_is_one_number_per_variant():
    x = gold_covariates(["gold@A", "gold@B", "gold@D"])
    assert x is not None and x.shape == (3, 1) and x[:, 0].tolist() == [0.0, 1.0, 3.0]
    crossed = gold_covariates(["A.|gold@A", "1.|gold@C", "1.|gold@A"])
    assert crossed is not None and crossed[:, 0].tolist() == [0.0, 2.0, 0.0]
    assert gold_covariates(["base", "exam"]) is None  # no gold@ names
    assert gold_covariates(["gold@B", "gold@B|x"]) is None  # one position: nothing to learn from


def test_each_kind_asked_says_how_many_columns_it_gave():
    texts = ["Answer the question.", "Think step by step.", "Reply with one letter only.", "Be brief, answer now."]
    names = ["base", "steps", "letter", "brief"]
    got = family_covariates(names, ("names", "text", "gold"), texts, embed=_fake_embed)
    assert got.columns["names"] == 0 and got.columns["gold"] == 0 and got.columns["text"] >= 1
    assert got.matrix is not None and got.matrix.shape == (4, got.columns["text"])
    # a variant without text: the family gets no text column, and says so (0), never a partial one
    assert family_covariates(names, ("text",), [*texts[:3], None], embed=_fake_embed) == Covariates(None, {"text": 0})
    order = family_covariates(["gold@A", "gold@B", "gold@C"], ("names", "gold"))
    assert order.columns == {"names": 0, "gold": 1} and order.matrix is not None and order.matrix.shape == (3, 1)
    assert family_covariates(names, ("none",)) == Covariates(None, {})


def _grid(covariates: Covariates, n_items: int = 150, n_vars: int = 6) -> tuple[Grid, np.ndarray]:
    rng = np.random.default_rng(2)
    logit = rng.normal(0, 1.2, n_items)[:, None] + np.linspace(-1, 1, n_vars)[None, :]
    full = (rng.random(logit.shape) < 1 / (1 + np.exp(-logit))).astype(float)
    asked = choose_cells(n_items, n_vars, 0.2, seed=1)
    grid = Grid("prompt", tuple(f"q{i}" for i in range(n_items)), tuple(f"t{j}" for j in range(n_vars)),
                np.ones(full.shape, dtype=bool), asked, int(asked.sum()), 0, covariates)
    return grid, np.where(asked, full, np.nan)


def test_none_estimates_as_no_covariates_and_is_recorded_as_such():
    grid, observed = _grid(family_covariates([f"t{j}" for j in range(6)], ("none",)))
    got = estimate_grid(grid, observed, 0.2, seed=4)
    plain = estimate(observed, names=grid.variants, budget=0.2, seed=4)
    for name, e in plain.variants.items():
        assert got.variants[name].value == pytest.approx(e.value, abs=1e-9)
    assert got.spread.value == pytest.approx(plain.spread.value, abs=1e-9)
    assert got.covariates == {}


def test_a_grid_s_covariates_reach_the_estimate_and_its_record():
    texts = [f"template {'x' * j} text" for j in range(6)]
    cov = family_covariates([f"t{j}" for j in range(6)], ("text",), texts, embed=_fake_embed)
    assert cov.matrix is not None
    grid, observed = _grid(cov)
    told = estimate_grid(grid, observed, 0.2, seed=4)
    direct = estimate(observed, names=grid.variants, covariates=cov.matrix, budget=0.2, seed=4)
    untold = estimate(observed, names=grid.variants, budget=0.2, seed=4)
    assert told.covariates == {"text": cov.matrix.shape[1]}
    assert all(told.variants[k].value == pytest.approx(e.value, abs=1e-9) for k, e in direct.variants.items())
    assert any(abs(told.variants[k].value - e.value) > 1e-6 for k, e in untold.variants.items())


@pytest.mark.slow
def test_the_offline_minilm_places_templates_worded_alike_together():
    pytest.importorskip("sentence_transformers")
    from robusteval.probes.templates import load_templates

    templates = {t.name: t.text for t in load_templates()}
    x = minilm_covariates(list(templates.values()))
    assert x is not None and x.shape[0] == len(templates) and 1 <= x.shape[1] <= len(templates) // 3
    at = {name: x[i] for i, name in enumerate(templates)}
    alike = np.linalg.norm(at["step-by-step"] - at["step-by-step-after"])
    assert alike < np.linalg.norm(at["step-by-step"] - at["direct-terse"])
