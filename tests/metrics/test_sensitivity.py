"""Every sensitivity measure pinned on small matrices computed by hand (the arithmetic is in the
comments, the expected values are numbers, not calls to the code under test)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robusteval.metrics.sensitivity import (
    SensitivityReport,
    flip_counts,
    item_extremes,
    item_posix,
    item_prompt_sensitivity,
    posix_matrix,
    sensitivity,
)

nan = np.nan

# 4 items x 3 variants (v0 is the unperturbed reference); item 1 has no answer for v2.
CORRECT = np.array([
    [1.0, 1.0, 0.0],
    [1.0, 0.0, nan],
    [0.0, 0.0, 1.0],
    [1.0, 1.0, 1.0],
])
# the original option each variant chose (gold: item 0 -> 2, item 1 -> 0, item 2 -> 0, item 3 -> 3)
ANSWERS = np.array([
    [2.0, 2.0, 1.0],
    [0.0, 3.0, nan],
    [1.0, 1.0, 0.0],
    [3.0, 3.0, 3.0],
])
NAMES = ("base", "lower", "shuffled")


@pytest.fixture(scope="module")
def report() -> SensitivityReport:
    return sensitivity(CORRECT, answers=ANSWERS, names=NAMES, reference="base")


def test_per_variant_accuracy(report):
    # base 3/4, lower 2/4, shuffled 2/3 (item 1 missing)
    assert [v.accuracy.value for v in report.per_variant] == pytest.approx([0.75, 0.5, 2 / 3])


def test_consistency_rates_both_definitions(report):
    # agreeing pairs per item: (2,2,1) 1 of 3; (0,3) 0 of 1; (1,1,0) 1 of 3; (3,3,3) 3 of 3
    # per item mean: (1/3 + 0 + 1/3 + 1) / 4 = 5/12; pooled: (1+0+1+3) / (3+1+3+3) = 5/10
    assert report.consistency_rate.value == pytest.approx(5 / 12)
    assert report.consistency_rate_pooled.value == pytest.approx(0.5)


def test_flip_rate_against_reference(report):
    # lower vs base: item 1 flips (3 vs 0): 1 of 4; shuffled vs base: items 0 (1 vs 2) and 2 (0 vs 1): 2 of 3
    lower, shuffled = report.per_variant[1], report.per_variant[2]
    assert lower.flip_rate.value == pytest.approx(0.25)
    assert shuffled.flip_rate.value == pytest.approx(2 / 3)
    assert report.flip_rate.value == pytest.approx(3 / 7)  # pooled: 3 flips in 7 comparisons
    assert report.per_variant[0].flip_rate.value is None  # the reference against itself


def test_spread_and_std(report):
    # accuracies 0.75, 0.5, 0.6667: spread 0.25; mean 0.63889, deviations 0.11111, -0.13889, 0.02778
    # sample variance (0.0123457 + 0.0192901 + 0.0007716) / 2 = 0.0162037, std 0.1272938
    assert report.spread.value == pytest.approx(0.25)
    assert report.std.value == pytest.approx(0.1272938, abs=1e-7)


def test_worst_and_best_case(report):
    # per item min: 0, 0, 0, 1 -> 1/4; max: 1, 1, 1, 1 -> 1
    assert report.worst_case.value == pytest.approx(0.25)
    assert report.best_case.value == pytest.approx(1.0)


def test_performance_drop_rate(report):
    # lower: items both answered 0-3, base right 3, lower right 2: 1 - 2/3 = 1/3
    # shuffled: items 0, 2, 3 both answered: base right 2 (items 0, 3), shuffled right 2 (items 2, 3): 0
    assert report.per_variant[1].drop_rate.value == pytest.approx(1 / 3)
    assert report.per_variant[2].drop_rate.value == pytest.approx(0.0)
    assert report.drop_rate.value == pytest.approx(1 / 6)  # mean over lower and shuffled
    assert report.per_variant[0].drop_rate.value is None


def test_prompt_sensi_score(report):
    # item 0 (1,1,0): |0|,|1|,|1| -> 2/3; item 1 (1,0): 1; item 2 (0,0,1): 2/3; item 3: 0
    # mean (2/3 + 1 + 2/3 + 0) / 4 = 7/12
    assert report.prompt_sensi_score.value == pytest.approx(7 / 12)


def test_max_avg_p_and_cps(report):
    # MaxP 0.75; AvgP (0.75 + 0.5 + 0.66667) / 3 = 0.638889; CPS 0.75 * (1 - (0.75 - 0.638889)) = 0.666667
    assert report.max_p.value == pytest.approx(0.75)
    assert report.avg_p.value == pytest.approx(0.6388889, abs=1e-7)
    assert report.cps.value == pytest.approx(0.6666667, abs=1e-7)


def test_max_p_interval_reaches_an_equal_truth():
    # 60 items, 10 variants, every cell a fair coin: every variant's true accuracy, and so MaxP, is 0.5.
    # The sample maximum (0.583 here) sits above it; a BCa bootstrap of the maximum said [0.517, 0.633]
    # and missed it. Simultaneous bounds on the ten accuracies reach it.
    c = (np.random.default_rng(7).random((60, 10)) < 0.5).astype(float)
    r = sensitivity(c, reference=None)
    assert r.max_p.value == pytest.approx(35 / 60)
    assert r.max_p.low < 0.5 < r.max_p.high and r.cps.low < 0.5 < r.cps.high


def test_simultaneous_bounds_hold_every_variant():
    from robusteval.metrics.stats import simultaneous_bounds

    # variant 0 right on every item: no bootstrap variance, Wilson's interval for 4 of 4 ([0.510, 1]);
    # variant 1 half right; variant 2 never answered
    y = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    x = np.array([[1.0, 1.0, 0.0]] * 4)
    ratios, low, high = simultaneous_bounds(y, x)
    assert ratios[:2].tolist() == [1.0, 0.5] and np.isnan(ratios[2])
    assert low[0] == pytest.approx(0.5101, abs=1e-4) and high[0] == 1.0
    assert low[1] < 0.5 < high[1]


def test_names_reference_and_item_count(report):
    assert report.variants == NAMES and report.reference == "base" and report.items == 4
    assert report.posix.value is None  # no log-likelihoods given


def test_every_interval_holds_its_value(report):
    estimates = [report.consistency_rate, report.consistency_rate_pooled, report.flip_rate, report.spread,
                 report.std, report.worst_case, report.best_case, report.drop_rate, report.prompt_sensi_score,
                 report.max_p, report.avg_p, report.cps]
    estimates += [e for v in report.per_variant for e in (v.accuracy, v.drop_rate, v.flip_rate) if e.value is not None]
    # a drop rate is a ratio over the reference's right answers (2 or 3 of 4 here): undefined in too
    # many resamples to have an interval (stats.MAX_UNDEFINED); every other measure has one
    drops = [report.drop_rate, *(v.drop_rate for v in report.per_variant)]
    assert [e.low for e in drops] == [None, None, 0.0, None]
    for e in estimates:
        if any(e is d for d in drops) and e.low is None:
            continue
        assert e.low is not None and e.low <= e.value + 1e-12 <= e.high + 2e-12, e


def test_a_drop_rate_on_one_right_reference_answer_has_no_interval():
    """The reference right on 1 of 20 questions: a third of the resamples lack that question and the
    rest all hold it, so a bootstrap would say PDR = 1 [1, 1]; no interval is given instead."""
    correct = np.zeros((20, 2))
    correct[0, 0] = 1.0
    report = sensitivity(correct, names=("base", "typo"), reference="base")
    drop = report.per_variant[1].drop_rate
    assert drop.value == 1.0 and drop.low is None and drop.high is None
    correct[:8, 0] = 1.0  # right on 8 of 20: every resample holds one, the interval is given
    assert sensitivity(correct, names=("base", "typo"), reference="base").per_variant[1].drop_rate.low is not None


def test_as_dict_names_every_measure(report):
    d = report.as_dict()
    assert d["cps"]["value"] == pytest.approx(0.6666667, abs=1e-7)
    assert set(d["per_variant"]) == set(NAMES)
    assert d["per_variant"]["lower"]["flip_rate"]["value"] == pytest.approx(0.25)


def test_deterministic_for_a_seed():
    a = sensitivity(CORRECT, answers=ANSWERS, seed=3).as_dict()
    b = sensitivity(CORRECT, answers=ANSWERS, seed=3).as_dict()
    assert a == b


# -- NaN handling ---------------------------------------------------------------------------------


def test_item_with_no_answer_is_left_out():
    # a fifth item with every cell missing changes nothing and is not counted
    padded = sensitivity(np.vstack([CORRECT, [nan, nan, nan]]), answers=np.vstack([ANSWERS, [nan, nan, nan]]))
    assert padded.items == 4
    assert padded.worst_case.value == pytest.approx(0.25)
    assert padded.prompt_sensi_score.value == pytest.approx(7 / 12)
    assert padded.consistency_rate.value == pytest.approx(5 / 12)


def test_variant_never_answered_is_left_out_of_template_measures():
    c = np.array([[1.0, 0.0, nan], [1.0, 1.0, nan]])
    r = sensitivity(c)
    # accuracies 1.0, 0.5 (the third is unanswered): MaxP 1, AvgP 0.75, CPS 1 * (1 - 0.25) = 0.75, spread 0.5
    assert (r.max_p.value, r.avg_p.value, r.cps.value, r.spread.value) == pytest.approx((1.0, 0.75, 0.75, 0.5))
    assert r.per_variant[2].accuracy.value is None and r.per_variant[2].drop_rate.value is None


def test_missing_cells_are_never_wrong():
    # item 0 misses v1: its worst case is its one answer (1), not 0
    worst, best, has = item_extremes(np.array([[1.0, nan], [0.0, 1.0], [nan, nan]]))
    assert worst[:2].tolist() == [1.0, 0.0] and best[:2].tolist() == [1.0, 1.0]
    assert math.isnan(worst[2]) and has.tolist() == [True, True, False]


def test_prompt_sensitivity_needs_a_pair():
    pss, has = item_prompt_sensitivity(np.array([[1.0, nan, nan], [0.5, 0.25, 1.0]]))
    # item 1: |0.5-0.25| 0.25, |0.5-1| 0.5, |0.25-1| 0.75 -> 1.5 / 3 = 0.5
    assert math.isnan(pss[0]) and pss[1] == pytest.approx(0.5) and has.tolist() == [False, True]


def test_prompt_sensitivity_matches_every_pair_on_random_scores():
    # the sorted-rank formula against the definition, pair by pair, with missing cells
    import itertools

    rng = np.random.default_rng(5)
    scores = rng.random((40, 7))
    scores[rng.random((40, 7)) < 0.3] = nan
    pss, _ = item_prompt_sensitivity(scores)
    for row, got in zip(scores, pss):
        values = row[~np.isnan(row)]
        diffs = [abs(a - b) for a, b in itertools.combinations(values, 2)]
        assert (math.isnan(got) and not diffs) or got == pytest.approx(sum(diffs) / len(diffs))


def test_all_missing_gives_no_values():
    r = sensitivity(np.full((3, 2), nan), answers=np.full((3, 2), nan))
    assert r.items == 0
    for e in (r.consistency_rate, r.flip_rate, r.worst_case, r.max_p, r.cps, r.prompt_sensi_score, r.drop_rate):
        assert e.value is None


# -- flips: invalid answers, several samples, no answers -------------------------------------------


def test_invalid_answers_never_match():
    # reference invalid (-1), variant invalid too: a flip (two invalid replies say nothing comparable)
    flips, compared = flip_counts(np.array([[0.0, 0.0]]), np.array([[-1.0, -1.0]]), 0)
    assert flips.tolist() == [[0.0, 1.0]] and compared.tolist() == [[0.0, 1.0]]


def test_flips_with_two_samples_per_variant():
    # columns: v0 s0, v0 s1, v1 s0, v1 s1; reference answers {1, 2}, v1 answers {1, 1}
    # pairs (v1 sample, ref sample): (1,1) same, (1,2) flip, (1,1) same, (1,2) flip -> 2 of 4
    flips, compared = flip_counts(np.array([[1.0, 0.0]]), np.array([[1.0, 2.0, 1.0, 1.0]]), 0)
    assert flips[0, 1] == 2 and compared[0, 1] == 4


def test_without_answers_flips_are_changes_of_correctness():
    # lower vs base: item 1 (1 -> 0); shuffled vs base: items 0 (1 -> 0), 2 (0 -> 1) -> 1/4 and 2/3
    r = sensitivity(CORRECT, names=NAMES)
    assert r.per_variant[1].flip_rate.value == pytest.approx(0.25)
    assert r.per_variant[2].flip_rate.value == pytest.approx(2 / 3)
    assert r.consistency_rate.value is None


def test_no_reference_no_drop_or_flip():
    r = sensitivity(CORRECT, answers=ANSWERS, reference=None)
    assert r.reference is None and r.drop_rate.value is None and r.flip_rate.value is None
    assert r.worst_case.value == pytest.approx(0.25)


def test_reference_by_index_other_than_first():
    # reference = shuffled (accuracy 2/3 over items 0, 2, 3): base on those items 2 of 3 -> drop 0
    r = sensitivity(CORRECT, names=NAMES, reference=2)
    assert r.reference == "shuffled" and r.per_variant[0].drop_rate.value == pytest.approx(0.0)


# -- judge scores on another scale ---------------------------------------------------------------


def test_judge_scores_on_a_zero_to_five_scale():
    # scores 5, 4, 2 and 3, 3, 3 on 0-5 -> 1, 0.8, 0.4 and 0.6, 0.6, 0.6
    # PSS item 0: (0.2 + 0.6 + 0.4) / 3 = 0.4; item 1: 0 -> 0.2; worst: (0.4 + 0.6) / 2 = 0.5
    # variant means 0.8, 0.7, 0.5: MaxP 0.8, AvgP 0.6667, spread 0.3
    r = sensitivity(np.array([[5.0, 4.0, 2.0], [3.0, 3.0, 3.0]]), scale=(0, 5))
    assert r.prompt_sensi_score.value == pytest.approx(0.2)
    assert r.worst_case.value == pytest.approx(0.5)
    assert (r.max_p.value, r.avg_p.value, r.spread.value) == pytest.approx((0.8, 2 / 3, 0.3))


def test_scores_outside_the_scale_are_refused():
    with pytest.raises(ValueError, match="scale"):
        sensitivity(np.array([[5.0, 4.0]]))


def test_bad_shapes_and_references_are_refused():
    with pytest.raises(ValueError, match="names"):
        sensitivity(CORRECT, names=("a", "b"))
    with pytest.raises(ValueError, match="reference"):
        sensitivity(CORRECT, names=NAMES, reference="upper")
    with pytest.raises(ValueError, match="answers"):
        sensitivity(CORRECT, answers=ANSWERS[:, :2])


# -- POSIX ------------------------------------------------------------------------------------------

# item 0: three prompts, three options; log P(option | prompt i)
LOGLIK = np.array([
    [[-0.1, -2.0, -3.0],   # prompt 0 answers option 0
     [-1.0, -0.5, -2.0],   # prompt 1 answers option 1
     [-0.2, -1.5, -4.0]],  # prompt 2 answers option 0
    [[-0.3, -1.2, -2.0],   # item 1: the same distribution under every prompt
     [-0.3, -1.2, -2.0],
     [-0.3, -1.2, -2.0]],
])
LL_ANSWERS = np.array([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]])  # item 1, prompt 1: an invalid reply


def test_posix_matrix_takes_each_answer_under_every_prompt():
    m = posix_matrix(LOGLIK, LL_ANSWERS)
    # m[i, j] = log P(answer to prompt j | prompt i)
    np.testing.assert_allclose(m[0], [[-0.1, -2.0, -0.1], [-1.0, -0.5, -1.0], [-0.2, -1.5, -0.2]])
    assert np.isnan(m[1][:, 1]).all()


def test_item_posix_by_hand():
    # item 0, own log-probabilities (diagonal) -0.1, -0.5, -0.2; |m[i,j] - own_j| for i != j:
    # j=0: 0.9, 0.1; j=1: 1.5, 1.0; j=2: 0.1, 0.8 -> 4.4 / 6 = 0.733333
    # item 1: the invalid answer's pairs are left out, the 4 others change by 0 -> 0
    psi = item_posix(posix_matrix(LOGLIK, LL_ANSWERS))
    assert psi == pytest.approx([4.4 / 6, 0.0])


def test_item_posix_normalises_by_answer_length():
    # answers 2 tokens long: every change halves
    psi = item_posix(posix_matrix(LOGLIK[:1], LL_ANSWERS[:1]), lengths=np.full((1, 3), 2.0))
    assert psi == pytest.approx([2.2 / 6])


def test_posix_in_the_report():
    correct = np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    r = sensitivity(correct, answers=LL_ANSWERS, loglik=LOGLIK)
    assert r.posix.value == pytest.approx((4.4 / 6 + 0.0) / 2)
    assert r.posix.low <= r.posix.value <= r.posix.high


def test_posix_refuses_own_answer_log_probabilities_alone():
    with pytest.raises(ValueError, match="every other prompt"):
        sensitivity(np.ones((2, 3)), answers=np.zeros((2, 3)), loglik=np.zeros((2, 3)))


def test_same_numbers_as_the_consistency_module(report):
    # the suites' existing figures: one definition of each, not two
    from robusteval.metrics.consistency import consistency_rate, pooled_consistency_rate, spread, std_across_variants

    assert report.consistency_rate.value == pytest.approx(consistency_rate(ANSWERS))
    assert report.consistency_rate_pooled.value == pytest.approx(pooled_consistency_rate(ANSWERS))
    assert report.spread.value == pytest.approx(spread(CORRECT))
    assert report.std.value == pytest.approx(std_across_variants(CORRECT))


def test_reference_per_item():
    # the option order's unperturbed variant is a different column per item: item 0 -> column 0,
    # item 1 -> column 1, item 2 has none (-1) and is compared to nothing
    correct = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    answers = np.array([[2.0, 1.0, 2.0], [0.0, 3.0, 3.0], [1.0, 1.0, 0.0]])
    r = sensitivity(correct, answers=answers, reference=[0, 1, -1], reference_name="published order")
    assert r.reference == "published order"
    # item 0 vs its answer 2: column 1 flips, column 2 keeps; item 1 vs 3: column 0 flips, column 2 keeps
    assert r.flip_rate.value == pytest.approx(2 / 4)
    assert [v.flip_rate.value for v in r.per_variant] == pytest.approx([1.0, 1.0, 0.0])
    # PDR: column 0 on item 1 only: 1 - 0/1; column 1 on item 0: 1 - 0/1; column 2 on items 0, 1: 1 - 2/2
    assert [v.drop_rate.value for v in r.per_variant] == pytest.approx([1.0, 1.0, 0.0])
    assert r.drop_rate.value == pytest.approx(2 / 3)


def test_reference_per_item_checked():
    with pytest.raises(ValueError, match="a reference per item"):
        sensitivity(CORRECT, reference=[0, 1, 5, 0])


@pytest.mark.parametrize("max_p, avg_p, cps", [
    # the authors' published MaxP / AvgP / CPS (SLAB-NLP/Multi-Prompt-LLM-Evaluation, data/metric results,
    # open-source models, no filtering): LMentry "all words from category" t0_3b and alpaca-7b,
    # "word not containing" flan-t5-xl
    (0.8, 0.6172093023255814, 0.6537674418604651),
    (0.78, 0.14534883720930233, 0.2849720930232558),
    (1.0, 0.5834976988823138, 0.5834976988823138),
])
def test_cps_matches_the_papers_published_figures(max_p, avg_p, cps):
    from robusteval.metrics.sensitivity import combined_performance

    assert combined_performance(max_p, avg_p) == pytest.approx(cps, abs=1e-12)


def test_score_sensitivity_of_whole_item_ratings():
    from robusteval.metrics.similarity import score_sensitivity

    # ratings 5, 3 (variation "style") and 4, 1 ("dialect"), one missing ("dialect")
    s = score_sensitivity(np.array([5.0, 3.0, 4.0, 1.0, nan]), ["style", "style", "dialect", "dialect", "dialect"])
    assert s.consistent_share.value == pytest.approx(2 / 4)  # 5 and 4 of the four rated
    assert s.by_variation["style"].value == pytest.approx(4.0) and s.by_variation["dialect"].value == pytest.approx(2.5)
    assert s.spread.value == pytest.approx(1.5)  # in rating points
    assert s.std.value == pytest.approx(math.sqrt(((4 - 3.25) ** 2 + (2.5 - 3.25) ** 2) / 1))
    one = score_sensitivity(np.array([5.0, 2.0]), ["style", "style"])
    assert one.spread.value is None and one.std.value is None and one.consistent_share.value == 0.5


@pytest.mark.parametrize("variant_right", [0.0, 1.0])
def test_the_mean_drop_rate_is_n_a_when_any_variants_pdr_is_by_one_rule(variant_right):
    """A variant compared only on questions its reference got wrong has no PDR, whether it got them
    wrong too (0/0) or right (1/0). Before, 0/0 was left out of the mean (which averaged the other
    variants) and 1/0 gave -inf (which made the mean n/a). Now one rule: the mean over the compared
    variants is n/a when any of their PDRs is, in the point value and in every resample."""
    from robusteval.metrics.sensitivity import _mean_drop, drop_rates

    # reference (column 0) right on items 0-2 of each block of 4; "typo" answered everywhere; "late"
    # only on item 3, where the reference is wrong
    correct = np.array([[1, 1, nan], [1, 0, nan], [1, 1, nan], [0, 0, variant_right]] * 3, dtype=float)
    r = sensitivity(correct, names=("base", "typo", "late"), reference="base", seed=3)
    assert r.per_variant[2].drop_rate.value is None  # n/a in the per-variant table
    assert r.per_variant[1].drop_rate.value == pytest.approx(1 - 6 / 9)
    assert r.drop_rate.value is None and r.drop_rate.low is None
    # without the late variant the mean is the typo's PDR, with its interval
    alone = sensitivity(correct[:, :2], names=("base", "typo"), reference="base", seed=3)
    assert alone.drop_rate.value == pytest.approx(1 - 6 / 9) and alone.drop_rate.low is not None
    assert np.isnan(drop_rates(np.array([0.0, 3.0]), np.array([0.0, 0.0]))).all()  # 0/0 and 3/0 alike
    # resamples: (typo, late | reference on typo's items, on late's): the row where late's reference
    # is right has a mean, the rows where it is not are NaN whatever late scored (never -inf)
    sums = np.array([[2.0, variant_right, 3.0, 1.0], [2.0, variant_right, 3.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    means = _mean_drop(sums)
    assert means[0] == pytest.approx(((1 - 2 / 3) + (1 - variant_right)) / 2) and np.isnan(means[1:]).all()
