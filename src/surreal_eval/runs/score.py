"""Score rankings made elsewhere (a TREC run file or JSONL: a production log, a reranker, another
engine) as a run in history, by the same SurrealQL that scores the database's own retrievers.

Ids: a question id names a golden-set question (`q1` or `seval_question:q1`), a document id a record of
the corpus table (`d3` or `seval_article:d3`), as the golden set's labels do. A question id that is not in
the golden set, or a document that is not in the corpus table, is refused naming the file and line
(the database unchanged). A golden question the file does not rank for a retriever is scored as an
empty ranking (every metric 0, like trec_eval -c), and counted in the run (params.supplied.absent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Unpack

from ..errors import InputError
from ..load.run_files import Ranked, RunFileFormat, read_run_file
from ..models import RunReport, Scoring
from ..store.connection import Database, record_str, to_record
from ..store.golden import GoldenSet, golden_rows, golden_set, question_id
from .evaluate import evaluate
from .supplied import Hit, Supplied, check_corpus, missing_records

__all__ = ["score_file", "records_of"]


def records_of(db: Database, rankings: list[Ranked], *, corpus: str, source: str,
               golden: GoldenSet | None = None) -> dict[str, dict[str, list[Hit]]]:
    """`rankings` as Supplied rankings (records of `corpus`, by retriever and question), each question
    checked to be in the golden set (`golden`, else the default one) and each document in `corpus`:
    the first unknown is refused with its line, and how many others there are."""
    golden = golden or golden_set(db)
    sweeps = set(db.value("RETURN fn::seval::sweep_names()"))
    clash = next((r for r in rankings if r.retriever in sweeps), None)
    if clash:
        raise InputError(f"retriever name {clash.retriever!r} is the name of a floor sweep: rename it (--retriever)",
                         source=source, line=clash.line)
    known = {record_str(q["id"]) for q in golden_rows(db, golden)}
    unknown = [r for r in rankings if record_str(question_id(r.question, golden)) not in known]
    if unknown:
        raise InputError(f"question {unknown[0].question!r} is not in the golden set {golden.name}"
                         + (f" ({len(unknown) - 1} more rankings name unknown questions)" if len(unknown) > 1 else "")
                         + "; nothing was recorded", source=source, line=unknown[0].line)
    docs = {doc: to_record(doc, corpus) for r in rankings for doc in r.ids}
    gone = missing_records(db, list(docs.values()))
    if gone:
        line, doc = min((line, d) for r in rankings for d, line in zip(r.ids, r.lines) if record_str(docs[d]) in gone)
        raise InputError(f"document {doc!r} is not a record of {corpus}"
                         + (f" ({len(gone) - 1} more unknown documents)" if len(gone) > 1 else "")
                         + "; nothing was recorded", source=source, line=line)
    out: dict[str, dict[str, list[Hit]]] = {}
    for r in rankings:
        out.setdefault(r.retriever, {})[record_str(question_id(r.question, golden))] = [
            {"id": docs[d], "score": s} for d, s in zip(r.ids, r.scores)]
    return out


def absent_counts(db: Database, rankings: dict[str, dict[str, Any]], golden: GoldenSet) -> dict[str, int]:
    """How many questions of `golden` each retriever of `rankings` ranks nothing for."""
    total = len(golden_rows(db, golden))
    return {name: total - len(by_question) for name, by_question in rankings.items()}


def score_file(
    db: Database,
    path: Path,
    *,
    ks: list[int],
    label: str | None = None,
    tag: str | None = None,
    corpus: str | None = None,
    format: RunFileFormat = "auto",
    name: str | None = None,
    per_question: bool = False,
    record: bool = True,
    **scoring: Unpack[Scoring],
) -> RunReport:
    """Record the rankings of run file `path` as a run (every metric at every k of `ks`) of the questions of the golden
    set `scoring` names (else the default one), scored as `scoring` says (models.Scoring), and return its report;
    with `record` false, score them and record nothing (history stays as it was)."""
    fmt, rankings = read_run_file(path, format=format, name=name)
    if not rankings:
        raise InputError("the run file ranks nothing", source=str(path))
    table = check_corpus(db, corpus)
    chosen = golden_set(db, scoring.get("golden"))
    supplied = records_of(db, rankings, corpus=table, source=str(path), golden=chosen)
    kept = {"source": path.name, "format": fmt, "absent": absent_counts(db, supplied, chosen)}
    params = {**scoring, "corpus": table, "golden": chosen.name}
    return evaluate(db, ks=ks, label=label or f"scored from {path.name}", tag=tag, params=params,
                    per_question=per_question, trigger="score", supplied=Supplied(supplied, kept), record=record)
