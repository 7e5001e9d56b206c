"""What the HTML report shows, read from the database: the runs, the latest in full, the metric the
matrix and slices use, the comparison with the previous run, and the slices (present.html draws it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from surrealdb import RecordID

from ..errors import ConfigError, NotFound
from ..grammar import MetricSpec, parse_metric
from ..models import RunReport, RunSummary
from ..runs.record import load_for_comparison, load_run, resolve_run
from ..runs.history import history
from ..store.connection import Database, record_str
from .blame import culprits
from .compare import Comparison, compare_reports
from .overlap import for_runs
from .slices import Slice, slices
from .sources import SourceDelta, SourceMean, question_sources, run_source_means, source_deltas
from ..errors import SurrealEvalError
from ..golden.labels import StaleLabel, stale_labels

__all__ = ["ReportData", "report_data"]

#: The question fields the report slices by.
SLICE_BY = ("category", "language", "source")


@dataclass(frozen=True)
class ReportData:
    """Everything the report page shows: `runs` oldest first, `latest` (per question) the last of them."""

    runs: list[RunSummary]
    latest: RunReport
    spec: MetricSpec
    comparison: Comparison | None
    note: str | None  # why the latest run was not compared with the previous one
    slices: list[Slice]
    #: the latest run's means per question source, real first with the gap (analysis.sources; empty: one source)
    sources: list[SourceMean] = ()
    #: per question source, the latest run against the previous one (B - A)
    source_deltas: list[SourceDelta] = ()
    #: the judgments of the latest run's golden set whose document changed since they were made
    stale: list[StaleLabel] = ()


def _choose_metric(metric: str | None, report: RunReport) -> MetricSpec:
    if metric is not None:
        spec = parse_metric(metric, report.metrics)
        if spec.k not in report.ks:
            raise ConfigError(
                f"the latest run {report.run} measured k = {', '.join(map(str, report.ks))}, not {spec}"
            )
        return spec
    return MetricSpec("recall", 5 if 5 in report.ks else max(report.ks))


def _select_runs(db: Database, runs: Iterable[str | RecordID] | None) -> list[RunSummary]:
    summaries = history(db)
    if runs is not None:
        wanted = {record_str(resolve_run(db, ref)) for ref in runs}
        summaries = [s for s in summaries if s.run in wanted]
    if not summaries:
        raise NotFound("no finished run to report: `surreal-eval evaluate` records one")
    return summaries


def report_data(db: Database, *, runs: Iterable[str | RecordID] | None = None, metric: str | None = None) -> ReportData:
    """The report's data: `runs` (ids, latest, previous; default every finished run), the last the latest."""
    summaries = _select_runs(db, runs)
    latest = load_run(db, summaries[-1].run, per_question=True)
    spec = _choose_metric(metric, latest)
    comparison, note = None, None
    if len(summaries) > 1:
        previous = load_for_comparison(db, summaries[-2].run)
        try:
            comparison = compare_reports(previous, latest, metrics=[str(spec)])
            comparison.overlap, comparison.misses = for_runs(db, previous, latest, comparison.rows)
            comparison.culprits = culprits(db, previous, latest, comparison.rows)
        except ConfigError as error:
            note = f"not compared with the previous run {previous.run}: {error}"
    deltas = []
    if comparison is not None:
        deltas = source_deltas(previous, latest, question_sources(db, latest.run, spec.k), [(r.retriever, r.metric) for r in comparison.rows])
    return ReportData(runs=summaries, latest=latest, spec=spec, comparison=comparison, note=note,
                      slices=slices(db, latest.run, str(spec), by=SLICE_BY), sources=run_source_means(db, latest.run, str(spec)),
                      source_deltas=deltas, stale=_stale(db, latest))


def _stale(db: Database, latest: RunReport) -> list[StaleLabel]:
    """The stale judgments of the golden set the latest run measured, as it is now (none when it is gone)."""
    try:
        return stale_labels(db, latest.params.get("golden") or "seval_question")[1]
    except SurrealEvalError:  # the golden set was detached since: nothing to mark
        return []
