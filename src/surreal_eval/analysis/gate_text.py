"""A gate's verdict as a short paragraph of text (GateResult.summary, and the message of
surreal_eval.testing.assert_no_regression): what was gated, and for every failed check the means, the
interval of the difference, p raw and Holm-adjusted and the first broken questions."""

from __future__ import annotations

from typing import Any

from ..stats import format_p

__all__ = ["BROKEN_SHOWN", "WARNINGS_SHOWN", "check_text", "gate_summary", "gate_repr"]

#: Broken questions named in a failed check's paragraph; the rest are counted ("and N more").
BROKEN_SHOWN = 5
#: Warnings quoted in the summary; the rest are counted.
WARNINGS_SHOWN = 1


def _short(question: str) -> str:
    return question.split(":", 1)[-1]


def _broken(check: Any) -> str:
    shown = [f"{_short(d.question)} ({d.before:.2f} -> {d.after:.2f})" for d in check.broken[:BROKEN_SHOWN]]
    more = len(check.broken) - len(shown)
    if not shown:
        return "no question broken"
    return "broken: " + ", ".join(shown) + (f" and {more} more" if more else "")


def check_text(check: Any, alpha: float) -> str:
    """One check: `retriever metric: baseline -> candidate over n questions, difference with its 95%
    interval, p raw and Holm-adjusted`, then its verdict (and for a failed check its broken questions)."""
    numbers = (
        f"{check.retriever} {check.metric}: {check.baseline:.4f} (baseline) -> {check.candidate:.4f} (candidate) over "
        f"{check.n} questions, difference {check.candidate - check.baseline:+.4f} (95% interval "
        f"{check.low:+.4f} to {check.high:+.4f}), p = {format_p(check.p_value, alpha)} raw, "
        f"{format_p(check.p_adjusted, alpha)} Holm-adjusted"
    )
    if check.passed:
        return f"{numbers}. Passed: {check.reason}."
    return f"{numbers}. FAILED: {check.reason}; {_broken(check)}."


def gate_summary(result: Any) -> str:
    """The verdict in one line, a paragraph per failed check (or a line per check when all passed),
    then the skipped retrievers and the warnings."""
    failed = [c for c in result.checks if not c.passed]
    decided = "each check's raw p" if result.per_check else "Holm-adjusted p"
    head = (
        f"gate {'passed' if result.passed else 'FAILED'}: candidate {result.candidate}"
        f"{_label(result.candidate_label)} against baseline {result.baseline}{_label(result.baseline_label)}, "
        f"{len(failed)} of {len(result.checks)} check{'s' if len(result.checks) != 1 else ''} failed "
        f"(a check fails when its mean fell more than {result.max_drop:g} and {decided} < {result.alpha:g})"
        + (f", decided on {result.decided_on}." if result.source is not None or len(result.held) > 1 else ".")
    )
    lines = [head, *(check_text(c, result.alpha) for c in (failed or result.checks))]
    if failed and len(failed) < len(result.checks):
        lines.append(f"The other {len(result.checks) - len(failed)} checks passed.")
    lines += [f"Skipped: {s}." for s in result.skipped] + [f"Warning: {w}" for w in result.warnings[:WARNINGS_SHOWN]]
    if len(result.warnings) > WARNINGS_SHOWN:
        lines.append(f"and {len(result.warnings) - WARNINGS_SHOWN} more warnings (GateResult.warnings).")
    return "\n".join(lines)


def gate_repr(result: Any) -> str:
    """A one-line repr: the verdict and the runs, not every question of every check."""
    failed = sum(not c.passed for c in result.checks)
    return (f"GateResult(passed={result.passed}, candidate={result.candidate!r}, baseline={result.baseline!r}, "
            f"metrics={result.metrics!r}, checks={len(result.checks)}, failed={failed})")


def _label(label: str | None) -> str:
    return f" ({label!r})" if label else ""
