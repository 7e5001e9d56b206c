"""The watched ingest's cost: what one ingest pays, and the evaluation `surreal-eval watch` makes after it.

Used by cost_floor.py. On a database whose corpus and golden set are loaded, `watch` is set to the
CLI's evaluation (k 1,3,5,10, the registry's default retrievers, the default depth), and one ingest
is recorded as a load records it (load.bulk.record_ingest: one row, in its own transaction) and then
evaluated as an embedded store evaluates it (runs.watch.drain_ingests); each is timed, and so is the
same evaluation run directly. (benchmarks/watch_scale.py measures a real ingest of new documents.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from surreal_eval import Database, evaluate
from surreal_eval.load.bulk import record_ingest
from surreal_eval.runs.watch import clear_watch, drain_ingests, set_watch

__all__ = ["WatchCost", "measure_watch", "format_watch"]

KS = [1, 3, 5, 10]


@dataclass
class WatchCost:
    dataset: str
    documents: int
    questions: int
    load_seconds: float
    ingest_seconds: float
    after_seconds: float
    evaluate_seconds: float


def measure_watch(db: Database, dataset: str, documents: int, load_seconds: float) -> WatchCost:
    """Time one watched ingest of `documents` into article, and the same evaluation called directly."""
    questions = db.value("RETURN count(SELECT id FROM seval_question)")
    set_watch(db, ks=KS)
    try:
        started = time.perf_counter()
        record_ingest(db, corpus="seval_article", documents=documents, source="cost_floor watch")
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        report = drain_ingests(db)
        after = time.perf_counter() - started
    finally:
        clear_watch(db)
    if len(report.evaluated) != 1 or report.failed:
        raise RuntimeError(f"the watched ingest was not evaluated: {report}")
    started = time.perf_counter()
    evaluate(db, ks=KS, label="cost_floor watch, direct")
    return WatchCost(dataset, documents, questions, load_seconds, ingest, after, time.perf_counter() - started)


def format_watch(rows: list[WatchCost]) -> str:
    lines = ["### The watched ingest's cost (watch --k 1,3,5,10, default retrievers and depth)", "",
             "| set | documents | questions | load, unwatched s | the ingest's own write s | the evaluation after it s |"
             " same evaluation called directly s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.dataset} | {r.documents:,} | {r.questions:,} | {r.load_seconds:.1f} | {r.ingest_seconds:.3f} |"
                     f" {r.after_seconds:.1f} | {r.evaluate_seconds:.1f} |")
    return "\n".join(lines)
