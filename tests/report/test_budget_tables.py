"""The budgeted estimate's tables: asked cells per variant, intervals only where the benchmark backs
them (the others marked), and the full grid beside each estimate after ``score GRID --budget``."""

from __future__ import annotations

from robusteval.estimate import Estimate
from robusteval.report.budget import FEW_CELLS, MANY_VARIANTS, VARIANT_CELLS, rows, trust_line, trusted
from robusteval.results.budget import BudgetEstimate


def _estimate(counts: list[int], cells: int = 10_000) -> BudgetEstimate:
    names = [f"t{j}" for j in range(len(counts))]
    return BudgetEstimate(variants={n: Estimate(0.5, 0.4, 0.6) for n in names},
                          quantiles={"5%": Estimate(0.45, 0.4, 0.5), "50%": Estimate(0.5, 0.45, 0.55),
                                     "95%": Estimate(0.55, 0.5, 0.6)},
                          spread=Estimate(0.1, 0.05, 0.2), asked=sum(counts), cells=cells, budget=0.1,
                          asked_per_variant=dict(zip(names, counts)))


def test_too_few_cells_print_no_interval_and_say_why():
    thin = _estimate([VARIANT_CELLS - 1] + [100] * 9)  # 10 variants, one below the line
    assert trusted(thin) == (False, False)
    table = rows(thin)
    assert all("[" not in value and value.endswith("†") for _, value, _ in table)
    assert table[0] == ("t0", "0.500 †", str(VARIANT_CELLS - 1))
    line = trust_line(thin)
    assert f"1 of 10 variants have fewer than {VARIANT_CELLS};" in line and "not shown" in line
    assert f"quantiles and spread need {MANY_VARIANTS} or more variants" in line


def test_enough_variants_print_every_interval():
    e = _estimate([FEW_CELLS] * MANY_VARIANTS)
    assert trusted(e) == (True, True) and "not shown" not in trust_line(e)
    assert all("[" in value and "†" not in value for _, value, _ in rows(e))


def test_many_variants_with_very_few_cells_print_only_the_variants_intervals():
    e = _estimate([FEW_CELLS - 1] * 100)
    assert trusted(e) == (True, False)
    line = trust_line(e)
    assert f"100 of 100 variants have fewer than {FEW_CELLS}, which the quantiles and spread need" in line
    assert "not shown" in line and "need 50" not in line


def test_few_variants_print_the_variants_intervals_only():
    # the quantiles and spread of a real 10-template grid held the truth in 0.70-0.85 of repeats
    e = _estimate([100] * 10)
    assert trusted(e) == (True, False) and "not shown" in trust_line(e)
    assert "variants have fewer" not in trust_line(e)
    table = rows(e)
    assert all("[" in value for _, value, _ in table[:10])
    assert all(value.endswith("†") and "[" not in value for _, value, _ in table[10:])


def test_the_full_grid_sits_beside_each_estimate():
    e = _estimate([40, 40])
    truth = BudgetEstimate(variants={"t0": Estimate(0.52), "t1": Estimate(0.48)},
                           quantiles={"5%": Estimate(0.482), "50%": Estimate(0.5), "95%": Estimate(0.518)},
                           spread=Estimate(0.04), asked=e.cells, cells=e.cells)
    table = rows(e, truth)
    assert [r[-1] for r in table] == ["0.520", "0.480", "0.482", "0.500", "0.518", "0.040"]


def test_a_run_written_before_the_counts_keeps_its_intervals():
    old = BudgetEstimate(variants={"a": Estimate(0.5, 0.4, 0.6)}, spread=Estimate(0.1, 0.0, 0.2), asked=5, cells=50)
    assert trusted(old) == (True, True) and trust_line(old) == "" and "[" in rows(old)[0][1]


def test_the_reports_section_carries_the_full_grid_and_the_trust_line(tmp_path):
    from robusteval.report.budget import budget_section
    from robusteval.report.model import Run
    from robusteval.results.budget import BudgetEstimates
    from robusteval.results.codec import encode

    e = _estimate([40, 40])
    truth = BudgetEstimate(variants={"t0": Estimate(0.52), "t1": Estimate(0.48)}, spread=Estimate(0.04),
                           asked=e.cells, cells=e.cells)
    results = {"suite": "mcq", "budget": encode({"m": {"prompt": e}}, BudgetEstimates),
               "budget_truth": encode({"m": {"prompt": truth}}, BudgetEstimates)}
    section = budget_section(Run(tmp_path, results))
    (table,) = section.tables
    assert table.columns[-1] == "full grid" and table.rows[0][-1] == "0.520"
    assert any("m · prompt: asked cells per variant: 40-40; quantiles and spread need" in n for n in section.notes)
    assert section.notes[0].startswith("score --budget")
    plain = budget_section(Run(tmp_path, {"suite": "mcq", "budget": results["budget"]}))
    assert plain.tables[0].columns[-1] == "asked cells" and plain.notes[0].startswith("--budget")
