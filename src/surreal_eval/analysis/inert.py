"""Parameters two runs differ in that cannot have changed the metric compared.

    parameter_notes(db, a, b, rows)  one line per such parameter (rrf_k at a depth equal to k, floors
                                     at or below every BM25 candidate score) -> [str]

The rules are those `tune` applies to a sweep (runs.tune_verdict): an RRF fusion of two lists cut at
depth = k keeps the same top-k set for every constant of at least depth - 1, so recall, hit_rate and
precision at that k cannot move; a floor at or below every BM25 candidate score lets every candidate
through, as no floor does, so the floored hybrid ranks exactly as without it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import RunReport
from ..runs.tune_verdict import rrf_inert
from ..runs.record import resolve_run
from ..store.connection import Database
from ..store.registry import registry

__all__ = ["parameter_notes"]


def parameter_notes(db: Database, a: RunReport, b: RunReport, rows: Sequence) -> list[str]:
    """One line for each parameter A and B differ in that cannot change a compared row (`rows`: RetrieverDelta)."""
    pa, pb = a.params or {}, b.params or {}
    entries = {r.name: r for r in registry(db)}
    compared = list(dict.fromkeys(r.retriever for r in rows))
    notes = []
    if pa.get("rrf_k") != pb.get("rrf_k") and pa.get("depth") == pb.get("depth") and pa.get("depth"):
        depth = pa["depth"]
        fused = [n for n in compared if n in entries and entries[n].fusion in ("rrf", "rrf_floor")
                 and len(entries[n].lists) == 2 and "rrf_k" not in entries[n].params]
        blind = [r.metric for r in rows if r.retriever in fused
                 and rrf_inert([pa["rrf_k"], pb["rrf_k"]], depth, int(r.metric.partition("@")[2]), r.metric.partition("@")[0])]
        if blind:
            notes.append(f"rrf_k {pa['rrf_k']} → {pb['rrf_k']} cannot change {', '.join(dict.fromkeys(blind))} of "
                         f"{', '.join(fused)}: the fused list is cut at depth {depth} = k and both constants are at least "
                         f"depth - 1 = {depth - 1}, so the top {depth} is the same set; only the order within it moves "
                         "(which mrr, ndcg and map see)")
    if pa.get("floor") != pb.get("floor") and None not in (pa.get("floor"), pb.get("floor")):
        floored = [n for n in compared if n in entries and entries[n].fusion == "rrf_floor" and "floor" not in entries[n].params]
        lowest = [_lowest(db, run) for run in (a, b)]
        if floored and all(f <= 0 or (low is not None and f <= low) for f, low in zip((pa["floor"], pb["floor"]), lowest)):
            seen = [f"{low:.4g}" for low in lowest if low is not None]
            notes.append(f"floor {pa['floor']} → {pb['floor']} cannot change {', '.join(floored)}: each run's floor is at or "
                         f"below every BM25 candidate score it saw{' (lowest ' + ', '.join(seen) + ')' if seen else ''}, so "
                         "each fused every candidate, as no floor does")
    return notes


def _lowest(db: Database, report: RunReport) -> float | None:
    return db.value("RETURN fn::seval::lowest_bm25($run)", {"run": resolve_run(db, report.run)})
