"""A run's means per question source, real first, and each other source's gap to real: what `evaluate` puts in its
report's `by_source` (analysis.sources re-exports all of it, beside the paired differences per source of two runs).

    run_source_means(db, run, metric)          each retriever's mean per source of run `run`  -> [SourceMean]
    source_means(rows, metric, order)          the same over rows of fn::seval::slice_rows (pure)
    with_source_means(db, report)              `report` with `by_source` and `by_source_note` filled
    scored_rows(db, run, metric)               run `run`'s labelled per-question rows with the questions' fields now

A question's source is where it came from (seval_question.source: real, ticket, click, expert, synthetic,
production-failure). A question whose source is not set counts as `real`: a load stores no default, and
every other source is set by whatever made the question (a log, a generator, promote), so a set a user
assembled and loaded without naming sources is their own real questions. Each mean carries its 95%
percentile bootstrap interval over the questions of that source (`stats.confidence_interval`), and every
source but real its gap to real (source - real, on the same retriever). Nothing is computed when the
questions scored hold one source only: the overall mean already says it. Questions with no judgment
(rankings flagged `unlabelled`) are in no mean (fn::seval::slice_rows leaves them out; so does
`QuestionResult.labelled`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from surrealdb import RecordID

from ..errors import ConfigError, NotFound
from ..grammar import MetricSpec, parse_metric
from ..models import RunReport, SourceMean
from ..stats import confidence_interval
from ..store.connection import Database, record_str
from .record import resolve_run, run_metrics, run_order

__all__ = ["REFERENCE", "SOURCE_ORDER", "SourceMean", "ordered_sources", "run_source_means", "scored_rows", "source_means",
           "source_metric", "source_of", "sources_note", "with_source_means"]

#: The source every other is measured against.
REFERENCE = "real"
#: The order sources are shown in: real first.
SOURCE_ORDER = ("real", "ticket", "expert", "click", "production-failure", "synthetic")


def source_of(value: object) -> str:
    """A question's source as shown: the value set, `real` when none is."""
    return str(value) if value else REFERENCE


def ordered_sources(sources: Iterable[str]) -> list[str]:
    """The distinct `sources` in SOURCE_ORDER (real first), any other after them by name."""
    rank = {name: i for i, name in enumerate(SOURCE_ORDER)}
    return sorted(set(sources), key=lambda s: (rank.get(s, len(rank)), s))


def source_means(rows: Sequence[dict], metric: str, order: Callable[[dict], object] | None = None,
                 label: str | None = None) -> list[SourceMean]:
    """Each retriever's mean of `metric` (a metric name in each row's `metrics`) per source of rows
    {question, retriever, metrics, source}; retrievers in `order` (a sort key of {retriever, k}), sources
    real first; empty when the rows hold one source."""
    groups: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        groups.setdefault((row["retriever"], source_of(row.get("source"))), []).append(float(row["metrics"][metric]))
    sources = ordered_sources(s for _, s in groups)
    if len(sources) < 2:
        return []
    retrievers = list(dict.fromkeys(r for r, _ in groups))
    if order is not None:
        retrievers.sort(key=lambda r: order({"retriever": r, "k": 0}))
    found: list[SourceMean] = []
    for retriever in retrievers:
        real = None
        for source in sources:
            scores = groups.get((retriever, source))
            if not scores:
                continue
            interval = confidence_interval(scores)
            if source == REFERENCE:
                real = interval.mean
            found.append(SourceMean(retriever=retriever, metric=label or metric, source=source, questions=interval.n,
                                    mean=interval.mean, low=interval.low, high=interval.high,
                                    gap=None if source == REFERENCE or real is None else interval.mean - real,
                                    gap_note=_gap_note(source, real)))
    return found


def _gap_note(source: str, real: float | None) -> str | None:
    """Why a source has no gap to real (None when it has one)."""
    if source == REFERENCE:
        return f"the {REFERENCE} questions are what every other source's gap is measured from"
    if real is None:
        return f"no question is {REFERENCE} (a question whose source is not set counts as {REFERENCE}): no gap to measure"
    return None


def sources_note(rows: Sequence[SourceMean], *, recorded: bool = True, labelled: bool = True) -> str | None:
    """Why a run has no means per question source (None when it has them): not recorded, nothing judged, or one source."""
    if rows:
        return None
    if not recorded:
        return "no run was recorded (--no-record): the means per question source are read from a recorded run"
    if not labelled:
        return "no question is judged: no mean to split by source"
    return "the questions scored hold one source: the overall means are that source's means"


def scored_rows(db: Database, run: str | RecordID, metric: str) -> tuple[MetricSpec, list[dict], Callable]:
    """Run `run`'s labelled per-question results at `metric`'s cutoff with the question's fields now
    (fn::seval::slice_rows), the parsed metric, and the sort key of the run's retriever order."""
    run_id = resolve_run(db, run)
    info = db.value("RETURN fn::seval::finished_run($run)", {"run": run_id})
    spec = parse_metric(metric, run_metrics(info))
    if spec.k not in info["ks"]:
        raise ConfigError(
            f"run {record_str(run_id)} measured k = {', '.join(map(str, info['ks']))}, not {spec}"
        )
    rows = db.value("RETURN fn::seval::slice_rows($run, $k)", {"run": run_id, "k": spec.k})
    if not rows:
        raise NotFound(f"run {record_str(run_id)} has no per-question results at k = {spec.k}")
    return spec, rows, run_order(info["retrievers"])


def run_source_means(db: Database, run: str | RecordID, metric: str = "recall@5") -> list[SourceMean]:
    """Each retriever's mean of `metric` (NAME@K) per question source of run `run` (an id, latest, previous),
    with intervals and the gap to real; empty when its questions hold one source."""
    spec, rows, order = scored_rows(db, run, metric)
    return source_means(rows, spec.name, order, label=str(spec))


def source_metric(report: RunReport) -> str:
    """The metric a report's means per source are of: recall at k = 5, else at its deepest k (its first metric when it
    scored no recall)."""
    name = "recall" if "recall" in report.metrics or not report.metrics else report.metrics[0]
    return f"{name}@{5 if 5 in report.ks else max(report.ks)}"


def with_source_means(db: Database, report: RunReport) -> RunReport:
    """`report` with its `by_source` (`run_source_means` at `source_metric`) and, when that is empty, `by_source_note`
    saying why: the run was not recorded, no question is judged, or the questions hold one source."""
    if not report.recorded:
        return report.model_copy(update={"by_source": [], "by_source_note": sources_note([], recorded=False)})
    try:
        found = run_source_means(db, report.run, source_metric(report))
    except NotFound:  # no labelled question: no mean at all
        return report.model_copy(update={"by_source": [], "by_source_note": sources_note([], labelled=False)})
    return report.model_copy(update={"by_source": found, "by_source_note": sources_note(found)})
