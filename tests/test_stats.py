"""How sure: bootstrap intervals, the paired randomization test and resolution on hand-worked cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from surreal_eval import (
    SMALL_SAMPLE,
    ConfigError,
    InputError,
    NotFound,
    confidence_interval,
    confidence_intervals,
    evaluate,
    paired_test,
    question_scores,
    resolution,
    sample_warning,
)

# ---------------------------------------------------------------------------------------------
# The paired randomization test. Under "no difference" each question's difference keeps or
# flips its sign with probability 1/2, so with m non-zero differences there are 2**m equally
# likely patterns; p = 2 x (share of patterns whose sum is >= the observed sum), capped at 1.
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "p"),
    [
        # +1 +1 +1: only the all-plus pattern of 8 reaches 3 -> 2 x 1/8
        ([0, 0, 0], [1, 1, 1], 2 / 8),
        # five +1: 2 x 1/32
        ([0] * 5, [1] * 5, 2 / 32),
        # the same five with three ties: tied questions flip nothing, p is unchanged
        ([0] * 8, [1, 1, 1, 1, 1, 0, 0, 0], 2 / 32),
        # +1 -1: sums 2, 0, 0, -2; both tails hold 3 of 4 -> 2 x 3/4, capped at 1
        ([0, 1], [1, 0], 1.0),
        # +1 +1 +1 -1: observed sum 2 needs three or four pluses, C(4,3) + C(4,4) = 5 of 16
        ([0, 0, 0, 1], [1, 1, 1, 0], 2 * 5 / 16),
        # +2 +1 -1: sums 4 2 2 0 0 -2 -2 -4 for the observed 2: three of eight >= 2
        ([0, 0, 1], [2, 1, 0], 2 * 3 / 8),
        # b worse than a: the test is two-sided, so the sign of the difference does not matter
        ([1, 1, 1], [0, 0, 0], 2 / 8),
        # a lone difference can never be extreme: one of two patterns either way
        ([0.2, 0.5], [0.2, 0.9], 1.0),
    ],
)
def test_paired_test_exact_p_values_by_hand(a, b, p):
    result = paired_test(a, b)
    assert result.exact
    assert result.p_value == pytest.approx(p)
    assert result.difference == pytest.approx(np.mean(b) - np.mean(a))
    assert result.n == len(a)


def brute_force_p(differences: list[float]) -> float:
    """Every sign pattern enumerated by itertools: the two-sided p-value from its definition."""
    observed = sum(differences)
    patterns = itertools.product((1, -1), repeat=len(differences))
    sums = [sum(s * d for s, d in zip(signs, differences)) for signs in patterns]
    tol = 1e-9
    upper = sum(s >= observed - tol for s in sums) / len(sums)
    lower = sum(s <= observed + tol for s in sums) / len(sums)
    return min(1.0, 2 * min(upper, lower))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_paired_test_matches_enumeration_on_fractional_scores(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 10) / 3  # recall of a three-label question: 0, 1/3, 2/3, 1
    b = rng.integers(0, 4, 10) / 3
    result = paired_test(a, b)
    assert result.exact
    assert result.p_value == pytest.approx(brute_force_p(list(b - a)))


def test_identical_scores_give_p_one_and_a_zero_interval():
    scores = [0.0, 1 / 3, 1.0, 0.5]
    result = paired_test(scores, scores)
    assert (result.p_value, result.exact) == (1.0, True)
    assert (result.difference, result.low, result.high) == (0.0, 0.0, 0.0)


def test_many_differences_are_sampled_not_enumerated():
    # 20 questions all +1: exact p is 2 / 2**20; sampled, it is (count + 1) / (resamples + 1)
    result = paired_test([0] * 20, [1] * 20, resamples=999)
    assert not result.exact
    assert 1 / 1000 <= result.p_value <= 0.01
    assert result == paired_test([0] * 20, [1] * 20, resamples=999)  # same seed, same answer


def test_the_difference_has_a_bootstrap_interval():
    a = [0, 0, 1, 0, 1, 0, 0, 1, 0, 0] * 3
    b = [1, 0, 1, 1, 1, 0, 1, 1, 0, 1] * 3
    result = paired_test(a, b)
    assert result.difference == pytest.approx(0.4)
    assert result.low < result.difference < result.high
    assert result.low > 0  # every question improved or tied
    assert result.level == 0.95
    assert result.mean_a == pytest.approx(0.3) and result.mean_b == pytest.approx(0.7)


def test_paired_lengths_must_match():
    with pytest.raises(InputError, match="a has 3, b has 2"):
        paired_test([1, 0, 1], [1, 0])
    with pytest.raises(InputError, match="no scores"):
        paired_test([], [])


# ---------------------------------------------------------------------------------------------
# The bootstrap interval (percentile method).
# ---------------------------------------------------------------------------------------------


def brute_force_percentile_interval(scores, *, level=0.95, resamples=10_000, seed=0):
    """The percentile bootstrap in numpy: resample questions, take the quantiles of the means."""
    x = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, (resamples, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return tuple(np.quantile(means, [alpha, 1 - alpha]))


@pytest.mark.parametrize(
    ("scores", "level", "seed"),
    [
        ([0, 1, 1, 0, 1, 0.5, 1 / 3, 1, 1, 0], 0.95, 0),
        ([0, 1, 1, 0, 1, 0.5, 1 / 3, 1, 1, 0], 0.90, 7),
        ([1, 1, 1, 1, 1, 1, 1, 0], 0.95, 42),
        (list(np.linspace(0, 1, 37)), 0.99, 3),
    ],
)
def test_interval_matches_a_brute_force_percentile_bootstrap(scores, level, seed):
    interval = confidence_interval(scores, level=level, seed=seed)
    low, high = brute_force_percentile_interval(scores, level=level, seed=seed)
    assert (interval.low, interval.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert (interval.mean, interval.n, interval.level) == (pytest.approx(np.mean(scores)), len(scores), level)


@pytest.mark.parametrize("seed", [0, 11])
def test_intervals_of_many_lists_equal_each_list_alone(seed):
    """One resampling for many means (what a run report uses) gives each list's own interval."""
    rng = np.random.default_rng(seed)
    columns = [list(rng.random(37).round(2)), [0.0, 1.0] * 18 + [1.0], [0.5] * 37, list((rng.random(37) > 0.8) * 1.0)]
    together = confidence_intervals(columns, level=0.9, seed=seed)
    for column, interval in zip(columns, together):
        alone = confidence_interval(column, level=0.9, seed=seed)
        assert (interval.low, interval.high, interval.mean) == (
            pytest.approx(alone.low, abs=1e-12), pytest.approx(alone.high, abs=1e-12), pytest.approx(alone.mean))
    assert together[2].low == together[2].high == 0.5  # a constant list collapses, as alone


def test_intervals_of_many_lists_need_equal_lengths():
    with pytest.raises(InputError, match="same, non-zero number of scores"):
        confidence_intervals([[0.0, 1.0], [1.0]])


def test_two_questions_by_hand():
    # [0, 1]: a resampled mean is 0, 1/2 or 1 with probability 1/4, 1/2, 1/4; the 2.5% and 97.5%
    # quantiles fall inside the 1/4 at each end, so the 95% interval is [0, 1]
    interval = confidence_interval([0, 1])
    assert (interval.mean, interval.low, interval.high) == (0.5, 0.0, 1.0)


@pytest.mark.parametrize(
    ("scores", "value"),
    [([0.5] * 10, 0.5), ([1.0] * 8, 1.0), ([0.0] * 3, 0.0), ([0.7], 0.7), ([1 / 3] * 6, 1 / 3)],
)
def test_constant_scores_and_one_question_collapse_the_interval(scores, value):
    interval = confidence_interval(scores)
    assert interval.low == interval.mean == interval.high == pytest.approx(value)


def test_interval_contains_the_mean_and_narrows_with_more_questions():
    small = confidence_interval([0, 1] * 5)
    large = confidence_interval([0, 1] * 50)
    for interval in (small, large):
        assert interval.low < interval.mean == 0.5 < interval.high
    assert large.high - large.low < small.high - small.low
    # roughly the normal approximation: 1.96 x sd / sqrt(n) = 0.098 for 100 coin flips
    assert large.high - large.low == pytest.approx(2 * 1.96 * 0.5 / 10, abs=0.03)


def test_interval_is_deterministic_given_the_seed():
    scores = [0.1 * i**2 % 1 for i in range(1, 16)]
    assert confidence_interval(scores, seed=5) == confidence_interval(scores, seed=5)
    assert confidence_interval(scores, seed=5) != confidence_interval(scores, seed=6)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"scores": []}, InputError, "no scores"),
        ({"scores": [0.5, float("nan")]}, InputError, "non-finite score .* position 1"),
        ({"scores": ["x"]}, InputError, "sequence of numbers"),
        ({"scores": [[0, 1]]}, InputError, "flat sequence"),
        ({"scores": [0, 1], "level": 1.0}, ConfigError, "between 0 and 1"),
        ({"scores": [0, 1], "resamples": 0}, ConfigError, "resamples"),
    ],
)
def test_interval_refuses_bad_input_in_one_line(kwargs, error, message):
    with pytest.raises(error, match=message) as caught:
        confidence_interval(**kwargs)
    assert "\n" not in str(caught.value)


# ---------------------------------------------------------------------------------------------
# Resolution: the smallest change one question can move the mean.
# ---------------------------------------------------------------------------------------------

D2 = 1 / math.log2(3)  # nDCG's discount at rank 2


@pytest.mark.parametrize(
    ("label_counts", "metric", "k", "expected"),
    [
        # eight questions, the largest has three labels: one label of it is 1/3 of 1/8
        ([3, 1, 2, 1, 1, 1, 1, 1], "recall", None, 1 / 24),
        ([3, 1, 2, 1, 1, 1, 1, 1], "recall@5", None, 1 / 24),
        ([1] * 40, "recall", None, 1 / 40),
        ([3, 1, 2, 1, 1, 1, 1, 1], "hit_rate", None, 1 / 8),
        ([3, 1, 2, 1, 1, 1, 1, 1], "precision", 5, 1 / 40),
        ([3, 1, 2, 1, 1, 1, 1, 1], "precision@5", None, 1 / 40),
        # mrr@3 takes 0, 1/3, 1/2, 1: the nearest two, 1/2 - 1/3 = 1/6, over 8 questions
        ([1] * 8, "mrr@3", None, 1 / 48),
        ([1] * 8, "mrr", 1, 1 / 8),
        ([2] * 10, "ndcg@1", None, 1 / 10),
        # one label at k=2: nDCG is 0, D2 or 1; the nearest two are 1 - D2 apart
        ([1], "ndcg@2", None, 1 - D2),
        # two labels at k=2: nDCG is 0, D2/I, 1/I or 1 with I = 1 + D2; nearest (1 - D2) / I
        ([2, 1], "ndcg@2", None, (1 - D2) / (1 + D2) / 2),
        # R-precision of a 3-label question moves in thirds
        ([3, 1, 2, 1, 1, 1, 1, 1], "r_precision", None, 1 / 24),
        # AP@5 with 3 labels: the third label entering at rank 5 adds (3/5)/3 >= 1/(5 x 3)
        ([3, 1, 2, 1, 1, 1, 1, 1], "map@5", None, 1 / (5 * 3 * 8)),
    ],
)
def test_resolution_by_hand(label_counts, metric, k, expected):
    assert resolution(label_counts, metric, k=k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("label_counts", "metric", "k", "error", "message"),
    [
        ([1, 2], "precision", None, ConfigError, "depends on the cutoff"),
        ([1, 2], "mrr", None, ConfigError, "depends on the cutoff"),
        ([1, 2], "ndcg", None, ConfigError, "depends on the cutoff"),
        ([1, 2], "f1", None, ConfigError, "unknown metric"),
        ([1, 2], "precision@5", 3, ConfigError, "two cutoffs"),
        ([1, 2], "precision", 0, ConfigError, "at least 1"),
        ([], "recall", None, InputError, "no questions"),
        ([1, 0], "recall", None, InputError, "position 1"),
    ],
)
def test_resolution_refuses_what_it_cannot_define(label_counts, metric, k, error, message):
    with pytest.raises(error, match=message):
        resolution(label_counts, metric, k=k)


def test_warning_below_thirty_questions():
    assert SMALL_SAMPLE == 30
    warning = sample_warning(29)
    assert warning is not None and "29 questions" in warning and "\n" not in warning
    assert sample_warning(1) is not None
    assert sample_warning(30) is None and sample_warning(500) is None


# ---------------------------------------------------------------------------------------------
# Real data: the demo's floored hybrid against plain hybrid, recall@3, question by question.
# ---------------------------------------------------------------------------------------------


def test_floor_against_hybrid_on_the_demo(seeded):
    report = evaluate(seeded, ks=[1, 3, 5], per_question=True)
    hybrid = question_scores(report, "hybrid", "recall@3")
    floor = question_scores(report, "hybrid_floor", "recall@3")
    assert list(hybrid) == list(floor) and len(hybrid) == report.questions

    comparison = paired_test(list(hybrid.values()), list(floor.values()))
    means = {row.retriever: row.recall for row in report.results if row.k == 3}
    assert 0 <= comparison.p_value <= 1
    assert comparison.exact  # eight questions: every sign pattern enumerated
    assert comparison.mean_a == pytest.approx(means["hybrid"])
    assert comparison.mean_b == pytest.approx(means["hybrid_floor"])
    assert comparison.difference == pytest.approx(means["hybrid_floor"] - means["hybrid"])
    assert comparison.low <= comparison.difference <= comparison.high

    labels = {row.question: len(row.relevant) for row in report.per_question}
    expected = 1 / (max(labels.values()) * len(labels))
    assert resolution(list(labels.values()), "recall@3") == pytest.approx(expected)
    assert sample_warning(report.questions) is not None


def test_question_scores_needs_per_question_results(seeded):
    report = evaluate(seeded, ks=[3], retrievers=["bm25"], per_question=True)
    with pytest.raises(NotFound, match="recall@5"):
        question_scores(report, "bm25", "recall@5")
    with pytest.raises(ConfigError, match="per_question=True"):
        question_scores(report.model_copy(update={"per_question": None}), "bm25", "recall@3")
