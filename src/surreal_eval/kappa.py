"""How far two judges agree: Cohen's kappa on the same pairs, and Kendall's tau between two orderings.

Kappa. With n pairs, each given a class by both judges, O the confusion counts (O[i][j]: pairs the first judge
put in class i and the second in class j), r and c the two judges' shares of each class, E = n r c^T the
counts chance alone would give:

    observed  p_o = trace(O) / n
    chance    p_e = sum_i r_i c_i
    kappa     (p_o - p_e) / (1 - p_e)                                   (Cohen 1960)
    weighted  1 - sum(w O) / sum(w E),  w_ij = (x_i - x_j)^2             (quadratic weights on the grades x)

1 is perfect agreement, 0 what chance alone gives, below 0 worse than chance; the values scikit-learn's
cohen_kappa_score gives (weights='quadratic' on consecutive grades). **Where either judge put every pair in
one class, kappa is 0 whatever the other does** (p_o = p_e): it measures nothing, so it is reported as not
measurable, with the reason, never as 0. The interval is the percentile bootstrap over pairs: a resample
draws n pairs with replacement, that is the confusion counts from a multinomial over the cells; resamples
in which a judge holds one class are undefined and left out (counted).

Tau. Two orderings of the same systems (their mean scores under two sets of labels): Kendall's tau-b
(scipy.stats.kendalltau), 1 the same order, -1 the reverse. Its interval resamples the questions the means
are taken over. Undefined (not measurable) with fewer than two systems or when one side ties them all.
"""

from __future__ import annotations

import math
from .model_base import Model
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["Agreement", "Estimate", "GradedAgreement", "OrderingAgreement", "agreement", "graded_agreement", "ordering_agreement"]

#: Resamples of a bootstrap interval here (numpy, vectorised: a fraction of a second).
RESAMPLES = 10_000


class Estimate(Model):
    """One figure with its percentile bootstrap interval at `level`, or, when it cannot be measured, None and why
    (`reason`) and what to do about it (`advice`)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    level: float = 0.95
    resamples: int = 0
    #: resamples in which the figure was undefined (a judge held one class), left out of the interval
    undefined: int = 0
    reason: str | None = None
    advice: str | None = None

    @property
    def measurable(self) -> bool:
        return self.value is not None

    def text(self, digits: int = 3) -> str:
        """`0.512 (95% interval 0.301 to 0.700)`, or `not measurable: REASON; ADVICE`."""
        if self.value is None:
            return "not measurable: " + "; ".join(x for x in (self.reason, self.advice) if x)
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} ({self.level:.0%} interval {self.low:.{digits}f} to {self.high:.{digits}f})"


def _not_measurable(reason: str, advice: str | None = None, level: float = 0.95) -> Estimate:
    return Estimate(value=None, reason=reason, advice=advice, level=level)


def _kappas(counts: np.ndarray, values: np.ndarray, weighted: bool) -> np.ndarray:
    """Kappa of each confusion matrix of `counts` (..., K, K) on classes `values`; NaN where a judge holds one class."""
    n = counts.sum(axis=(-2, -1)).astype(float)
    rows = counts.sum(axis=-1) / n[..., None]
    cols = counts.sum(axis=-2) / n[..., None]
    one_sided = ((rows > 0).sum(axis=-1) < 2) | ((cols > 0).sum(axis=-1) < 2)
    if weighted:
        w = (values[:, None] - values[None, :]) ** 2
        seen = (w * counts).sum(axis=(-2, -1)) / n
        chance = np.einsum("...i,ij,...j->...", rows, w, cols)
        with np.errstate(divide="ignore", invalid="ignore"):
            found = 1 - seen / chance
    else:
        observed = np.trace(counts, axis1=-2, axis2=-1) / n
        chance = (rows * cols).sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            found = (observed - chance) / (1 - chance)
    return np.where(one_sided, np.nan, found)


def _one_class(first: Sequence, second: Sequence, names: tuple[str, str], describe) -> str | None:  # type: ignore[no-untyped-def]
    for name, side in zip(names, (first, second)):
        classes = sorted(set(side))
        if len(classes) == 1:
            return f"{name} put all {len(side)} pairs in one class ({describe(classes[0])}): kappa is 0 whatever the other side says"
    return None


def _kappa(confusion: np.ndarray, values: np.ndarray, weighted: bool, *, level: float, resamples: int, seed: int | None) -> Estimate:
    value = float(_kappas(confusion, values, weighted))
    n = int(confusion.sum())
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(n, (confusion / n).ravel(), size=resamples).reshape(resamples, *confusion.shape)
    resampled = _kappas(drawn, values, weighted)
    defined = resampled[~np.isnan(resampled)]
    if defined.size == 0:
        return Estimate(value=value, level=level, resamples=resamples, undefined=resamples)
    alpha = (1 - level) / 2
    low, high = np.quantile(defined, [alpha, 1 - alpha])
    return Estimate(value=value, low=float(low), high=float(high), level=level, resamples=resamples,
                    undefined=int(resamples - defined.size))


class Agreement(Model):
    """Two judges' binary judgments of the same pairs (relevant or not): the confusion counts, p_o, and Cohen's kappa
    with its interval (or why it cannot be measured)."""

    #: both relevant, only the first (human) relevant, only the second (model) relevant, neither
    both: int
    first_only: int
    second_only: int
    neither: int
    observed: float | None
    kappa: Estimate

    @property
    def pairs(self) -> int:
        return self.both + self.first_only + self.second_only + self.neither


def agreement(first: Sequence[bool], second: Sequence[bool], *, names: tuple[str, str] = ("the first judge", "the second judge"),
              level: float = 0.95, resamples: int = RESAMPLES, seed: int | None = 0) -> Agreement:
    """The agreement of two judges' binary judgments, pair by pair (True: relevant), as the module says."""
    if len(first) != len(second):
        raise ValueError(f"the judges judged {len(first)} and {len(second)} pairs: they must judge the same ones")
    a = sum(bool(x) and bool(y) for x, y in zip(first, second))
    b = sum(bool(x) and not y for x, y in zip(first, second))
    c = sum(bool(y) and not x for x, y in zip(first, second))
    n = len(first)
    d = n - a - b - c
    if n == 0:
        return Agreement(both=0, first_only=0, second_only=0, neither=0, observed=None,
                         kappa=_not_measurable("no pair was judged by both", level=level))
    one = _one_class([bool(x) for x in first], [bool(y) for y in second], names, lambda v: "relevant" if v else "not relevant")
    if one:
        kappa = _not_measurable(one, level=level)
    else:
        kappa = _kappa(np.array([[a, b], [c, d]]), np.array([1.0, 0.0]), False, level=level, resamples=resamples, seed=seed)
    return Agreement(both=a, first_only=b, second_only=c, neither=d, observed=(a + d) / n, kappa=kappa)


class GradedAgreement(Model):
    """Two judges' grades of the same `n` pairs: the grades seen, the confusion counts (rows: the first judge's grade,
    columns: the second's, in the order of `grades`), the share graded alike, and Cohen's kappa, unweighted and with
    quadratic weights, each with its interval or why it cannot be measured."""

    n: int
    grades: list[float]
    confusion: list[list[int]]
    observed: float | None
    kappa: Estimate
    weighted_kappa: Estimate


def graded_agreement(first: Sequence[float], second: Sequence[float], *, names: tuple[str, str] = ("the first judge", "the second judge"),
                     level: float = 0.95, resamples: int = RESAMPLES, seed: int | None = 0) -> GradedAgreement:
    """The agreement of two judges' grades, pair by pair, as the module says (classes: every grade either gave)."""
    if len(first) != len(second):
        raise ValueError(f"the judges graded {len(first)} and {len(second)} pairs: they must grade the same ones")
    grades = sorted({float(g) for g in [*first, *second]})
    index = {g: i for i, g in enumerate(grades)}
    confusion = np.zeros((len(grades), len(grades)), dtype=int)
    for x, y in zip(first, second):
        confusion[index[float(x)], index[float(y)]] += 1
    n = len(first)
    if n == 0:
        none = _not_measurable("no pair has a grade from both", level=level)
        return GradedAgreement(n=0, grades=[], confusion=[], observed=None, kappa=none, weighted_kappa=none)
    one = _one_class([float(x) for x in first], [float(y) for y in second], names, lambda v: f"grade {v:g}")
    values = np.array(grades)
    if one:
        kappa = weighted = _not_measurable(one, level=level)
    else:
        kappa = _kappa(confusion, values, False, level=level, resamples=resamples, seed=seed)
        weighted = _kappa(confusion, values, True, level=level, resamples=resamples, seed=seed)
    return GradedAgreement(n=n, grades=grades, confusion=confusion.tolist(), observed=float(np.trace(confusion)) / n,
                           kappa=kappa, weighted_kappa=weighted)


class OrderingAgreement(Model):
    """How two sets of labels order the same systems by one metric: each system's mean under the first and the second,
    Kendall's tau-b between the two orderings with its interval over questions, and the system each puts first."""

    metric: str
    questions: int
    first: dict[str, float]
    second: dict[str, float]
    tau: Estimate
    #: the systems with the highest mean under each (several when tied)
    top_first: list[str]
    top_second: list[str]
    #: whether the two put different systems first
    top_changes: bool = False


def _tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of x against the same row of y (..., m); NaN where either row is all ties."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    dx, dy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    concordance = (dx * dy).sum(axis=-1)
    tied_x, tied_y = (dx != 0).sum(axis=-1), (dy != 0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((tied_x == 0) | (tied_y == 0), np.nan, concordance / np.sqrt(tied_x * tied_y.astype(float)))


def _ordering(metric: str, questions: int, shown: tuple[dict[str, float], dict[str, float]], tau: Estimate) -> OrderingAgreement:
    tops = (_top(shown[0]), _top(shown[1])) if shown[0] else ([], [])
    return OrderingAgreement(metric=metric, questions=questions, first=shown[0], second=shown[1], tau=tau,
                             top_first=tops[0], top_second=tops[1], top_changes=set(tops[0]) != set(tops[1]))


def _top(means: Mapping[str, float]) -> list[str]:
    best = max(means.values())
    return sorted(name for name, value in means.items() if math.isclose(value, best, rel_tol=0, abs_tol=1e-12))


def ordering_agreement(metric: str, first: Mapping[str, Sequence[float]], second: Mapping[str, Sequence[float]], *,
                       names: tuple[str, str] = ("the first labels", "the second labels"), level: float = 0.95,
                       resamples: int = RESAMPLES, seed: int | None = 0) -> OrderingAgreement:
    """Kendall's tau between the orderings of the systems of `first` by their mean score and by their mean in `second`
    (per system, one score per question, the questions in the same order everywhere), as the module says."""
    from scipy.stats import kendalltau

    systems = sorted(first)
    if sorted(second) != systems:
        raise ValueError("both sides must score the same systems")
    a = np.array([list(first[s]) for s in systems], dtype=float).T.reshape(-1, len(systems))  # questions x systems
    b = np.array([list(second[s]) for s in systems], dtype=float).T.reshape(-1, len(systems))
    if a.shape != b.shape:
        raise ValueError("both sides must score the same questions")
    questions = a.shape[0]
    if questions == 0 or not systems:
        return _ordering(metric, questions, ({}, {}), _not_measurable("no question is scored by both", level=level))
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    shown = (dict(zip(systems, map(float, mean_a))), dict(zip(systems, map(float, mean_b))))
    if len(systems) < 2:
        return _ordering(metric, questions, shown, _not_measurable(
            f"one system ({systems[0]}): an ordering needs two or more", "evaluate with two or more retrievers", level=level))
    for name, means in zip(names, (mean_a, mean_b)):
        if np.all(means == means[0]):
            return _ordering(metric, questions, shown, _not_measurable(f"{name} tie every system ({means[0]:.3f})", level=level))
    value = float(kendalltau(mean_a, mean_b).statistic)
    rng = np.random.default_rng(seed)
    resampled = np.empty(resamples)
    batch = max(1, 1_000_000 // questions)  # memory bounded by about a million counts at any number of questions
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        drawn = rng.integers(0, questions, (size, questions))
        counts = np.bincount((drawn + questions * np.arange(size)[:, None]).ravel(),
                             minlength=size * questions).reshape(size, questions)
        resampled[start:start + size] = _tau_b(counts @ a / questions, counts @ b / questions)
    defined = resampled[~np.isnan(resampled)]
    if defined.size:
        alpha = (1 - level) / 2
        low, high = np.quantile(defined, [alpha, 1 - alpha])
        tau = Estimate(value=value, low=float(low), high=float(high), level=level, resamples=resamples,
                       undefined=int(resamples - defined.size))
    else:
        tau = Estimate(value=value, level=level, resamples=resamples, undefined=resamples)
    return _ordering(metric, questions, shown, tau)
