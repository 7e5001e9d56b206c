"""Gate a run against a baseline: fail on a drop that is both larger than allowed and significant.

Semantics (what `surreal-eval gate` does):

- The CANDIDATE is the run under test: `candidate` if given, else the latest finished run.
- The BASELINE is what it must not be worse than: a run id, a tag, or `previous` (the run before the
  latest; `latest` is the newest run, as everywhere; 0.1's `latest` here, the run before the candidate,
  still reads, with a DeprecationWarning).
  So with neither given, `gate()` compares the latest run with the one before it: evaluate, then
  gate.
- For every retriever of the candidate (or those named) and every metric@k asked for, the drop
  is `baseline mean - candidate mean` over the questions both runs scored (paired by question).
  A check FAILS when `drop > max_drop` AND the two-sided paired randomization p-value of the
  difference, Holm-adjusted over all the gate's checks (analysis.multiple), is `< alpha`; with
  `per_check` the raw p-value of each check decides instead (each check alone keeps its false-alarm
  rate at alpha, the gate as a whole does not). A large drop that is not significant passes, with the reason (and how
  many questions would have to differ for it to be significant); a significant drop within
  `max_drop` passes too. The gate fails when any check fails.
- Runs over different golden sets (fingerprint or question set) are refused with NotComparable
  unless `allow_different_golden`, in which case the shared questions are paired and the result
  carries the warning.
- A retriever of the candidate that the baseline did not evaluate is skipped (listed in
  `skipped`, a skipped testcase in JUnit); one named explicitly but missing is a ConfigError.
- Question sources (analysis.sources; a question whose source is not set counts as real): with
  `source` (such as "real") every check is made over the questions of that source only, and a
  candidate with no such question is a ConfigError; without it, every question decides. Either
  way, when the candidate's questions hold several sources, `by_source` gives B - A per source
  (real first) beside the checks, and `held` the number of questions of each source.
"""

from __future__ import annotations

import warnings

import math
from collections import Counter
from collections.abc import Iterable

from surrealdb import RecordID

from ..model_base import Model
from ..runs.record import load_for_comparison, resolve_run, run_before
from .compare import Change, QuestionDelta, compare_reports
from .sources import REFERENCE, SOURCE_ORDER, SourceDelta, question_sources, source_deltas
from ..store.connection import Database, record_str, to_record
from ..errors import ConfigError, NotComparable
from ..grammar import METRICS, metric_suggestion, parse_metric
from ..stats import p_phrase

__all__ = ["GateCheck", "GateResult", "gate"]


class GateCheck(Model):
    """One retriever and metric@k: baseline and candidate means over the `n` shared questions,
    the drop (baseline - candidate; negative when the candidate is better) with the bootstrap
    interval of the difference candidate - baseline, the p-value, the verdict and why."""

    retriever: str
    metric: str
    baseline: float
    candidate: float
    drop: float
    low: float
    high: float
    p_value: float
    #: p_value Holm-adjusted over every check of the gate
    p_adjusted: float
    n: int
    passed: bool
    reason: str
    broken: list[QuestionDelta]
    fixed: list[QuestionDelta]


class GateResult(Model):
    """The verdict: passed when every check passed."""

    baseline: str
    candidate: str
    baseline_label: str | None
    candidate_label: str | None
    metrics: list[str]
    max_drop: float
    alpha: float
    #: True: each check's raw p-value decided; False (the default): the Holm-adjusted ones did
    per_check: bool = False
    passed: bool
    checks: list[GateCheck]
    skipped: list[str]
    warnings: list[str]
    changes: list[Change]
    #: the source of the questions the checks were made over (None: every question)
    source: str | None = None
    #: the candidate's labelled questions per source, real first
    held: dict[str, int] = {}
    #: when the questions hold several sources: per source, baseline -> candidate of every check (analysis.sources)
    by_source: list[SourceDelta] = []

    @property
    def failures(self) -> list[GateCheck]:
        return [c for c in self.checks if not c.passed]

    @property
    def decided_on(self) -> str:
        """`the 5 real questions only`, or `all 8 questions (real 5, synthetic 3)`."""
        if self.source is not None:
            count = self.held.get(self.source, 0)
            return f"the {count} {self.source} question{'s' if count != 1 else ''} only"
        mix = f" ({', '.join(f'{s} {n}' for s, n in self.held.items())})" if len(self.held) > 1 else ""
        return f"all {sum(self.held.values())} questions{mix}"

    @property
    def summary(self) -> str:
        """The verdict as text: a line, then per failed check the means, the interval of the
        difference, p raw and Holm-adjusted and the broken questions (analysis/gate_text.py)."""
        from .gate_text import gate_summary

        return gate_summary(self)

    def __str__(self) -> str:
        return self.summary

    def __repr__(self) -> str:
        from .gate_text import gate_repr

        return gate_repr(self)


def _min_differing(alpha: float) -> int:
    """The fewest differing questions whose most extreme sign pattern has p = 2 / 2**m < alpha."""
    return math.floor(math.log2(2 / alpha)) + 1


def _verdict(drop: float, p_value: float, differing: int, *, metric: str, max_drop: float, alpha: float,
             adjusted: int | None = None) -> tuple[bool, str]:
    """Pass or fail, and why; `adjusted` is the number of checks p_value was Holm-adjusted over (None: raw)."""
    what = f"Holm-adjusted over {adjusted} checks, " if adjusted else ""
    if drop <= max_drop + 1e-12:
        if drop > 0:
            return True, f"{metric} fell {drop:.4f}, within the allowed {max_drop:g}"
        return True, f"{metric} did not fall ({-drop:+.4f})" if drop < 0 else f"{metric} unchanged"
    if p_value >= alpha:
        need = _min_differing(alpha)
        hint = (
            f"; with {differing} question{'s' if differing != 1 else ''} differing no drop can reach p < {alpha:g} "
            f"(at least {need} must differ)"
            if differing < need
            else ""
        )
        return True, (
            f"{metric} fell {drop:.4f} (more than the allowed {max_drop:g}) but the drop is not significant: "
            f"{what}{p_phrase(p_value, alpha)} >= {alpha:g}{hint}"
        )
    return False, f"{metric} fell {drop:.4f} (more than the allowed {max_drop:g}) and the drop is significant: {what}{p_phrase(p_value, alpha)} < {alpha:g}"


def _metric_list(metric: str | Iterable[str], known: list[str] | None) -> list[str]:
    """The NAME@K of `metric`, each NAME one of `known` (None: any name, only the form is checked)."""
    names = [n.strip() for text in ([metric] if isinstance(metric, str) else metric) for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError("no metric to gate on: pass NAME@K such as recall@5")
    for name in names:
        if "@" not in name:
            meant = metric_suggestion(name, known)
            such = (f"did you mean {meant}?" if meant
                    else f"such as recall@5, with NAME one of {', '.join(known or METRICS)}")
            raise ConfigError(f"gate on a metric at a cutoff, NAME@K, not {name!r}: {such}")
    return [str(parse_metric(name, [name.partition("@")[0].strip()] if known is None else known)) for name in names]


def gate(
    db: Database,
    *,
    baseline: str | RecordID = "previous",
    candidate: str | RecordID | None = None,
    metric: str | Iterable[str] = "recall@5",
    retriever: str | Iterable[str] | None = None,
    max_drop: float = 0.02,
    alpha: float = 0.05,
    allow_different_golden: bool = False,
    per_check: bool = False,
    source: str | None = None,
) -> GateResult:
    """Does the candidate run hold up against the baseline? See the module docstring for the rules."""
    if source is not None and source not in SOURCE_ORDER:
        raise ConfigError(f"--source must be one of {', '.join(SOURCE_ORDER)}, got {source!r}")
    if not (isinstance(max_drop, (int, float)) and max_drop >= 0):
        raise ConfigError(f"--max-drop must be a number of at least 0, got {max_drop!r}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha <= 1):
        raise ConfigError(f"--alpha must be between 0 (exclusive) and 1, got {alpha!r}")
    _metric_list(metric, None)  # the form first, before any run is read; the names once the runs say theirs
    candidate_report = load_for_comparison(db, "latest" if candidate is None else candidate)
    candidate_id = to_record(candidate_report.run, "seval_run")
    _metric_list(metric, candidate_report.metrics)  # the names, before a missing baseline could hide a mistyped one
    if isinstance(baseline, str) and baseline.strip() == "latest" and candidate in (None, "latest"):
        # 0.1's spelling: gate's `latest` meant the run before the candidate (now `previous`, as everywhere)
        warnings.warn("gate(baseline='latest') meant the run before the candidate: write baseline='previous' (the old spelling goes in "
                      "0.3.0)", DeprecationWarning, stacklevel=2)
        baseline_id = run_before(db, candidate_id, candidate_report.created_at)
    else:
        baseline_id = resolve_run(db, baseline)
    if record_str(baseline_id) == candidate_report.run:
        raise ConfigError(f"the baseline and the candidate are the same run ({candidate_report.run})")
    baseline_report = load_for_comparison(db, baseline_id)
    metrics = _metric_list(metric, [m for m in candidate_report.metrics if m in baseline_report.metrics])

    names = [retriever] if isinstance(retriever, str) else list(retriever) if retriever is not None else None
    skipped: list[str] = []
    if names is None:
        names = [r for r in candidate_report.retrievers if r in baseline_report.retrievers]
        skipped = [r for r in candidate_report.retrievers if r not in baseline_report.retrievers]
    for spec in (parse_metric(m, candidate_report.metrics) for m in metrics):
        for report, role in ((baseline_report, "baseline"), (candidate_report, "candidate")):
            if spec.k not in report.ks:
                raise ConfigError(
                    f"cannot gate on {spec}: the {role} run {report.run} measured k = {', '.join(map(str, report.ks))}"
                )
    sources = question_sources(db, candidate_report.run, max(candidate_report.ks))
    counts = Counter(sources.values())
    held = {s: counts[s] for s in sorted(counts, key=lambda s: (SOURCE_ORDER.index(s) if s in SOURCE_ORDER else len(SOURCE_ORDER), s))}
    everyone = (baseline_report, candidate_report)
    if source is not None:
        if source not in held:
            raise ConfigError(
                f"no {source} question to gate on: run {candidate_report.run} scored "
                f"{', '.join(f'{n} {s}' for s, n in held.items()) or 'no labelled question'}"
                f"{f' (a question whose source is not set counts as {REFERENCE})' if source == REFERENCE else ''}; "
                "gate without --source to decide on every question")
        mine = {q for q, s in sources.items() if s == source}
        baseline_report, candidate_report = (
            r.model_copy(update={"per_question": [q for q in r.per_question or [] if q.question in mine]}) for r in everyone)
    comparison = compare_reports(baseline_report, candidate_report, metrics=metrics, retrievers=names)
    if not comparison.same_golden and not allow_different_golden:
        raise NotComparable(
            f"refusing to gate {candidate_report.run} ({candidate_report.questions} questions) against "
            f"{baseline_report.run} ({baseline_report.questions} questions): they measured different golden sets. "
            "Gate against a run of the same golden set, or pass --allow-different-golden to pair the "
            f"{comparison.shared} shared questions"
        )

    checks = []
    for row in comparison.rows:
        drop = 0.0 - row.difference  # 0.0 - x: an unchanged mean prints as 0, not -0
        passed, reason = _verdict(
            drop, row.p_value if per_check else row.p_adjusted, len(row.fixed) + len(row.broken), metric=row.metric,
            max_drop=max_drop, alpha=alpha, adjusted=None if per_check or len(comparison.rows) < 2 else len(comparison.rows),
        )
        same = {name: getattr(row, name)
                for name in ("retriever", "metric", "low", "high", "p_value", "p_adjusted", "n", "broken", "fixed")}
        checks.append(GateCheck(**same, baseline=row.mean_a, candidate=row.mean_b, drop=drop, passed=passed, reason=reason))
    return GateResult(
        baseline=baseline_report.run,
        candidate=candidate_report.run,
        baseline_label=baseline_report.label,
        candidate_label=candidate_report.label,
        metrics=metrics,
        max_drop=max_drop,
        alpha=alpha,
        per_check=per_check,
        passed=all(c.passed for c in checks),
        checks=checks,
        skipped=[f"retriever {r} is not in the baseline {baseline_report.run}" for r in skipped],
        warnings=comparison.warnings + [s for s in comparison.skipped if not s.startswith(("retriever", "k ="))],
        changes=comparison.changes,
        source=source,
        held=held,
        by_source=source_deltas(*everyone, sources, [(c.retriever, c.metric) for c in checks]),
    )
