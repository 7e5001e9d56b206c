"""Export a run's rankings and labels as TREC files, so any run can be checked with trec_eval or ranx."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from surrealdb import RecordID

from ..model_base import Model
from ..load.run_files import trec_eval_float
from ..store.connection import Database, record_str
from ..store.golden import golden_set
from ..errors import InputError
from .record import resolve_run

__all__ = ["TrecRunFile", "export_run_trec", "export_qrels_trec", "trec_run_file", "trec_scores"]

def _trec_id(value: object) -> str:
    """The id part of a record as a TREC token; whitespace would break the format, so it is refused."""
    token = str(value.id) if isinstance(value, RecordID) else str(value)
    if not token or any(ch.isspace() for ch in token):
        raise InputError(f"{record_str(value)} cannot be written to a TREC file: its id is empty or contains whitespace")
    return token


def _require_run(db: Database, run: str | RecordID) -> RecordID:
    """The finished run `run` names (`seval_run:x`, `x`, `latest`, `previous`), as everywhere else."""
    return resolve_run(db, run)


class TrecRunFile(Model):
    """A run as a TREC run file: its lines, and how many raw scores were lowered to keep the run's order."""

    lines: list[str]
    #: raw scores written a step lower (each the next 32-bit float below the score written above it), so that
    #: trec_eval, which reads scores as 32-bit floats and breaks a tie by docid descending, ranks every record
    #: where this run did
    lowered: int = 0


def trec_scores(ids: Sequence[str], scores: Sequence[float]) -> list[float | None]:
    """For a ranking (`ids`, best first, with their `scores`), the score to write for each record so that
    trec_eval's order is this ranking: None where the score itself keeps it (written as it is), else the next
    32-bit float below the score written just above it.

    trec_eval reads a score into a 32-bit float (`TEXT_RESULTS.sim`, get_trec_results.c) and sorts by it
    descending, then by docid descending as strcmp compares them (form_res_rels.c): so two scores that differ
    only past a float's precision tie too, and a tie the run broke by docid ascending comes out the other way.
    """
    written: list[float | None] = []
    above: tuple[str, np.float32] | None = None
    for doc, raw in zip(ids, scores, strict=True):
        value = trec_eval_float(raw)
        if above is not None and (value > above[1] or (value == above[1] and doc > above[0])):
            value = np.nextafter(above[1], np.float32(-np.inf))
            written.append(float(value))  # exactly the float: its shortest text reads back as it
        else:
            written.append(None)
        above = (doc, value)
    return written


def trec_run_file(db: Database, run: str | RecordID, *, retrievers: list[str] | None = None, scores: str = "rank") -> TrecRunFile:
    """Lines `qid Q0 docid rank score tag`, one per ranked record in this run's rank order, tag = retriever name.

    scores="rank" writes depth - rank + 1, strictly decreasing, so a tool that re-sorts by score
    (trec_eval breaks ties by docid descending) sees exactly this run's order; scores="raw" writes the
    retriever's own scores (BM25, cosine similarity, RRF score), but where two tie as trec_eval reads them
    (32-bit floats) and it would rank them the other way, the lower one is written as the next 32-bit float
    below the other (`trec_scores`; counted in `lowered`), so trec_eval reproduces this run's numbers either way.
    """
    if scores not in {"rank", "raw"}:
        raise InputError(f"--scores must be rank or raw, got {scores!r}")
    run_id = _require_run(db, run)
    if retrievers:
        measured = db.value("RETURN fn::seval::run_settings($run)", {"run": run_id})["retrievers"]
        unknown = [name for name in retrievers if name not in measured]
        if unknown:
            raise InputError(f"run {record_str(run_id)} measured no retriever {', '.join(unknown)}: it measured {', '.join(measured)}")
    lines, lowered = [], 0
    for row in db.value("RETURN fn::seval::run_rankings($run, $names)", {"run": run_id, "names": retrievers}):
        qid = _trec_id(row["question"])
        docs = [_trec_id(doc) for doc in row["ranked"]]
        depth = len(docs)
        written = trec_scores(docs, row["scores"]) if scores == "raw" else [None] * depth
        lowered += sum(w is not None for w in written)
        for rank, (doc, raw, nudged) in enumerate(zip(docs, row["scores"], written, strict=True), start=1):
            score = depth - rank + 1 if scores == "rank" else raw if nudged is None else repr(nudged)
            lines.append(f"{qid} Q0 {doc} {rank} {score} {row['retriever']}")
    return TrecRunFile(lines=lines, lowered=lowered)


def export_run_trec(
    db: Database, run: str | RecordID, *, retrievers: list[str] | None = None, scores: str = "rank"
) -> Iterator[str]:
    """The lines of `trec_run_file`: `qid Q0 docid rank score tag`, one per ranked record, tag = retriever name."""
    yield from trec_run_file(db, run, retrievers=retrievers, scores=scores).lines


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
