"""Questions that failed in production taken into the golden set for good (`golden promote`), through
surql/promote.surql, and the guard that keeps a later load from silently taking them out again.

Two ways in: a file of failures, one a line ({"query", "answer": id or [ids], "id"?, "note"?, "time"?,
"embedding"?}, JSONL or CSV), each becoming a question of the harness's own set (seval_question) with source
'production-failure' and its answers as labels; or the questions a finished run scored at or below a
threshold on one metric (a `score` run of production rankings), marked production-failure where they are
(on an attached set, on the harness's side). All or nothing; every promotion is in `golden history`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from ..model_base import Model
from ..errors import ConfigError, InputError, NotFound
from ..grammar import RecordKey
from ..models import Question
from ..store.connection import Database, RecordID, record_str, to_record
from ..store.golden import OWN_GOLDEN, golden_rows, golden_set
from ..store.schema import harness_config
from ..load.embedding import Embedder
from .labels import _document, who
from ..load.rows import _csv_rows, _json_cell, json_rows, take_id, validate_row

__all__ = ["Promotion", "ProductionFailure", "keep_promoted", "promote_failures", "promote_run", "question_key"]

PROMOTED = "production-failure"


class ProductionFailure(Model):
    """One line of a file of production failures: what a user asked and the document(s) that answered it."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    answer: list[str] = Field(min_length=1)
    id: Optional[RecordKey] = None  # not written whole in SurrealDB's quoting (grammar.RecordKey)
    note: Optional[str] = None
    time: Optional[datetime] = None
    embedding: Optional[list[float]] = None
    _origin: Optional[tuple[str, int]] = PrivateAttr(default=None)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty")
        return value

    @field_validator("answer", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        value = [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value
        if isinstance(value, list):
            value = [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
            if any(isinstance(v, str) and not v.strip() for v in value):
                raise ValueError("an answer id is empty")
        return value


class Promotion(Model):
    """What `golden promote` did: the golden set, the questions it created, merged or marked, the labels it added."""

    golden: str
    questions: int = Field(description="questions created (from a file) or marked production-failure (from a run)")
    merged: int = Field(0, description="questions promoted before that were given more answers (from a file)")
    labels: int = Field(0, description="labels added")
    embedded: int = Field(0, description="questions whose embedding was computed")
    already: int = Field(0, description="questions the run failed that were production failures already (from a run)")
    ids: list[str] = Field([], description="the questions' ids")


def question_key(query: str) -> str:
    """The id a failure without one gets: `pf_` and 8 hex digits of the sha256 of its normalised text
    (lower case, blanks collapsed), so the same query asked twice is one question."""
    return "pf_" + hashlib.sha256(" ".join(query.lower().split()).encode("utf-8")).hexdigest()[:8]


def _failures(path: Path) -> Iterator[ProductionFailure]:
    from_csv = path.suffix.lower() == ".csv"
    for line, raw in (_csv_rows(path) if from_csv else json_rows(path)):
        raw = dict(raw)
        take_id(raw, path, line)
        if from_csv:
            raw = {k: v for k, v in raw.items() if v != "" or k in ("query", "answer")}
            if "embedding" in raw:
                _json_cell(raw, "embedding", path, line)
            if isinstance(raw.get("answer"), str) and not raw["answer"].lstrip().startswith("["):
                raw["answer"] = [part.strip() for part in raw["answer"].split(";") if part.strip()]
            elif isinstance(raw.get("answer"), str):
                _json_cell(raw, "answer", path, line)
        yield validate_row(ProductionFailure, raw, raw, path, line)


def promote_failures(db: Database, path: Path | str, *, embedder: Embedder | None = None, label_table: str | None = None,
                     note: str | None = None, by: str | None = None) -> Promotion:
    """Take the production failures of file `path` (JSONL, or CSV with a header) into the harness's own golden
    set, all or nothing: each a question with source 'production-failure' (id given, else `question_key`), its
    answers (bare ids of `label_table`, default the corpus a run searches; or `table:id`) as labels with their
    provenance, embedded by `embedder` unless the line gives an embedding (`note`: for lines giving none). Lines with the same id are one
    question with every answer; a question promoted before gets the answers it lacks. Refused in one line
    naming the file and line: a malformed line, no answer, an unknown document, a bad time, an empty file,
    one id for two queries, an id of a question of another source, no embedding and no embedder."""
    path = Path(path)
    config = harness_config(db)
    if config is None:
        raise ConfigError("the harness is not imported here: run `surreal-eval init --dimension N` first")
    table = label_table or db.value("RETURN fn::seval::default_corpus()")
    grouped: dict[str, dict[str, Any]] = {}
    for failure in _failures(path):
        file, line = failure._origin or (str(path), 0)
        key = failure.id or question_key(failure.query)
        qid = to_record(key, OWN_GOLDEN)
        docs = []
        for answer in failure.answer:
            doc = _document(db, answer) if ":" in answer else to_record(answer, table)
            if db.value("RETURN fn::seval::missing_records([$d])", {"d": doc}):
                raise InputError(f"question {key!r}: answer {answer!r} is no record that exists ({record_str(doc)}); "
                                 "a label names a record of seval_article or of a table you attached", source=file, line=line)
            docs.append(doc)
        row = grouped.get(key)
        if row is None:
            grouped[key] = {"id": qid, "text": failure.query, "embedding": failure.embedding, "labels": docs,
                            "note": failure.note or note, "failed_at": failure.time, "line": (file, line)}
            continue
        if " ".join(row["text"].lower().split()) != " ".join(failure.query.lower().split()):
            raise InputError(f"id {key!r} is given to two different queries (line {row['line'][1]} and this one)",
                             source=file, line=line)
        row["labels"] += [d for d in docs if d not in row["labels"]]
        row["note"] = row["note"] or failure.note
        if failure.time is not None and (row["failed_at"] is None or failure.time < row["failed_at"]):
            row["failed_at"] = failure.time
    if not grouped:
        raise InputError("no production failure in it: one a line, {\"query\": ..., \"answer\": ...}", source=str(path))
    known = {record_str(r["id"]): r for r in golden_rows(db, golden_set(db, OWN_GOLDEN))}
    rows = list(grouped.values())
    embedded = _embed(rows, known, embedder, config.dimension)
    done = db.value("RETURN fn::seval::promote_failures($rows, $by)",
                    {"rows": [{k: v for k, v in r.items() if k != "line"} for r in rows], "by": by or who()})
    return Promotion(golden=OWN_GOLDEN, questions=done["questions"], merged=done["merged"], labels=done["labels"],
                     embedded=embedded, ids=[record_str(r["id"]) for r in rows])


def _embed(rows: list[dict[str, Any]], known: dict[str, Any], embedder: Embedder | None, dimension: int) -> int:
    """Give every new question of `rows` an embedding (its line's, else the embedder's); how many the embedder made."""
    for row in rows:
        had = known.get(record_str(row["id"]))
        if had is not None and had.get("source") != PROMOTED:
            file, line = row["line"]
            raise InputError(f"question {record_str(row['id'])} exists with source {had.get('source') or 'none'}: "
                             "a production failure becomes a question of its own; give it another id", source=file, line=line)
        if had is not None:
            row["embedding"] = had["embedding"]
    missing = [r for r in rows if r["embedding"] is None]
    if missing and embedder is None:
        file, line = missing[0]["line"]
        raise InputError(f"question {record_str(missing[0]['id'])} has no embedding: give --embedder (or SURREAL_EVAL_EMBEDDER), "
                         "or an embedding on the line", source=file, line=line)
    if missing:
        for row, vector in zip(missing, embedder.embed([r["text"] for r in missing])):
            row["embedding"] = [float(x) for x in vector]
    for row in rows:
        if len(row["embedding"]) != dimension:
            file, line = row["line"]
            raise InputError(f"question {record_str(row['id'])}: embedding has {len(row['embedding'])} values, the index "
                             f"expects {dimension}", source=file, line=line)
    return len(missing)


def promote_run(db: Database, run: str | RecordID, metric: str, *, below: float = 0, retriever: str | None = None,
                note: str | None = None, by: str | None = None) -> Promotion:
    """Mark production-failure the questions finished run `run` scored at or below `below` on `metric`
    (`ndcg@10`) for `retriever` (None: the run's only one), in the golden set the run measured: on the
    harness's own rows, or on the harness's side for an attached set. NotFound for a run that does not exist;
    refused: a metric or cutoff the run did not measure, a retriever it did not run."""
    from ..grammar import parse_metric

    run_id = to_record(run, "seval_run") if isinstance(run, str) else run
    row = db.value("RETURN fn::seval::finished_run($run)", {"run": run_id})
    if row is None:
        raise NotFound(f"no finished run {record_str(run_id)}: `surreal-eval runs list` lists the runs")
    spec = parse_metric(metric, row.get("metrics") or [metric.partition("@")[0]])
    if spec.k not in row["ks"]:
        raise ConfigError(f"run {record_str(run_id)} measured no cutoff {spec.k}: its cutoffs are "
                          f"{', '.join(map(str, row['ks']))}")
    names = [r for r in row["retrievers"] if r != "floor_sweep"]
    if retriever is None and len(names) != 1:
        raise ConfigError(f"run {record_str(run_id)} ran {', '.join(names)}: choose one with --retriever")
    retriever = retriever or names[0]
    if retriever not in names:
        raise ConfigError(f"run {record_str(run_id)} did not run retriever {retriever!r}: it ran {', '.join(names)}")
    failed = db.value("RETURN fn::seval::failed_questions($run, $r, $m, $k, $below)",
                      {"run": run_id, "r": retriever, "m": spec.name, "k": spec.k, "below": below})
    chosen = golden_set(db, (row.get("params") or {}).get("golden") or OWN_GOLDEN)
    marked = db.value("RETURN fn::seval::promote_questions($g, $ids, $by, $note)",
                      {"g": chosen.model_dump(), "ids": failed, "by": by or who(),
                       "note": note or f"{record_str(run_id)}: {retriever} {spec} <= {below:g}"}) if failed else []
    return Promotion(golden=chosen.name, questions=len(marked), already=len(failed) - len(marked),
                     ids=[record_str(q) for q in marked])


def keep_promoted(db: Database, questions: Iterable[Question], label_table: str, *, demote: bool = False,
                  demoted: list[RecordID] | None = None) -> Iterator[Question]:
    """`questions` of a load into the harness's own set, each checked against the questions promoted from
    production failures: one naming no source keeps the mark; one naming another source, or leaving out a
    label the promoted question has, is refused naming its file, line and id, unless `demote` (then its id
    is added to `demoted`, for the history)."""
    if not harness_config(db) or not db.value("RETURN fn::seval::own_golden_exists()"):  # no harness yet: nothing promoted
        yield from questions
        return
    promoted = {record_str(r["id"]): {record_str(d) for d in r["relevant"]}
                for r in db.value("RETURN fn::seval::promoted_questions()")}
    for question in questions:
        key = record_str(to_record(question.id, OWN_GOLDEN))
        labels = promoted.get(key)
        if labels is None:
            yield question
            continue
        kept = {record_str(to_record(r, label_table)) for r in question.relevant}
        dropped = sorted(labels - kept)
        problem = (f"gives it source {question.source}" if question.source not in (None, PROMOTED)
                   else f"drops its label {dropped[0]}" if dropped else None)
        if problem and not demote:
            file, line = question._origin or ("the load", None)
            raise InputError(f"question {question.id!r} was promoted from a production failure and this load {problem}: "
                             "a promoted question stays in the set; load it with --demote to do so on purpose",
                             source=file, line=line)
        if problem and demoted is not None:
            demoted.append(to_record(question.id, OWN_GOLDEN))
        yield question if question.source is not None or problem else question.model_copy(update={"source": PROMOTED})
