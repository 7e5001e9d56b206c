"""Provenance beside every number: a run's means per question source, real first, and the gap to real; two runs'
paired differences per source.

    run_source_means(db, run, metric)          each retriever's mean per source of run `run`  -> [SourceMean]
    source_means(rows, metric, order)          the same over rows of fn::seval::slice_rows (pure)
    question_sources(db, run, k)               {question: source} of the questions run `run` scored
    source_deltas(a, b, sources, metrics)      per source, the paired difference B - A of two runs -> [SourceDelta]

The means per source live a layer down, in runs/sources.py (`evaluate` fills its report's `by_source` with them), and
are re-exported here: what a source is, the real reference, the intervals and gaps are described there. The paired
differences follow the same rules: a question whose source is not set counts as real, nothing is computed when the
questions hold one source. The CLI (slices, compare, evaluate, gate) and the HTML report all show these.
"""

from __future__ import annotations

from collections.abc import Iterable

from surrealdb import RecordID

from ..model_base import Model
from ..models import RunReport, SourceMean
from ..runs.record import resolve_run
from ..runs.sources import REFERENCE, SOURCE_ORDER, ordered_sources, run_source_means, source_means, source_of, sources_note
from ..stats import confidence_interval
from ..store.connection import Database, record_str

__all__ = ["REFERENCE", "SOURCE_ORDER", "SourceDelta", "SourceMean", "question_sources", "run_source_means",
           "source_deltas", "source_means", "source_of", "sources_note"]


class SourceDelta(Model):
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


def question_sources(db: Database, run: str | RecordID, k: int) -> dict[str, str]:
    """The source (`source_of`) of every labelled question run `run` scored at cutoff `k`, read from its golden set now."""
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
        held = ordered_sources(sources[q] for q in shared)
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
