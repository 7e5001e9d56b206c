"""The run record: ordering its rows, and loading a finished run back as a RunReport with intervals and
per-question results (a run's name is resolved by store/run_refs.py, re-exported here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from datetime import datetime

from surrealdb import RecordID

from ..errors import NotFound
from ..grammar import METRICS
from ..models import AnnRow, Bounds, EngineCheck, MetricRow, QuestionResult, RunReport, SweepRow
from ..stats import confidence_intervals, resolution, sample_warning
from ..store.connection import Database, record_str
from ..store.run_refs import TAG_PATTERN, resolve_run

if TYPE_CHECKING:
    import numpy as np

__all__ = ["run_fields", "run_order", "run_metrics", "ordered", "resolve_run", "run_before", "load_run", "results_of", "load_for_comparison",
           "report_from_row", "TAG_PATTERN"]

def run_order(retrievers: list[str]):
    """Sort key for rows with `retriever` and `k`: report order of retrievers, then k."""
    position = {name: i for i, name in enumerate(retrievers)}
    return lambda row: (position.get(row["retriever"], len(position)), row.get("floor") or 0, row["k"])


def run_before(db: Database, run: RecordID, created_at: datetime) -> RecordID:
    """The newest finished run created before `run` (which was created at `created_at`)."""
    rows = db.value("RETURN fn::seval::finished_run_before($at, $run)", {"at": created_at, "run": run})
    if not rows:
        raise NotFound(f"no finished run before {record_str(run)} to compare it with: evaluate once more first")
    return rows[0]["id"]


def load_for_comparison(db: Database, ref: str | RecordID) -> RunReport:
    """A run's report with every question's result (no intervals: a comparison computes its own)."""
    return load_run(db, resolve_run(db, ref), per_question=True, intervals=False)


def run_fields(row: dict) -> dict:
    """What a RunReport and a RunSummary both take from a finished seval_run row, its means as MetricRows."""
    order, names = run_order(row["retrievers"]), run_metrics(row)
    keys = ("label", "golden", "corpus", "git_commit", "trigger", "tuning", "retrieval", "since", "verification")
    return {"run": record_str(row["id"]), "created_at": row["created_at"], "questions": row["questions"],
            "ks": row["ks"], "retrievers": row["retrievers"], "params": row.get("params") or {},
            "results": [MetricRow(**m, scores=ordered(m["metrics"], names)) for m in sorted(row["means"], key=order)],
            "ingests": [record_str(i) for i in row.get("ingests") or []],
            **{key: row.get(key) for key in keys}, "since": plain_ids(row.get("since"))}


def plain_ids(value: Any) -> Any:
    """`value` with every record id in it, at any depth, as its `table:id` text (what JSON output carries)."""
    if isinstance(value, RecordID):
        return record_str(value)
    if isinstance(value, dict):
        return {key: plain_ids(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain_ids(item) for item in value]
    return value


def prepare_report() -> None:
    """Build ahead the models a run's report is read into (each is built when first used: model_base.Model), for a
    caller that can do it while the engine works (evaluate: while the engine starts the run)."""
    for model in (Bounds, MetricRow, SweepRow, EngineCheck, QuestionResult, RunReport):
        model.model_rebuild()


def load_run(
    db: Database, run: str | RecordID, *, per_question: bool = False, intervals: bool = True,
    questions: list[RecordID] | None = None, scores_only: bool = False, results: list[dict] | None = None,
) -> RunReport:
    """The report of a finished run: `seval_run:xyz`, `xyz`, or any name resolve_run takes (`latest`,
    `previous`), as every command that takes a run.

    With `intervals` (the default) every mean carries its 95% bootstrap interval over questions
    and its resolution, computed from the run's per-question results. With `questions`, the per-question
    results are those of these questions only (the means stay the run's); with `scores_only`, without the ranked
    and relevant records (left empty), for a caller that compares scores only; `results`: what
    fn::seval::run_results gives for them, when the caller read it already.
    """
    run_id = run if isinstance(run, RecordID) else resolve_run(db, run)
    row, tags = db.query("RETURN fn::seval::finished_run($run); RETURN fn::seval::run_tags($run)", {"run": run_id})  # one round trip
    if not row:
        raise NotFound(f"no finished run {record_str(run_id)}: `surreal-eval runs list` lists the runs")
    report = report_from_row(db, run_id, row, per_question=per_question, intervals=intervals, questions=questions,
                             scores_only=scores_only, results=results)
    report.tags = tags
    return report


def report_from_row(db: Database, run_id: RecordID, row: dict, *, per_question: bool, intervals: bool,
                    questions: list[RecordID] | None = None, scores_only: bool = False,
                    results: list[dict] | None = None) -> RunReport:
    """The report of run `run_id` whose seval_run row (means computed) is `row`, from its rankings (the per-question
    results of `questions` only, when given; without their ranked and relevant records with `scores_only`; `results`:
    fn::seval::run_results of them, when read already)."""
    order = run_order(row["retrievers"])
    names = run_metrics(row)
    fields = run_fields(row)
    if intervals:
        _add_uncertainty(db, run_id, fields["results"], row["retrievers"][0], names)
    report = RunReport(
        **fields,
        sweep=[SweepRow(**m, scores=ordered(m["metrics"], names)) for m in sorted(row["sweep"], key=order)],
        harness=row.get("harness"),
        warning=sample_warning(labelled) if (labelled := row["questions"] - ((row.get("golden") or {}).get("unlabelled") or 0)) else None,
        checks=[EngineCheck(**c) for c in row.get("checks") or []],
        ann=_ann_rows(db, run_id, row.get("ann") or [], intervals=intervals),
    )
    if per_question:
        rows = list(results) if results is not None else db.value(*_results_call(run_id, questions, scores_only))
        rows.sort(key=lambda r: (record_str(r["question"]), order(r)))
        report.per_question = [
            QuestionResult(
                **{
                    **r,
                    "question": record_str(r["question"]),
                    "scores": ordered(r["metrics"], names),
                    "ranked": [record_str(x) for x in r["ranked"]],
                    "relevant": [record_str(x) for x in r["relevant"] or []],
                }
            )
            for r in rows
        ]
    return report


def results_of(db: Database, runs: list[RecordID], questions: list[RecordID] | None, *, scores_only: bool = False) -> list[list[dict]]:
    """fn::seval::run_results of each run of `runs` (what `load_run` takes as `results`), read side by side (the engine
    reads each on a core of its own)."""
    return [done[-1] for done in db.query_many([_results_call(run, questions, scores_only) for run in runs], concurrency=len(runs))]


def _results_call(run_id: RecordID, questions: list[RecordID] | None, scores_only: bool) -> tuple[str, dict[str, Any]]:
    return ("RETURN fn::seval::run_results($run, $questions, $scores_only)",
            {"run": run_id, "questions": questions, "scores_only": scores_only})


def _ann_rows(db: Database, run_id: RecordID, means: list[dict], *, intervals: bool) -> list[AnnRow]:
    """The run's ann_recall@k means (seval_run.ann), each with its bootstrap interval over questions."""
    rows = [AnnRow(**m) for m in sorted(means, key=lambda m: m["k"])]
    if intervals and rows:
        values = db.value("RETURN fn::seval::run_ann($run)", {"run": run_id})
        columns = [[v["ann_recall"] for v in values if v["k"] == row.k] for row in rows]
        for row, bounds in zip(rows, confidence_intervals(columns)):
            row.interval = Bounds(low=bounds.low, high=bounds.high)
    return rows


def run_metrics(row: dict) -> list[str]:
    """The metrics stored run `row` scored, in report order (METRICS for a run that did not record them)."""
    return list(row.get("metrics") or METRICS)


def ordered(scores: dict[str, float], names: list[str]) -> dict[str, float]:
    """`scores` ({name: value}, as the database returns it, in name order) in the order of `names`."""
    return {name: scores[name] for name in names if name in scores}


def _add_uncertainty(db: Database, run_id: RecordID, rows: list[MetricRow], retriever: str, names: list[str]) -> None:
    """Fill each row's bootstrap interval and resolution per metric from the run's per-question scores.

    The scores are read one retriever at a time, in question order (so the same run always gets the
    same intervals), and kept as one float array per metric and k: memory grows with questions x
    means, never with a dict per stored result. Resolution is given for the metrics stats.resolution
    knows.
    """
    import numpy as np

    columns: list[np.ndarray] = []
    scored: list[MetricRow] = []
    results: dict[str, list[list[dict]]] = {}
    for row in rows:
        if row.retriever not in results:
            results[row.retriever] = db.value("RETURN fn::seval::run_scores($run, $retriever)", {"run": run_id, "retriever": row.retriever})
        found = [m["metrics"] for question in results[row.retriever] for m in question if m["k"] == row.k]
        values = np.asarray([[s[name] for name in names] for s in found], dtype=float)
        if values.size:
            scored.append(row)
            columns.extend(values.T)
    counts = db.value("RETURN fn::seval::run_label_counts($run, $retriever)", {"run": run_id, "retriever": retriever})
    intervals = iter(confidence_intervals(columns))  # one resampling for every mean, as if one by one
    for row in scored:
        row.intervals = {metric: Bounds(low=i.low, high=i.high) for metric, i in zip(names, intervals)}
        row.resolution = {metric: resolution(counts, metric, k=row.k) for metric in names if metric in METRICS} if counts else None
