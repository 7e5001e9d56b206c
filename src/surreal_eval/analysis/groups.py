"""Three or more runs, or three or more retrievers of one run, compared pair by pair at once.

    compare_many_runs(db, runs, metrics=, retrievers=, alpha=)      every pair of runs, per retriever and metric@k
    compare_many_retrievers(db, run, retrievers, metrics=, alpha=)  every pair of retrievers, per metric@k

Every pair is paired by question as in analysis.compare (B - A, the later side being B); the
p-values of ALL pairs and metrics are Holm-adjusted together (analysis.multiple.holm). Two sides
are NOT SEPARABLE on a metric@k (and retriever, for runs) when their Holm-adjusted p >= alpha or
their difference is tied (within the mean's resolution); the groups are the maximal sets of two or
more sides in which every pair is not separable (analysis.multiple.inseparable_groups), its members
ordered by mean, best first.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

from surrealdb import RecordID

from ..model_base import Model
from ..errors import ConfigError
from ..runs.record import load_for_comparison
from ..stats import sample_warning
from ..store.connection import Database
from .compare import PairedDelta, adjust, compare_reports, metric_specs, paired_delta, report_index, retriever_scores
from .multiple import inseparable_groups

__all__ = ["Group", "ManyComparison", "PairDelta", "compare_many_retrievers", "compare_many_runs"]


class PairDelta(PairedDelta):
    """One pair of sides (A = `a`, B = `b`) on one metric@k, of `retriever` when the sides are runs."""

    a: str
    b: str
    retriever: str | None = None


class Group(Model):
    """Sides that cannot be told apart on `metric` (of `retriever` when the sides are runs): every pair
    has a Holm-adjusted p >= alpha or a tied difference. `members` best mean first, with their means."""

    metric: str
    retriever: str | None = None
    members: list[str]
    means: list[float]


class ManyComparison(Model):
    """Every pair of `sides` ('runs' or 'retrievers' of run `run`), the groups that cannot be told apart at `alpha`,
    and per metric (and retriever) the sides that can be told apart from every other (`separable`)."""

    kind: str
    run: str | None = None
    sides: list[str]
    alpha: float
    warnings: list[str]
    rows: list[PairDelta]
    groups: list[Group]
    separable: dict[str, list[str]]


def _check(sides: list[str], what: str, alpha: float) -> None:
    if len(sides) < 3:
        raise ConfigError(f"name three or more {what} to compare them all at once (two: compare them as a pair)")
    if len(set(sides)) != len(sides):
        raise ConfigError(f"{what} named twice: {', '.join(s for s in dict.fromkeys(sides) if sides.count(s) > 1)}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha <= 1):
        raise ConfigError(f"--alpha must be between 0 (exclusive) and 1, got {alpha!r}")


def _grouped(rows: list[PairDelta], sides: list[str], alpha: float, kind: str, run: str | None,
             warnings: list[str]) -> ManyComparison:
    """Holm over all rows, then per (retriever, metric) the maximal groups of sides not separable."""
    rows = adjust(rows)
    groups: list[Group] = []
    separable: dict[str, list[str]] = {}
    for key in dict.fromkeys((r.retriever, r.metric) for r in rows):
        mine = {frozenset((r.a, r.b)): r for r in rows if (r.retriever, r.metric) == key}
        means: dict[str, float] = {}
        for r in mine.values():
            means[r.a], means[r.b] = r.mean_a, r.mean_b
        order = sorted(means, key=lambda s: (-means[s], sides.index(s)))

        def inseparable(x: str, y: str) -> bool:
            row = mine.get(frozenset((x, y)))
            return row is not None and (row.tied or (row.p_adjusted or 0.0) >= alpha)

        found = inseparable_groups(order, inseparable)
        groups += [Group(metric=key[1], retriever=key[0], members=g, means=[means[s] for s in g]) for g in found]
        alone = [s for s in order if not any(s in g for g in found)]
        separable[f"{key[0]} {key[1]}" if key[0] else key[1]] = alone
    return ManyComparison(kind=kind, run=run, sides=sides, alpha=alpha, warnings=warnings, rows=rows,
                          groups=groups, separable=separable)


def compare_many_runs(
    db: Database,
    runs: Iterable[str | RecordID],
    *,
    metrics: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
    alpha: float = 0.05,
) -> ManyComparison:
    """Every pair of `runs` (three or more), per retriever all of them evaluated and metric@k all measured."""
    runs, metrics = list(runs), None if metrics is None else list(metrics)
    retrievers = None if retrievers is None else list(retrievers)
    _check([str(r) for r in runs], "runs", alpha)
    reports = [load_for_comparison(db, r) for r in runs]
    sides = [r.run for r in reports]
    _check(sides, "runs", alpha)
    rows: list[PairDelta] = []
    warnings: list[str] = []
    for a, b in combinations(reports, 2):
        pair = compare_reports(a, b, metrics=metrics, retrievers=retrievers)
        warnings += [f"{a.run} / {b.run}: {w}" for w in pair.warnings]
        rows += [PairDelta(a=a.run, b=b.run, **r.model_dump()) for r in pair.rows]
    return _grouped(rows, sides, alpha, "runs", None, warnings)


def compare_many_retrievers(
    db: Database,
    run: str | RecordID,
    retrievers: Iterable[str],
    *,
    metrics: Iterable[str] | None = None,
    alpha: float = 0.05,
) -> ManyComparison:
    """Every pair of `retrievers` (three or more) of one run, per metric@k (default: every metric at every k)."""
    sides = list(retrievers)
    _check(sides, "retrievers", alpha)
    report = load_for_comparison(db, run)
    for name in sides:
        if name not in report.retrievers:
            raise ConfigError(f"run {report.run} did not evaluate retriever {name}: it has {', '.join(report.retrievers)}")
    specs = metric_specs(metrics, report.ks, where=f"run {report.run}", names=report.metrics)
    index = report_index(report)
    rows: list[PairDelta] = []
    for spec in specs:
        for a, b in combinations(sides, 2):
            (scores_a, _), (scores_b, labels) = (retriever_scores(index, name, spec) for name in (a, b))
            paired = sorted(set(scores_a) & set(scores_b))
            if paired:
                delta = paired_delta(scores_a, scores_b, paired, str(spec), [labels[q] for q in paired])
                rows.append(PairDelta(a=a, b=b, **delta.model_dump()))
    small = sample_warning(report.questions)
    return _grouped(rows, sides, alpha, "retrievers", report.run, [small] if small else [])
