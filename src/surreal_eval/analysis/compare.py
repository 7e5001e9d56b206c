"""Compare two runs (or two retrievers of one run) question by question.

    compare_runs(db, a, b, metrics=, retrievers=) every retriever and metric@k both runs measured -> Comparison
    compare_reports(report_a, report_b, ...)      the same over two loaded RunReports (per_question=True)
    compare_retrievers(db, run, a, b, metric)     two retrievers of one run, paired by question -> RetrieverComparison

Every difference is B - A over the questions both sides scored (paired by question id), with the
percentile bootstrap interval of the mean difference and the paired randomization p-value of
`stats.paired_test`, and that p-value Holm-adjusted over every row of the comparison (`p_adjusted`,
analysis.multiple; three or more sides: analysis.groups). A question is FIXED when its score rose from A to B and BROKEN when it fell.
Different golden sets, judged@k far apart (analysis.judged) or different scoring rules (relevance
level, identical ids dropped: analysis.changes) are compared with a loud warning in
`Comparison.warnings`; a different corpus, parameters or harness is what a comparison is for: those
are listed in `Comparison.changes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from surrealdb import RecordID

from ..model_base import Model
from ..store.connection import Database
from ..errors import ConfigError
from ..runs.record import load_for_comparison
from ..grammar import METRICS, MetricSpec, parse_metric
from ..models import QuestionResult, RunReport
from ..stats import PairedComparison, paired_test, resolution, sample_warning
from .blame import Culprit, culprits
from .changes import Change, golden_warning, label_changes, run_changes, scoring_warnings
from ..golden.labels import LabelChange
from .inert import parameter_notes
from .judged import judged_warnings
from .multiple import holm
from .sources import SourceDelta, question_sources, source_deltas
from .overlap import Miss, Overlap, for_retrievers, for_runs
from .rebuilt import rebuilt_index_notes

__all__ = [
    "Change",
    "Comparison",
    "PairedDelta",
    "QuestionDelta",
    "RetrieverComparison",
    "RetrieverDelta",
    "adjust",
    "compare_reports",
    "compare_retrievers",
    "compare_runs",
    "metric_specs",
    "paired_delta",
    "paired_scores",
    "report_index",
    "retriever_scores",
    "run_changes",
]

#: Scores closer than this count as equal (they come from the same float arithmetic either way).
TOLERANCE = 1e-12


class QuestionDelta(Model):
    """One question's score on side A (`before`) and side B (`after`)."""

    question: str
    before: float
    after: float


class PairedDelta(PairedComparison):
    """One metric@k on both sides, paired by question: means over the `n` shared questions, the
    difference B - A with its bootstrap interval at `level`, the two-sided paired randomization
    p-value (`exact` when every sign pattern was enumerated), and the questions whose score rose
    (`fixed`) or fell (`broken`) from A to B, largest change first."""

    metric: str
    fixed: list[QuestionDelta]
    broken: list[QuestionDelta]
    #: the smallest step one question moves the mean over these questions (stats.resolution)
    resolution: float | None = None
    #: A and B cannot be told apart: the difference is smaller than the resolution
    tied: bool = False
    #: p_value Holm-adjusted over every row of the comparison it belongs to (analysis.multiple.holm)
    p_adjusted: float | None = None


class RetrieverDelta(PairedDelta):
    """PairedDelta of one retriever between two runs."""

    retriever: str


class Comparison(Model):
    """Run A against run B: what changed between them and, per retriever and metric@k, the paired difference."""

    run_a: str
    run_b: str
    label_a: str | None
    label_b: str | None
    created_a: datetime | None
    created_b: datetime | None
    questions_a: int
    questions_b: int
    shared: int  # questions scored in both runs: every difference is over these
    only_a: list[str]
    only_b: list[str]
    same_golden: bool
    warnings: list[str]
    changes: list[Change]
    #: one line per parameter the runs differ in that cannot change a compared metric (analysis.inert), and one when
    #: a compared retriever's HNSW index was built again between the runs (analysis.rebuilt)
    notes: list[str] = []
    #: the labels of B's golden set that changed after run A and up to run B (`golden history`), oldest first
    label_changes: list[LabelChange] = []
    #: per question source (when the shared questions hold several), B - A per retriever and metric (analysis.sources)
    by_source: list[SourceDelta] = []
    skipped: list[str]  # retrievers or cutoffs only one run measured
    rows: list[RetrieverDelta]
    #: per retriever and shared k, how far B's rankings moved from A's (analysis.overlap; needs no judgment)
    overlap: list[Overlap] = []
    #: per broken question, B's new top-k documents nobody judged (a miss may be a missing label)
    misses: list[Miss] = []
    #: per broken question, the records that entered its top k (and the ingest that brought each in) and the
    #: relevant records they pushed out, with ranks (analysis.blame)
    culprits: list[Culprit] = []


class RetrieverComparison(Model):
    """Two retrievers of one run, paired by question: A is `retriever_a`, B is `retriever_b`."""

    run: str
    label: str | None
    retriever_a: str
    retriever_b: str
    warnings: list[str]
    rows: list[PairedDelta]
    overlap: list[Overlap] = []  # per k, how far B's rankings are from A's (analysis.overlap)
    misses: list[Miss] = []  # per broken question, B's new top-k documents nobody judged


# ---------------------------------------------------------------------------------------------
# Metrics and pairing
# ---------------------------------------------------------------------------------------------


def metric_specs(
    metrics: Iterable[str] | None, ks: Sequence[int], *, where: str = "both runs", names: Sequence[str] | None = None
) -> list[MetricSpec]:
    """The metric@k to compare: NAME@K as given, a bare NAME at every k in `ks`, None every metric of
    `names` (default METRICS) at every k in `ks`. A cutoff not in `ks` is a ConfigError naming `where`."""
    names = list(METRICS if names is None else names)
    if metrics is None:
        return [MetricSpec(name, k) for name in names for k in ks]
    specs: list[MetricSpec] = []
    for text in metrics:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            if "@" in part:
                spec = parse_metric(part, names)
                if spec.k not in ks:
                    raise ConfigError(
                        f"{spec} cannot be compared: {where} measured k = {', '.join(map(str, ks)) or 'none'}"
                    )
                found = [spec]
            elif part in names:
                found = [MetricSpec(part, k) for k in ks]
            else:
                raise ConfigError(f"unknown metric {part!r}: use NAME@K or NAME, NAME one of {', '.join(names)}")
            specs += [s for s in found if s not in specs]
    if not specs:
        raise ConfigError("no metric given: pass NAME@K such as recall@5")
    return specs


def _index(report: RunReport) -> dict[tuple[str, int], dict[str, QuestionResult]]:
    if report.per_question is None:
        raise ConfigError(f"run {report.run} has no per-question results: load it with per_question=True")
    rows: dict[tuple[str, int], dict[str, QuestionResult]] = {}
    for row in report.per_question:
        if row.labelled:  # a question with no judgment has no score to compare (the overlap of rankings does)
            rows.setdefault((row.retriever, row.k), {})[row.question] = row
    return rows


def _questions(report: RunReport) -> set[str]:
    return {row.question for row in report.per_question or []}


def paired_delta(a: dict[str, float], b: dict[str, float], questions: Sequence[str], metric: str, labels=None) -> PairedDelta:
    """PairedDelta of `a` and `b` (by question id) over `questions`; `labels` (label counts) gives `tied`."""
    before = [a[q] for q in questions]
    after = [b[q] for q in questions]
    test = paired_test(before, after)
    fixed, broken = [], []
    for question, x, y in zip(questions, before, after, strict=True):
        if y > x + TOLERANCE:
            fixed.append(QuestionDelta(question=question, before=x, after=y))
        elif y < x - TOLERANCE:
            broken.append(QuestionDelta(question=question, before=x, after=y))
    order = lambda d: (-abs(d.after - d.before), d.question)  # noqa: E731
    # the resolution is known for the harness's own metrics (stats.resolution), not for one a user added
    step = resolution([max(1, n) for n in labels], metric) if labels and metric.partition("@")[0] in METRICS else None
    return PairedDelta(
        **test.model_dump(),
        metric=metric,
        resolution=step,
        tied=abs(test.difference) < step * (1 - 1e-9) if step else not (fixed or broken),
        fixed=sorted(fixed, key=order),
        broken=sorted(broken, key=order),
    )


def _scores(rows: dict[str, QuestionResult], metric: str) -> dict[str, float]:
    return {q: float(r.score(metric)) for q, r in rows.items()}


def report_index(report: RunReport) -> dict[tuple[str, int], dict[str, QuestionResult]]:
    """A report's per-question results by (retriever, k), then question id."""
    return _index(report)


def retriever_scores(index: dict, retriever: str, spec: MetricSpec) -> tuple[dict[str, float], dict[str, int]]:
    """One retriever's score on `spec` and label count, each by question id, from `report_index`."""
    rows = index.get((retriever, spec.k), {})
    return _scores(rows, spec.name), {q: len(r.relevant) for q, r in rows.items()}


def _labels(rows: dict[str, QuestionResult], questions: Sequence[str]) -> list[int]:
    return [len(rows[q].relevant) for q in questions]


def adjust(rows: Sequence[PairedDelta]) -> list:
    """`rows` with p_adjusted set: each p-value Holm-adjusted over all of `rows` (the checks made together)."""
    return [row.model_copy(update={"p_adjusted": p}) for row, p in zip(rows, holm([r.p_value for r in rows]), strict=True)]


def _tied_warning(rows: Sequence[PairedDelta], sides: str) -> list[str]:
    """One line when no compared difference can be told from a tie."""
    if rows and all(r.tied for r in rows):
        return [f"{sides} cannot be told apart: every difference is within its mean's resolution "
                "(the smallest step one question moves it)"]
    return []


def paired_scores(index_a: dict, index_b: dict, names: Sequence[str], specs: Sequence[MetricSpec], shared: Sequence[str]):
    """Per retriever of `names` and metric of `specs`: (retriever, spec, scores in A, in B, questions of `shared` in both)."""
    for retriever in names:
        for spec in specs:
            scores_a = _scores(index_a.get((retriever, spec.k), {}), spec.name)
            scores_b = _scores(index_b.get((retriever, spec.k), {}), spec.name)
            yield retriever, spec, scores_a, scores_b, [q for q in shared if q in scores_a and q in scores_b]


# ---------------------------------------------------------------------------------------------
# Public comparisons
# ---------------------------------------------------------------------------------------------


def compare_reports(
    a: RunReport,
    b: RunReport,
    *,
    metrics: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
) -> Comparison:
    """Compare two loaded runs (both with per-question results): see `compare_runs`."""
    index_a, index_b = _index(a), _index(b)
    questions_a, questions_b = _questions(a), _questions(b)
    shared = sorted(questions_a & questions_b)
    only_a, only_b = sorted(questions_a - questions_b), sorted(questions_b - questions_a)
    if not shared:
        raise ConfigError(f"runs {a.run} and {b.run} share no question: there is nothing to pair")
    ks = [k for k in a.ks if k in b.ks]
    if not ks:
        raise ConfigError(f"runs {a.run} (k = {a.ks}) and {b.run} (k = {b.ks}) share no cutoff k")
    specs = metric_specs(metrics, ks, names=[m for m in a.metrics if m in b.metrics])
    skipped: list[str] = []
    both = [r for r in a.retrievers if r in b.retrievers]
    if retrievers is None:
        names = both
        skipped += [f"retriever {r} is only in A" for r in a.retrievers if r not in b.retrievers]
        skipped += [f"retriever {r} is only in B" for r in b.retrievers if r not in a.retrievers]
    else:
        names = []
        for name in (n.strip() for text in retrievers for n in text.split(",") if n.strip()):
            if name not in both:
                side = "neither run" if name not in a.retrievers and name not in b.retrievers else (
                    f"run {b.run}" if name in a.retrievers else f"run {a.run}")
                raise ConfigError(f"retriever {name} cannot be compared: {side} did not evaluate it")
            if name not in names:
                names.append(name)
    skipped += [f"k = {k} is only in A" for k in a.ks if k not in b.ks]
    skipped += [f"k = {k} is only in B" for k in b.ks if k not in a.ks]
    if not names:
        raise ConfigError(f"runs {a.run} and {b.run} evaluated no retriever in common")

    rows = []
    for retriever, spec, scores_a, scores_b, paired in paired_scores(index_a, index_b, names, specs, shared):
        if not paired:
            skipped.append(f"{retriever} {spec}: no question scored in both runs")
            continue
        delta = paired_delta(scores_a, scores_b, paired, str(spec), _labels(index_b[(retriever, spec.k)], paired))
        rows.append(RetrieverDelta(retriever=retriever, **delta.model_dump()))

    rows = adjust(rows)
    warning = golden_warning(a, b, len(shared), only_a, only_b)
    small = sample_warning(len(shared))
    return Comparison(
        run_a=a.run, run_b=b.run,
        label_a=a.label, label_b=b.label,
        created_a=a.created_at, created_b=b.created_at,
        questions_a=a.questions, questions_b=b.questions,
        shared=len(shared),
        only_a=only_a,
        only_b=only_b,
        same_golden=warning is None,
        warnings=[w for w in (warning, small) if w] + _tied_warning(rows, "the runs")
        + judged_warnings(index_a, index_b, names, ks, shared) + scoring_warnings(a, b),
        changes=run_changes(a, b),
        skipped=skipped,
        rows=rows,
    )


def compare_runs(
    db: Database,
    run_a: str | RecordID,
    run_b: str | RecordID,
    *,
    metrics: Iterable[str] | None = None,
    retrievers: Iterable[str] | None = None,
) -> Comparison:
    """Run A (before) against run B (after), question by question.

    For every retriever both runs evaluated (or those named) and every metric@k both measured
    (default: all metrics at every shared k; `metrics` takes NAME@K, or a bare NAME for every
    shared k): the means, the difference B - A with its 95% bootstrap interval, the paired
    randomization p-value, and the questions fixed (score rose) and broken (score fell). Runs are
    `seval_run:x`, `x`, `latest` or `previous`. Pairs by question id over the questions both runs
    scored; if the golden sets differ, `warnings` says so loudly and `shared` gives the count.
    """
    report_a = load_for_comparison(db, run_a)
    report_b = load_for_comparison(db, run_b)
    comparison = compare_reports(report_a, report_b, metrics=metrics, retrievers=retrievers)
    comparison.label_changes = label_changes(db, report_a, report_b)
    comparison.notes = parameter_notes(db, report_a, report_b, comparison.rows)
    comparison.by_source = source_deltas(report_a, report_b, question_sources(db, report_b.run, max(report_b.ks)),
                                         [(r.retriever, r.metric) for r in comparison.rows])
    comparison.overlap, comparison.misses = for_runs(db, report_a, report_b, comparison.rows, retrievers)
    comparison.culprits = culprits(db, report_a, report_b, comparison.rows)
    compared = list(dict.fromkeys([r.retriever for r in comparison.rows] + [o.retriever for o in comparison.overlap]))
    comparison.notes += rebuilt_index_notes(db, report_a, report_b, compared, comparison.overlap, comparison.changes)
    return comparison


def compare_retrievers(
    db: Database,
    run: str | RecordID,
    retriever_a: str,
    retriever_b: str,
    metric: str | Iterable[str] | None = None,
) -> RetrieverComparison:
    """Retriever A against retriever B within one run, paired by question (B - A; fixed = B scores higher).

    `metric` is one NAME@K, several, or None (the default, as `surreal-eval compare`) for every metric
    at every k of the run.
    """
    report = load_for_comparison(db, run)
    index = _index(report)
    for name in (retriever_a, retriever_b):
        if name not in report.retrievers:
            raise ConfigError(f"run {report.run} did not evaluate retriever {name}: it has {', '.join(report.retrievers)}")
    if retriever_a == retriever_b:
        raise ConfigError(f"compare two different retrievers, not {retriever_a} with itself")
    specs = metric_specs(
        [metric] if isinstance(metric, str) else metric, report.ks, where=f"run {report.run}", names=report.metrics
    )
    rows = []
    for spec in specs:
        a = _scores(index.get((retriever_a, spec.k), {}), spec.name)
        b = _scores(index.get((retriever_b, spec.k), {}), spec.name)
        paired = sorted(set(a) & set(b))
        if paired:
            rows.append(paired_delta(a, b, paired, str(spec), _labels(index[(retriever_b, spec.k)], paired)))
    rows = adjust(rows)
    small = sample_warning(len(_questions(report)))
    overlap, misses = for_retrievers(db, report, retriever_a, retriever_b, rows)
    return RetrieverComparison(
        run=report.run,
        label=report.label,
        retriever_a=retriever_a,
        retriever_b=retriever_b,
        warnings=([small] if small else []) + _tied_warning(rows, "the retrievers"),
        rows=rows,
        overlap=overlap,
        misses=misses,
    )
