"""Run an evaluation inside the database and read a run back."""

from __future__ import annotations

import logging
import os
import subprocess
from typing import Any, Callable

import numpy as np
from surrealdb import RecordID

from .connection import Database, record_str, to_record
from .errors import NotFound
from .metrics import METRICS, parse_retrievers
from .models import Bounds, MetricRow, QuestionResult, RunReport, SweepRow
from .stats import confidence_intervals, resolution, sample_warning

__all__ = ["CONCURRENCY", "BATCH", "evaluate", "load_run", "run_order"]

log = logging.getLogger(__name__)

#: Evaluation statements kept in flight at once (the embedded engine runs them on separate cores).
CONCURRENCY = max(1, min(os.cpu_count() or 2, 8))
#: How old an unfinished run must be to be discarded as dead, on an embedded store and on a server.
STALE_EMBEDDED, STALE_SERVER = "0s", "1d"
#: Questions per evaluation statement: small enough to spread over the cores, large enough to amortise.
BATCH = 4
#: Statements between two chances for an embedded store to flush (Database.relieve).
GROUP = 256

_RUN_QUERY = "SELECT * FROM ONLY $run WHERE finished_at != NONE"
_SCORES_QUERY = f"""
SELECT VALUE [{", ".join(METRICS)}]
FROM eval_result WHERE run = $run AND retriever = $retriever AND k = $k ORDER BY question
"""
_LABEL_COUNTS_QUERY = """
SELECT VALUE array::len(relevant) FROM eval_ranking WHERE run = $run AND retriever = $retriever
"""
_PER_QUESTION_QUERY = """
SELECT question, retriever, floor, k, recall, hit_rate, precision, mrr, ndcg, map, r_precision,
       array::slice(ranking.ranked, 0, k) AS ranked, ranking.relevant AS relevant
FROM eval_result WHERE run = $run AND retriever != 'floor_sweep'
"""


def run_order(retrievers: list[str]):
    """Sort key for rows with `retriever` and `k`: report order of retrievers, then k."""
    position = {name: i for i, name in enumerate(retrievers)}
    return lambda row: (position.get(row["retriever"], len(position)), row.get("floor") or 0, row["k"])


def evaluate(
    db: Database,
    *,
    ks: list[int],
    retrievers: list[str] | None = None,
    label: str | None = None,
    params: dict[str, Any] | None = None,
    per_question: bool = False,
    intervals: bool = True,
    trigger: str = "library",
    concurrency: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RunReport:
    """Evaluate the golden set in the database (fn::run_evaluation), record the run, return its report.

    `params` may set corpus, depth, rrf_k, floor, floors, weights, norm and split; the database
    fills the defaults. The questions are scored in batches with `concurrency` statements in flight
    (default CONCURRENCY); the run becomes visible in history only when every question is scored,
    and a failure discards it. `progress(done, total)` is called as batches of questions finish.
    """
    names = parse_retrievers(retrievers)
    given = {k: v for k, v in (params or {}).items() if v is not None}
    given.update(trigger=trigger, git_commit=git_commit())
    # runs left unfinished by a killed process or a dropped connection are invisible; clear them:
    # one process holds an embedded store, so any unfinished run there is dead; on a server, other
    # evaluators may be running, so only runs unfinished for a day are taken as dead
    age = STALE_EMBEDDED if db.settings.is_embedded else STALE_SERVER
    db.value("RETURN fn::discard_stale_runs(<duration> $age)", {"age": age})
    started = db.value(
        "RETURN fn::start_run($ks, $names, $given, $label)",
        {"ks": ks, "names": names, "given": given, "label": label},
    )
    run, questions = started["run"], started["questions"]
    calls = [("RETURN fn::evaluate_questions($run, $ids)", {"run": run, "ids": questions[i : i + BATCH]})
             for i in range(0, len(questions), BATCH)]
    try:
        for start in range(0, len(calls), GROUP):  # an embedded store may flush between groups
            db.query_many(
                calls[start : start + GROUP],
                concurrency=concurrency or CONCURRENCY,
                progress=(lambda n, s=start: progress(min((s + n) * BATCH, len(questions)), len(questions)))
                if progress else None,
            )
            db.relieve()
        db.value("RETURN fn::finish_run($run)", {"run": run})
    except BaseException:
        try:  # leave nothing of a failed run behind (a killed process leaves it unfinished: invisible)
            db.value("RETURN fn::discard_run($run)", {"run": run})
        except Exception:  # the connection itself may be what failed
            log.debug("could not discard %s", run, exc_info=True)
        raise
    return load_run(db, run, per_question=per_question, intervals=intervals)


def git_commit() -> str | None:
    """The commit checked out in the working directory, if it is a git repository (recorded with a run)."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def load_run(
    db: Database, run: str | RecordID, *, per_question: bool = False, intervals: bool = True
) -> RunReport:
    """The report of a finished run, by id (`eval_run:xyz` or `xyz`).

    With `intervals` (the default) every mean carries its 95% bootstrap interval over questions
    and its resolution, computed from the run's per-question results.
    """
    run_id = to_record(run, "eval_run")
    row = db.value(_RUN_QUERY, {"run": run_id})
    if not row:
        raise NotFound(f"no finished run {record_str(run_id)}: `surreal-eval history` lists the runs")
    order = run_order(row["retrievers"])
    results = [MetricRow(**m) for m in sorted(row["means"], key=order)]
    if intervals:
        _add_uncertainty(db, run_id, results, row["retrievers"][0])
    report = RunReport(
        run=record_str(row["id"]),
        questions=row["questions"],
        label=row.get("label"),
        created_at=row["created_at"],
        ks=row["ks"],
        retrievers=row["retrievers"],
        params=row["params"],
        results=results,
        sweep=[SweepRow(**m) for m in sorted(row["sweep"], key=order)],
        golden=row.get("golden"),
        corpus=row.get("corpus"),
        harness=row.get("harness"),
        git_commit=row.get("git_commit"),
        trigger=row.get("trigger"),
        tuning=row.get("tuning"),
        warning=sample_warning(row["questions"]),
    )
    if per_question:
        rows = db.value(_PER_QUESTION_QUERY, {"run": run_id})
        rows.sort(key=lambda r: (record_str(r["question"]), order(r)))
        report.per_question = [
            QuestionResult(
                **{
                    **r,
                    "question": record_str(r["question"]),
                    "ranked": [record_str(x) for x in r["ranked"]],
                    "relevant": [record_str(x) for x in r["relevant"] or []],
                }
            )
            for r in rows
        ]
    return report


def _add_uncertainty(db: Database, run_id: RecordID, rows: list[MetricRow], retriever: str) -> None:
    """Fill each row's bootstrap interval and resolution per metric from the run's per-question scores.

    The scores are read one retriever and k at a time, in question order (so the same run always
    gets the same intervals), and kept as one float array per metric: memory grows with questions x
    means, never with a dict per stored result.
    """
    columns: list[np.ndarray] = []
    scored: list[MetricRow] = []
    for row in rows:
        values = np.asarray(db.value(_SCORES_QUERY, {"run": run_id, "retriever": row.retriever, "k": row.k}), dtype=float)
        if values.size:
            scored.append(row)
            columns.extend(values.T)
    counts = db.value(_LABEL_COUNTS_QUERY, {"run": run_id, "retriever": retriever})
    intervals = iter(confidence_intervals(columns))  # one resampling for every mean, as if one by one
    for row in scored:
        row.intervals = {metric: Bounds(low=i.low, high=i.high) for metric, i in zip(METRICS, intervals)}
        row.resolution = {metric: resolution(counts, metric, k=row.k) for metric in METRICS} if counts else None
