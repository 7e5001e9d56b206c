"""What differs between two recorded runs, and the differences that make their scores incomparable.

    run_changes(a, b)          every recorded property that differs -> [Change]
    golden_warning(a, b, ...)  the loud warning when the runs scored different golden sets or questions
    scoring_warnings(a, b)     one line per scoring rule that differs (relevance level, identical ids dropped)
"""

from __future__ import annotations

from typing import Any


from ..model_base import Model
from ..golden.labels import LabelChange
from ..models import RunReport
from ..store.connection import Database, record_str

__all__ = ["Change", "SCORING_DEFAULTS", "golden_warning", "label_changes", "run_changes", "scoring_warnings"]

class Change(Model):
    """One recorded property that differs between run A and run B (`params.floor`, `corpus.fingerprint`, ...)."""

    field: str
    a: Any
    b: Any




#: The run parameters that change what a score means, with the value a run that does not record one used.
SCORING_DEFAULTS = {"relevance_level": 1, "ignore_identical_ids": False, "judgments": "human"}


_PROVENANCE = ("harness", "git_commit", "trigger", "tuning")

#: Recorded, but said by a note of its own where it matters: when the corpus's HNSW graph was built
#: (analysis.rebuilt: only for a retriever that searches it; a BM25 run is the same on either graph).
_NOTED = {"corpus": {"vector_built"}}


def run_changes(a: RunReport, b: RunReport) -> list[Change]:
    """Every recorded property that differs: params.* (params.chunking.size, ... on a chunk table), corpus.* (but
    vector_built: analysis.rebuilt), golden.*, retrievers, ks, harness, git commit, trigger."""
    changes: list[Change] = []

    def diff(prefix: str, x: dict | None, y: dict | None) -> None:
        x, y = x or {}, y or {}
        for key in sorted((set(x) | set(y)) - _NOTED.get(prefix, set())):
            if x.get(key) != y.get(key):
                changes.append(Change(field=f"{prefix}.{key}", a=x.get(key), b=y.get(key)))

    diff("params", _flat({**SCORING_DEFAULTS, **(a.params or {})}), _flat({**SCORING_DEFAULTS, **(b.params or {})}))
    diff("corpus", a.corpus, b.corpus)
    diff("golden", a.golden, b.golden)
    for name in ("retrievers", "ks"):
        if getattr(a, name) != getattr(b, name):
            changes.append(Change(field=name, a=getattr(a, name), b=getattr(b, name)))
    for name in _PROVENANCE:
        if getattr(a, name, None) != getattr(b, name, None):
            changes.append(Change(field=name, a=getattr(a, name, None), b=getattr(b, name, None)))
    return changes


def _flat(params: dict) -> dict:
    """`params` with the chunking of a chunk table ({source, unit, size, overlap}) as chunking.source, ...: a change names its part."""
    chunking = params.get("chunking")
    if not isinstance(chunking, dict):
        return params
    return {**{k: v for k, v in params.items() if k != "chunking"}, **{f"chunking.{k}": v for k, v in chunking.items()}}


def golden_warning(a: RunReport, b: RunReport, shared: int, only_a: list[str], only_b: list[str]) -> str | None:
    fa, fb = (a.golden or {}).get("fingerprint"), (b.golden or {}).get("fingerprint")
    same_questions = not only_a and not only_b and a.questions == b.questions
    if fa and fb and fa == fb and same_questions:
        return None

    def side(name: str, report: RunReport, fingerprint: str | None) -> str:
        described = f"fingerprint {fingerprint[:12]}" if fingerprint else "no golden fingerprint recorded"
        return f"{name} {report.run}: {report.questions} questions, {described}"

    if fa and fb and fa != fb:
        what = "the runs measured DIFFERENT GOLDEN SETS"
        ja, jb = ((r.params or {}).get("judgments", "human") for r in (a, b))
        if ja != jb:  # a model's judgments (golden judge) read by one run only
            what += f" (A scored on {ja} judgments, B on {jb}: a score may have moved because the model's labels did)"
        elif same_questions:
            what += " (the same question ids, but texts, labels or grades changed: a score may have moved because its labels did)"
    elif not (fa and fb) and same_questions:
        what = "cannot tell whether the runs measured the same golden set (a run records no fingerprint)"
    else:
        what = "the runs scored DIFFERENT QUESTIONS"
    extra = []
    if only_a:
        extra.append(f"{len(only_a)} only in A")
    if only_b:
        extra.append(f"{len(only_b)} only in B")
    return (
        f"WARNING: {what} — {side('A', a, fa)}; {side('B', b, fb)}. "
        f"Only the {shared} questions scored in both are paired{' (' + ', '.join(extra) + ')' if extra else ''}: "
        "every mean and difference below is over those, not over either run's own questions."
    )


def label_changes(db: Database, a: RunReport, b: RunReport) -> list[LabelChange]:
    """The changes to run B's golden set after run A was made and up to run B (none when A is not the earlier
    of the two, or the runs measured different golden sets): why B's golden-set fingerprint differs from A's."""
    golden = lambda r: (r.params or {}).get("golden") or "seval_question"  # noqa: E731 - a run of 0.1 had one golden set
    if golden(a) != golden(b) or not a.created_at or not b.created_at or a.created_at >= b.created_at:
        return []
    rows = db.value("RETURN fn::seval::golden_changes($name, $since, $until)",
                    {"name": golden(b), "since": a.created_at, "until": b.created_at})
    return [LabelChange(**{**row, "question": record_str(row["question"]), "doc": record_str(row["doc"]) if row.get("doc") else None})
            for row in rows]


def scoring_warnings(a: RunReport, b: RunReport) -> list[str]:
    """One WARNING per parameter of SCORING_DEFAULTS whose value differs between the runs (absent = its default)."""
    warnings = []
    for name, default in SCORING_DEFAULTS.items():
        x, y = (a.params or {}).get(name, default), (b.params or {}).get(name, default)
        if x != y:
            warnings.append(f"WARNING: the runs scored with different {name} (A {x!r}, B {y!r}): "
                            "the same ranking scores differently under each, so a difference may come from the rule, not the retriever")
    return warnings
