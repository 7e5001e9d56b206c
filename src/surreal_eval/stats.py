"""How sure: bootstrap intervals, paired tests and the resolution of a mean over questions.

Pure functions over per-question scores (one float per question, as `RunReport.per_question`
gives them); nothing here prints or touches the database. The resampling is scipy's:

    confidence_interval(scores)   percentile bootstrap over questions   -> Interval
    paired_test(a, b)             paired randomization (sign-flip) test -> PairedComparison
    resolution(label_counts, m)   the smallest step one question moves the mean of metric m
    sample_warning(n)             one line below SMALL_SAMPLE questions, else None
    question_scores(report, r, m) one retriever's per-question scores of m (`recall@3`), by question

Every resampling takes a `seed`, so the same scores give the same interval and p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral
from typing import TYPE_CHECKING

from pydantic import ConfigDict

from .model_base import Model
from .errors import ConfigError, InputError, NotFound
from .grammar import METRICS, MetricSpec, parse_metric
from .models import RunReport

if TYPE_CHECKING:  # numpy is imported where it is used: a run's record is read without it (its import is 0.08 s)
    import numpy as np

__all__ = [
    "format_p",
    "p_phrase",
    "SMALL_SAMPLE",
    "Interval",
    "PairedComparison",
    "confidence_interval",
    "confidence_intervals",
    "paired_test",
    "question_scores",
    "resolution",
    "sample_warning",
]

#: Below this many questions a report warns that its intervals and p-values rest on few questions.
SMALL_SAMPLE = 30

# Resampled statistics are computed in batches of at most this many numbers, to bound memory.
_BATCH_CELLS = 1_000_000


class Interval(Model):
    """A mean over `n` questions and its two-sided bootstrap confidence interval at `level`."""

    model_config = ConfigDict(frozen=True)

    mean: float
    low: float
    high: float
    level: float
    n: int


class PairedComparison(Model):
    """Two systems scored on the same `n` questions: means, difference `mean_b - mean_a` with its
    bootstrap interval at `level`, and the two-sided p-value of the paired randomization test
    (`exact` when every sign pattern was enumerated rather than sampled)."""

    model_config = ConfigDict(frozen=True)

    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    level: float
    p_value: float
    n: int
    exact: bool


def prepare_intervals() -> None:
    """Import what bootstrap intervals need (numpy: about 0.08 s), ahead of them, for a caller that can do it while
    the engine works (runs.evaluate: while the engine starts the run)."""
    import numpy  # noqa: F401


def _scores(values: Sequence[float], what: str) -> np.ndarray:
    import numpy as np
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a sequence of numbers, one per question") from None
    if array.ndim != 1:
        raise InputError(f"{what} must be a flat sequence of numbers, one per question")
    if not np.all(np.isfinite(array)):
        position = int(np.flatnonzero(~np.isfinite(array))[0])
        raise InputError(f"{what} has a non-finite score ({array[position]}) at position {position}")
    return array


def _check_options(level: float, resamples: int) -> None:
    if not 0 < level < 1:
        raise ConfigError(f"the confidence level must be between 0 and 1 (exclusive), got {level}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ConfigError(f"resamples must be a whole number of at least 1, got {resamples!r}")


def _batch(n: int) -> int:
    return max(1, _BATCH_CELLS // max(n, 1))


def _mean(*samples: np.ndarray, axis: int) -> np.ndarray:
    import numpy as np
    return np.mean(samples[0], axis=axis)


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    import numpy as np
    return np.mean(b - a, axis=axis)


def confidence_interval(
    scores: Sequence[float], *, level: float = 0.95, resamples: int = 10_000, seed: int | None = 0
) -> Interval:
    """The mean of per-question `scores` with its percentile bootstrap interval over questions.

    Method: scipy.stats.bootstrap with method='percentile' — resample the questions with
    replacement `resamples` times and take the (1-level)/2 and (1+level)/2 quantiles (linear
    interpolation) of the resampled means. Percentile rather than BCa: per-question scores are
    bounded and lumpy (many exact 0s and 1s), and BCa's jackknife acceleration turns NaN, with a
    warning, when most scores are equal; the percentile interval always exists and can be
    reproduced with a few lines of numpy. It is a little narrow for very small sets, which is
    what `sample_warning` is for.

    Degenerate cases: every score equal (including one question) -> low = high = mean; no
    scores -> InputError. The same `seed` gives the same interval (None draws a fresh one).
    """
    import numpy as np
    _check_options(level, resamples)
    array = _scores(scores, "scores")
    n = array.size
    if n == 0:
        raise InputError("no scores: a confidence interval needs at least one question")
    mean = float(np.mean(array))
    if np.all(array == array[0]):
        return Interval(mean=mean, low=mean, high=mean, level=level, n=n)
    result = _scipy_stats().bootstrap(
        (array,),
        _mean,
        vectorized=True,
        n_resamples=resamples,
        batch=_batch(n),
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return Interval(mean=mean, low=float(ci.low), high=float(ci.high), level=level, n=n)


def confidence_intervals(
    columns: Sequence[Sequence[float]], *, level: float = 0.95, resamples: int = 10_000, seed: int | None = 0
) -> list[Interval]:
    """`confidence_interval` of each of several score lists over the same questions, in one resampling.

    The resamples draw the same questions in the same order as `confidence_interval` does (numpy's
    `integers(0, n, (resamples, n))`, in batches), so each interval is the one it gives for that list
    alone (a test holds them equal). Each resample is kept as counts per question, and every list's
    resampled means are one matrix product, counts x scores: a run's 100-odd means cost about one
    bootstrap, and memory stays bounded by the batch (about a million counts) at any number of
    questions.
    """
    import numpy as np
    _check_options(level, resamples)
    arrays = [_scores(column, f"scores {i}") for i, column in enumerate(columns)]
    if not arrays:
        return []
    n = arrays[0].size
    if n == 0 or any(a.size != n for a in arrays):
        raise InputError("confidence intervals need the same, non-zero number of scores in every list")
    matrix = np.vstack(arrays)
    means = matrix.mean(axis=1)
    varying = ~np.all(matrix == matrix[:, :1], axis=1)
    low, high = means.copy(), means.copy()
    if varying.any():
        scores = matrix[varying].T  # questions x lists
        rng = np.random.default_rng(seed)
        resampled = np.empty((resamples, scores.shape[1]))
        for start in range(0, resamples, _batch(n)):
            size = min(_batch(n), resamples - start)
            drawn = rng.integers(0, n, (size, n))
            counts = np.bincount((drawn + n * np.arange(size)[:, None]).ravel(), minlength=size * n).reshape(size, n)
            resampled[start : start + size] = counts @ scores / n
        alpha = (1 - level) / 2
        low[varying], high[varying] = np.quantile(resampled, [alpha, 1 - alpha], axis=0)
    return [Interval(mean=float(m), low=float(lo), high=float(hi), level=level, n=n) for m, lo, hi in zip(means, low, high)]


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int | None = 0,
) -> PairedComparison:
    """Compare two systems scored on the same questions (a[i] and b[i] are question i).

    The p-value is the two-sided paired randomization test of the mean difference b - a
    (scipy.stats.permutation_test, permutation_type='samples'): under "no difference" each
    question's two scores are exchangeable, so every pattern of swaps (sign flips of the
    difference) is equally likely, and p is the share of patterns whose mean difference is at
    least as extreme as the observed one, doubled from the smaller tail and capped at 1.
    Questions on which a and b agree contribute nothing to any pattern, so only the m questions
    that differ are permuted: when 2**m <= resamples all 2**m patterns are enumerated and the
    p-value is exact (`exact=True`; m <= 13 at the default 10 000), otherwise `resamples`
    patterns are drawn and p includes the observed pattern, (count + 1) / (resamples + 1).
    Identical inputs, or a single differing question, give p = 1. [1, 1, 1] vs [0, 0, 0] gives
    2/8 = 0.25.

    `low`/`high` are the percentile bootstrap interval (see `confidence_interval`) of the mean
    difference over all n questions. Lengths must match: pair the scores by question first.
    """
    import numpy as np
    _check_options(level, resamples)
    first, second = _scores(a, "a"), _scores(b, "b")
    if first.size != second.size:
        raise InputError(
            f"paired scores differ in length: a has {first.size}, b has {second.size}; "
            "pair them by question"
        )
    if first.size == 0:
        raise InputError("no scores: a paired test needs at least one question")
    differences = second - first
    interval = confidence_interval(differences, level=level, resamples=resamples, seed=seed)
    differ = differences != 0
    m = int(np.count_nonzero(differ))
    if m < 2:  # no difference, or one: its two patterns (+d, -d) each hold a tail of 1/2 or more
        p_value, exact = 1.0, True
    else:
        result = _scipy_stats().permutation_test(
            (first[differ], second[differ]),
            _mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=resamples,
            batch=_batch(m),
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        )
        p_value, exact = float(result.pvalue), 2**m <= resamples
    return PairedComparison(
        mean_a=float(np.mean(first)),
        mean_b=float(np.mean(second)),
        difference=interval.mean,
        low=interval.low,
        high=interval.high,
        level=level,
        p_value=p_value,
        n=int(first.size),
        exact=exact,
    )


def _metric(metric: str, k: int | None) -> MetricSpec | tuple[str, int | None]:
    if "@" in metric:
        spec = parse_metric(metric)
        if k is not None and k != spec.k:
            raise ConfigError(f"two cutoffs given: {metric!r} and k={k}")
        return spec
    name = metric.strip()
    if name not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)} (or NAME@K)")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"the cutoff k must be a whole number of at least 1, got {k!r}")
    return name, k


def _discount(rank: int) -> float:
    return 1 / math.log2(rank + 1)


def resolution(label_counts: Sequence[int], metric: str, *, k: int | None = None) -> float:
    """The smallest change one question can move the mean of `metric` over these questions.

    `label_counts` holds each question's number of labels (its length is the question count
    Q); `metric` is a name of METRICS or NAME@K (`precision@5`), or pass the cutoff as `k`.
    Labels are taken as binary (grade 1), the harness default. Per metric, with L the largest
    label count:

    - recall: a question with L labels moves in steps of 1/L, so 1 / (L x Q); a single-label
      set gives 1 / Q. The cutoff does not matter.
    - hit_rate: 0 or 1 per question, so 1 / Q.
    - precision@k: labels in the top k / k moves in steps of 1/k, so 1 / (k x Q). Needs k.
    - judged@k: judged ids in the top k / k, the same steps as precision@k. Needs k.
    - mrr@k: a question scores 0 or 1/r for r <= k; the nearest two values are 1/(k-1) and
      1/k, so 1 / (k x (k-1) x Q) for k >= 2 and 1 / Q at k = 1. A question flipping between
      found at rank 1 and not found moves the mean by 1 / Q. Needs k.
    - ndcg@k: the smallest move of one label — from rank k-1 to rank k, or out of the top k
      from rank k — on the question with the largest ideal DCG (min(L, k) labels):
      min(d(k-1) - d(k), d(k)) / (IDCG x Q), d(r) = 1 / log2(r + 1). This is a one-label
      step: several labels moving at once can net a finer change (nDCG is close to
      continuous), so read it as the granularity of a single label's move. Needs k.
    - r_precision: a question with R labels moves in steps of 1/R, so 1 / (L x Q).
    - map@k: one label entering or leaving the top k at rank k changes average precision by at
      least 1 / (k x L), so 1 / (k x L x Q) (a one-label step, like ndcg). Needs k.
    """
    spec = _metric(metric, k)
    name, cutoff = spec
    counts = list(label_counts)
    if not counts:
        raise InputError("no questions: the resolution of a mean needs at least one question")
    for position, count in enumerate(counts):
        if isinstance(count, bool) or not isinstance(count, Integral) or count < 1:
            raise InputError(
                f"label count at position {position} must be a whole number of at least 1, got {count!r}"
            )
    questions = len(counts)
    most = int(max(counts))
    if name == "recall":
        return 1 / (most * questions)
    if name == "hit_rate":
        return 1 / questions
    if name == "r_precision":
        return 1 / (most * questions)
    if cutoff is None:
        raise ConfigError(f"the resolution of {name} depends on the cutoff: pass {name}@K or k=K")
    if name in ("precision", "judged"):
        return 1 / (cutoff * questions)
    if name == "mrr":
        return 1 / (cutoff * (cutoff - 1) * questions) if cutoff > 1 else 1 / questions
    if name == "map":
        return 1 / (cutoff * most * questions)
    # ndcg
    ideal = sum(_discount(rank) for rank in range(1, min(most, cutoff) + 1))
    step = _discount(cutoff)
    if cutoff > 1:
        step = min(step, _discount(cutoff - 1) - _discount(cutoff))
    return step / (ideal * questions)


def sample_warning(n: int) -> str | None:
    """One line warning that `n` questions are fewer than SMALL_SAMPLE; None from SMALL_SAMPLE on."""
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
        raise ConfigError(f"the number of questions must be a whole number, got {n!r}")
    if n >= SMALL_SAMPLE:
        return None
    return (
        f"only {n} question{'s' if n != 1 else ''} (fewer than {SMALL_SAMPLE}): intervals are wide "
        "and rough, and one question can swing a comparison; add questions before trusting small differences"
    )


def question_scores(report: RunReport, retriever: str, metric: str) -> dict[str, float]:
    """`retriever`'s score on every question for `metric` (`recall@3`), by question id, sorted.

    The report must carry per-question results (evaluate or load_run with per_question=True).
    Two dicts from the same golden set have the same keys in the same order, ready for
    `paired_test(list(a.values()), list(b.values()))`.
    """
    spec = parse_metric(metric, report.metrics)
    if report.per_question is None:
        raise ConfigError(f"run {report.run} has no per-question results: load it with per_question=True")
    scores = {
        row.question: float(row.score(spec.name))
        for row in report.per_question
        if row.retriever == retriever and row.k == spec.k
    }
    if not scores:
        raise NotFound(f"run {report.run} has no per-question {spec} for retriever {retriever!r}")
    return dict(sorted(scores.items()))


def _scipy_stats():
    """scipy.stats, imported when a test or an interval is first computed (it costs ~1 s to import)."""
    from scipy import stats

    return stats


def format_p(p: float, alpha: float = 0.05, *, digits: int = 4) -> str:
    """`p` printed with `digits` decimals, or more where fewer would round it onto the other side of
    (or onto) `alpha`: the printed value compares with alpha as the exact value does (0.049995
    prints as 0.049995, not 0.0500). Below 10**-digits, `< 0.0001`."""
    if p < 10 ** -digits and alpha >= 10 ** -digits:
        return f"< {10 ** -digits:.{digits}f}"
    for places in range(digits, 18):
        text = f"{p:.{places}f}"
        shown = float(text)
        if (shown < alpha) == (p < alpha) and (shown == alpha) == (p == alpha):
            return text
    return repr(p)


def p_phrase(p: float, alpha: float = 0.05) -> str:
    """`p = 0.0123`, or `p < 0.0001`: format_p in a sentence."""
    text = format_p(p, alpha)
    return f"p {text}" if text.startswith("<") else f"p = {text}"
