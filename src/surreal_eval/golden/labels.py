"""Labels found while looking (`golden label`), the labels whose document changed since (`golden stale`),
and every change a golden set went through (`golden history`), through surql/labels.surql.

A judgment added to the harness's own golden set goes into the question's row; one added to an attached
set is kept on the harness's side and merged at every run, the user's table never written. Either way
its provenance (source, who, when, why, the digest of the document's text then) and the change are kept.
"""

from __future__ import annotations

import getpass
import os
from datetime import datetime
from typing import Any, Optional

from pydantic import BaseModel

from ..errors import InputError
from ..models import LabelProvenance
from ..store.connection import Database, RecordID, record_str, to_record
from ..store.golden import GoldenSet, golden_rows, golden_set, question_id

__all__ = ["Judgment", "LabelChange", "StaleLabel", "add_label", "golden_history", "label_source", "set_provenance", "stale_labels", "who"]

#: Where a judgment may come from (seval_label.source).
SOURCES = ("human", "click", "model", "file", "table", "production-failure")


class Judgment(BaseModel):
    """What `golden label` did: the question, the document, its grade (0 or below: judged not relevant), the change."""

    golden: str
    question: str
    doc: str
    grade: float
    action: str


class StaleLabel(BaseModel):
    """A judgment whose document's text changed since it was made (or first seen)."""

    question: str
    doc: str
    grade: float
    labelled_at: datetime
    source: str
    by: Optional[str] = None
    #: when a finished run first saw the document changed (None: no run has yet)
    changed_seen_at: Optional[datetime] = None


class LabelChange(BaseModel):
    """One change to a golden set (table seval_golden_change)."""

    golden: str
    question: str
    doc: Optional[str] = None
    action: str
    grade: Optional[float] = None
    source: Optional[str] = None
    by: Optional[str] = None
    note: Optional[str] = None
    at: datetime
    #: when the question failed in production (golden promote), as its file said
    failed_at: Optional[datetime] = None


def who() -> str:
    """Who makes a change from this process: SURREAL_EVAL_BY, else the operating system's user name."""
    try:
        return os.environ.get("SURREAL_EVAL_BY") or getpass.getuser()
    except (KeyError, OSError):  # no user name in a bare container
        return "unknown"


def label_source(source: str) -> str:
    if source not in SOURCES:
        raise InputError(f"label source {source!r} is not one of {', '.join(SOURCES)}")
    return source


def _document(db: Database, doc: str | RecordID) -> RecordID:
    """The record `doc` names: `table:id`, or a bare id of the corpus a run searches by default."""
    if isinstance(doc, RecordID):
        return doc
    table, sep, _ = doc.partition(":")
    if sep and table in db.value("RETURN fn::seval::label_tables()"):
        return to_record(doc, table)
    if sep and table in db.value("INFO FOR DB")["tables"]:  # a table labels may not name: refused naming it
        return to_record(doc, table)
    return to_record(doc, db.value("RETURN fn::seval::default_corpus()"))


def add_label(db: Database, question: str, doc: str | RecordID, *, golden: str | None = None, grade: float = 1,
              relevant: bool = True, note: str | None = None, by: str | None = None, source: str = "human") -> Judgment:
    """Judge `doc` for `question` of golden set `golden` (else the default one): relevant with `grade`, or with
    `relevant` False judged not relevant (grade 0); who (`by`, else `who()`), why (`note`) and the source are kept.
    Refused in one line, nothing changed: a question not in the set, a document that does not exist or is no
    record of a table labels may name, a grade not above 0, the same label again."""
    if relevant and (isinstance(grade, bool) or not isinstance(grade, (int, float)) or not grade > 0):
        raise InputError(f"--grade must be a number above 0 (use --not to judge a document not relevant), got {grade!r}")
    chosen = golden_set(db, golden)
    action = db.value("RETURN fn::seval::add_judgment($g, $q, $doc, $grade, $source, $by, $note)", {
        "g": chosen.model_dump(), "q": question_id(question, chosen), "doc": _document(db, doc),
        # a float, as every load stores grades: the golden-set fingerprint then reads the same after an export and a load
        "grade": float(grade) if relevant else 0, "source": label_source(source), "by": by or who(), "note": note})
    return Judgment(golden=chosen.name, question=record_str(question_id(question, chosen)), doc=record_str(_document(db, doc)),
                    grade=grade if relevant else 0, action=action)


def stale_labels(db: Database, golden: str | None = None) -> tuple[GoldenSet, list[StaleLabel]]:
    """Golden set `golden` (else the default one) and its judgments whose document changed since they were made."""
    chosen = golden_set(db, golden)
    ids = [row["id"] for row in golden_rows(db, chosen)]
    found = db.value("RETURN fn::seval::stale_labels($name, $ids)", {"name": chosen.name, "ids": ids})
    return chosen, [StaleLabel(**{**row, "question": record_str(row["question"]), "doc": record_str(row["doc"])})
                    for row in found]


def golden_history(db: Database, golden: str | None = None, *, since: datetime | None = None,
                   until: datetime | None = None) -> tuple[GoldenSet, list[LabelChange]]:
    """Golden set `golden` (else the default one) and its changes after `since` up to `until`, oldest first."""
    chosen = golden_set(db, golden)
    rows: list[dict[str, Any]] = db.value("RETURN fn::seval::golden_changes($name, $since, $until)",
                                          {"name": chosen.name, "since": since, "until": until})
    return chosen, [LabelChange(**{**row, "question": record_str(row["question"]),
                                   "doc": record_str(row["doc"]) if row.get("doc") else None}) for row in rows]


def set_provenance(db: Database, golden: str, given: dict[str, dict[str, LabelProvenance]], label_table: str) -> int:
    """Give the judgments of golden set `golden` the provenance a file recorded (`given`: question id -> bare
    document id of `label_table` -> provenance), instead of the load's own (source 'file'); returns how many."""
    rows = [{"question": to_record(question, golden), "doc": to_record(doc, label_table),
             **kept.model_dump(exclude={"origin"})} for question, docs in given.items() for doc, kept in docs.items()]
    if not rows:
        return 0
    return db.value("RETURN fn::seval::set_provenance($name, $given)", {"name": golden, "given": rows})
