"""Export a run's rankings and labels as TREC files, so any run can be checked with trec_eval or ranx."""

from __future__ import annotations

from typing import Iterator

from surrealdb import RecordID

from ..store.connection import Database, record_str
from ..store.golden import golden_set
from ..errors import InputError
from .record import resolve_run

__all__ = ["export_run_trec", "export_qrels_trec"]

def _trec_id(value: object) -> str:
    """The id part of a record as a TREC token; whitespace would break the format, so it is refused."""
    token = str(value.id) if isinstance(value, RecordID) else str(value)
    if not token or any(ch.isspace() for ch in token):
        raise InputError(f"{record_str(value)} cannot be written to a TREC file: its id is empty or contains whitespace")
    return token


def _require_run(db: Database, run: str | RecordID) -> RecordID:
    """The finished run `run` names (`seval_run:x`, `x`, `latest`, `previous`), as everywhere else."""
    return resolve_run(db, run)


def export_run_trec(
    db: Database, run: str | RecordID, *, retrievers: list[str] | None = None, scores: str = "rank"
) -> Iterator[str]:
    """Lines `qid Q0 docid rank score tag`, one per ranked record, tag = retriever name.

    scores="rank" writes depth - rank + 1, strictly decreasing, so a tool that re-sorts by score
    (trec_eval breaks ties by docid) sees exactly this run's order; scores="raw" writes the
    retriever's own scores (BM25, cosine similarity, RRF score).
    """
    if scores not in {"rank", "raw"}:
        raise InputError(f"--scores must be rank or raw, got {scores!r}")
    run_id = _require_run(db, run)
    for row in db.value("RETURN fn::seval::run_rankings($run, $names)", {"run": run_id, "names": retrievers}):
        qid = _trec_id(row["question"])
        depth = len(row["ranked"])
        for rank, (doc, raw) in enumerate(zip(row["ranked"], row["scores"]), start=1):
            score = depth - rank + 1 if scores == "rank" else raw
            yield f"{qid} Q0 {_trec_id(doc)} {rank} {score} {row['retriever']}"


def export_qrels_trec(db: Database, *, run: str | RecordID | None = None, golden: str | None = None) -> Iterator[str]:
    """Lines `qid 0 docid grade`: the labels of golden set `golden` (else the default one), or with `run`
    the labels that run scored."""
    if run is None:
        rows = db.value("RETURN fn::seval::golden_labels($g)", {"g": golden_set(db, golden).model_dump()})
    else:
        rows = db.value("RETURN fn::seval::run_labels($run)", {"run": _require_run(db, run)})
        rows.sort(key=lambda r: record_str(r["question"]))
    for row in rows:
        qid = _trec_id(row["question"])
        for doc, grade in zip(row["relevant"], row["grades"]):
            yield f"{qid} 0 {_trec_id(doc)} {grade:g}"
