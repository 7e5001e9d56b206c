"""A gate's result as JUnit XML, for CI systems that show test reports."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from ..analysis.gate import GateCheck, GateResult
from ..errors import InputError
from ..stats import p_phrase
from .source_tables import delta_cell

__all__ = ["failure_message", "write_junit"]


def _short(question: str) -> str:
    return question.split(":", 1)[-1]


def failure_message(check: GateCheck, alpha: float = 0.05) -> str:
    """One line for a failed check: the numbers and the broken question ids."""
    broken = ", ".join(_short(d.question) for d in check.broken)
    return (
        f"{check.retriever} {check.metric} fell from {check.baseline:.4f} to {check.candidate:.4f} "
        f"(drop {check.drop:.4f}, 95% CI of the difference [{check.low:.4f}, {check.high:.4f}], "
        f"{p_phrase(check.p_value, alpha)}, Holm-adjusted {p_phrase(check.p_adjusted, alpha)}, n = {check.n}); "
        f"broken: {broken or 'none'}"
    )


def write_junit(result: GateResult, path: str | Path) -> Path:
    """Write the gate as JUnit XML: one testcase per retriever x metric (classname `gate.RETRIEVER`,
    name the metric), a <failure> with the numbers and the broken question ids, and a skipped
    testcase per retriever the baseline lacks. Returns the path."""
    path = Path(path)
    failures = len(result.failures)
    skipped = len(result.skipped)
    tests = len(result.checks) + skipped
    counts = {"tests": str(tests), "failures": str(failures), "errors": "0", "skipped": str(skipped)}
    root = ET.Element("testsuites", {"name": "surreal-eval gate", **counts})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": f"gate {result.candidate} against {result.baseline} on {result.decided_on}",
            **counts,
            "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("baseline", result.baseline),
        ("baseline_label", result.baseline_label or ""),
        ("candidate", result.candidate),
        ("candidate_label", result.candidate_label or ""),
        ("max_drop", f"{result.max_drop:g}"),
        ("alpha", f"{result.alpha:g}"),
        ("decided_on", "per-check p" if result.per_check else "Holm-adjusted p"),
        ("questions", result.decided_on),
        *((f"by_source.{d.retriever}.{d.metric}.{d.source}", delta_cell(d)) for d in result.by_source),
        *((f"warning_{i}", w) for i, w in enumerate(result.warnings, start=1)),
        *((f"changed.{c.field}", f"{c.a!r} -> {c.b!r}") for c in result.changes),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": str(value)})
    for check in result.checks:
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{check.retriever}", "name": check.metric, "time": "0"})
        if not check.passed:
            failure = ET.SubElement(case, "failure", {"message": failure_message(check, result.alpha), "type": "RetrievalRegression"})
            failure.text = "\n".join(
                [check.reason, "broken questions (baseline -> candidate):"]
                + [f"  {d.question}: {d.before:.4f} -> {d.after:.4f}" for d in check.broken]
            )
        out = ET.SubElement(case, "system-out")
        out.text = check.reason + (
            "\nfixed: " + ", ".join(_short(d.question) for d in check.fixed) if check.fixed else ""
        )
    for reason in result.skipped:
        retriever = reason.split()[1]
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{retriever}", "name": ",".join(result.metrics), "time": "0"})
        ET.SubElement(case, "skipped", {"message": reason})
    tree = ET.ElementTree(root)
    ET.indent(tree)
    try:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError as error:
        raise InputError(f"cannot write the JUnit file: {error.strerror}", source=str(path)) from None
    return path
