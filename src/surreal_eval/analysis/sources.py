"""Provenance beside every number: a run's means per question source, real first, and the gap to real.

    run_source_means(db, run, metric)          each retriever's mean per source of run `run`  -> [SourceMean]
    source_means(rows, metric, order)          the same over rows of fn::seval::slice_rows (pure)
    question_sources(db, run, k)               {question: source} of the questions run `run` scored
    source_deltas(a, b, sources, metrics)      per source, the paired difference B - A of two runs -> [SourceDelta]

A question's source is where it came from (seval_question.source: real, ticket, click, expert, synthetic,
production-failure). A question whose source is not set counts as `real`: a load stores no default, and
every other source is set by whatever made the question (a log, a generator, promote), so a set a user
assembled and loaded without naming sources is their own real questions. Each mean carries its 95%
percentile bootstrap interval over the questions of that source (`stats.confidence_interval`), and every
source but real its gap to real (source - real, on the same retriever). Nothing is computed when the
questions scored hold one source only: the overall mean already says it. Questions with no judgment
(rankings flagged `unlabelled`) are in no mean (fn::seval::slice_rows leaves them out; so does
`QuestionResult.labelled`). The CLI (slices, compare, evaluate) and the HTML report all show these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel
from surrealdb import RecordID

from ..models import RunReport
from ..stats import confidence_interval
from ..store.connection import Database, record_str

__all__ = ["REFERENCE", "SOURCE_ORDER", "SourceDelta", "SourceMean", "question_sources", "run_source_means",
           "source_deltas", "source_means", "source_of", "sources_note"]

#: The source every other is measured against.
REFERENCE = "real"
#: The order sources are shown in: real first.
SOURCE_ORDER = ("real", "ticket", "expert", "click", "production-failure", "synthetic")


class SourceMean(BaseModel):
    """One retriever's mean of `metric` over the `questions` of one source, its 95% interval, and its gap
    to the real questions' mean (source - real; None for real itself, or when no question is real, and
    then `gap_note` says which)."""

    retriever: str
    metric: str
    source: str
    questions: int
    mean: float
    low: float
    high: float
    gap: float | None = None
    #: why `gap` is None: this is the real mean the gaps are measured from, or no question is real
    gap_note: str | None = None


class SourceDelta(BaseModel):
    """One retriever's `metric` on the `questions` of one source both runs scored: the means of A and B and
    the difference B - A with its 95% bootstrap interval (over the per-question differences)."""

    retriever: str
    metric: str
    source: str
    questions: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float


def source_of(value: object) -> str:
    """A question's source as shown: the value set, `real` when none is."""
    return str(value) if value else REFERENCE


def _ordered(sources: Iterable[str]) -> list[str]:
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
    sources = _ordered(s for _, s in groups)
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


def run_source_means(db: Database, run: str | RecordID, metric: str = "recall@5") -> list[SourceMean]:
    """Each retriever's mean of `metric` (NAME@K) per question source of run `run` (an id, latest, previous),
    with intervals and the gap to real; empty when its questions hold one source."""
    from .slices import scored_rows

    spec, rows, order = scored_rows(db, run, metric)
    return source_means(rows, spec.name, order, label=str(spec))


def question_sources(db: Database, run: str | RecordID, k: int) -> dict[str, str]:
    """The source (`source_of`) of every labelled question run `run` scored at cutoff `k`, read from its golden set now."""
    from ..runs.record import resolve_run

    rows = db.value("RETURN fn::seval::slice_rows($run, $k)", {"run": resolve_run(db, run), "k": k})
    return {record_str(row["question"]): source_of(row.get("source")) for row in rows}


def _scores(report: RunReport, retriever: str, metric: str) -> dict[str, float]:
    name, _, k = metric.partition("@")
    return {r.question: float(r.score(name)) for r in report.per_question or []
            if r.labelled and r.retriever == retriever and r.k == int(k)}


def source_deltas(a: RunReport, b: RunReport, sources: dict[str, str], metrics: Iterable[tuple[str, str]]) -> list[SourceDelta]:
    """Per (retriever, metric NAME@K) of `metrics` and per source of `sources` ({question: source}), the
    paired difference B - A over the questions of that source both runs scored; empty when those
    questions hold one source."""
    pairs = list(metrics)
    found: list[SourceDelta] = []
    for retriever, metric in pairs:
        before, after = _scores(a, retriever, metric), _scores(b, retriever, metric)
        shared = [q for q in after if q in before and q in sources]
        held = _ordered(sources[q] for q in shared)
        if len(held) < 2:
            continue
        for source in held:
            mine = [q for q in shared if sources[q] == source]
            interval = confidence_interval([after[q] - before[q] for q in mine])
            found.append(SourceDelta(
                retriever=retriever, metric=metric, source=source, questions=len(mine),
                mean_a=sum(before[q] for q in mine) / len(mine), mean_b=sum(after[q] for q in mine) / len(mine),
                difference=interval.mean, low=interval.low, high=interval.high))
    return found
