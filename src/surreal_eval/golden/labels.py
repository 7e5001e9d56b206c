"""Labels found while looking (`golden label`), the labels whose document changed since (`golden stale`),
and every change a golden set went through (`golden history`), through surql/labels.surql.

A judgment added to the harness's own golden set goes into the question's row; one added to an attached
set is kept on the harness's side and merged at every run, the user's table never written. Either way
its provenance (source, who, when, why, the digest of the document's text then) and the change are kept.
"""

from __future__ import annotations

import getpass
import json
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Optional


from ..model_base import Model
from ..errors import InputError, Rejected
from ..models import LabelProvenance
from ..store.connection import Database, RecordID, record_str, to_record
from ..store.golden import GoldenSet, golden_rows, golden_set, question_id

__all__ = ["FileLabel", "Judgment", "LabelChange", "LabelsAdded", "StaleLabel", "add_label", "add_labels", "golden_history",
           "label_source", "read_label_file", "set_provenance", "stale_labels", "who"]

#: Where a judgment may come from (seval_label.source).
SOURCES = ("human", "click", "model", "file", "table", "production-failure")


class Judgment(Model):
    """What `golden label` did: the question, the document, its grade (0 or below: judged not relevant), the change."""

    golden: str
    question: str
    doc: str
    grade: float
    action: str


class StaleLabel(Model):
    """A judgment whose document's text changed since it was made (or first seen)."""

    question: str
    doc: str
    grade: float
    labelled_at: datetime
    source: str
    by: Optional[str] = None
    #: when a finished run first saw the document changed (None: no run has yet)
    changed_seen_at: Optional[datetime] = None


class LabelChange(Model):
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


class FileLabel(Model):
    """One judgment read from a file (`golden label --from-file`): where it was, the question, the document, its grade
    (0: judged not relevant) and why."""

    source: str
    line: int
    question: str
    doc: str
    grade: float
    note: Optional[str] = None


class LabelsAdded(Model):
    """What `golden label --from-file` did: judgments added (by action), those already so (unchanged), lines with no grade yet."""

    golden: str
    path: str
    actions: dict[str, int]
    unchanged: int
    ungraded: int


def _file_grade(value: Any, where: tuple[str, int]) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(f"grade {value!r} is no number (0: not relevant, above 0: its grade)", source=where[0], line=where[1]) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"grade {value!r} must be a number, 0 (not relevant) or above", source=where[0], line=where[1])
    return float(value)


def read_label_file(path: Path) -> tuple[list[FileLabel], int]:
    """The judgments of file `path` and how many of its lines have no grade yet (left out). JSONL: one object a line,
    {question, doc, grade, note?} (a file `golden judge --calibrate` wrote, once graded); TSV (a .tsv name): question, doc,
    grade and an optional note, tab-separated, a first line `question<TAB>doc...` taken as a header. Blank lines and lines
    starting with # are skipped. Anything else is refused in one line naming the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read it: {error.__class__.__name__}", source=str(path)) from None
    tsv = Path(path).suffix.lower() == ".tsv"
    found, ungraded = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        where = (str(path), number)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if tsv:
            cells = line.split("\t")
            if number == 1 and cells[0].strip().lower() == "question":
                continue
            if len(cells) < 3 or len(cells) > 4:
                raise InputError(f"expected question, doc, grade and an optional note separated by tabs, got {len(cells)} fields",
                                 source=where[0], line=number)
            row: dict[str, Any] = dict(zip(("question", "doc", "grade", "note"), (c.strip() for c in cells)))
        else:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"not JSON: {error.msg} (column {error.colno})", source=where[0], line=number) from None
            if not isinstance(row, dict):
                raise InputError("each line must be a JSON object {question, doc, grade}", source=where[0], line=number)
        for key in ("question", "doc"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise InputError(f"no {key}: each line names a question and a document", source=where[0], line=number)
        if "grade" not in row:
            raise InputError("no grade: give one (0: not relevant, above 0: its grade), or null to leave the pair for later",
                             source=where[0], line=number)
        grade = _file_grade(row["grade"], where)
        if grade is None:
            ungraded += 1
            continue
        note = row.get("note")
        found.append(FileLabel(source=where[0], line=number, question=row["question"].strip(), doc=row["doc"].strip(), grade=grade,
                               note=str(note) if note not in (None, "") else None))
    return found, ungraded


def add_labels(db: Database, path: Path, *, golden: str | None = None, note: str | None = None, by: str | None = None,
               source: str = "human") -> LabelsAdded:
    """Every judgment of file `path` (`read_label_file`) added to golden set `golden` (else the default one) as `add_label` adds
    one, all in one statement: a line refused (a question not in the set, a document that does not exist or is no record of a
    table labels may name, the same pair twice) is named with its file and line, and nothing is written. A judgment the set
    holds already as it is counted unchanged."""
    rows, ungraded = read_label_file(path)
    chosen = golden_set(db, golden)
    seen: dict[tuple[str, str], FileLabel] = {}
    resolved = []
    for row in rows:
        try:
            question, doc = question_id(row.question, chosen), _document(db, row.doc)
        except InputError as error:
            raise InputError(str(error), source=row.source, line=row.line) from None
        key = (record_str(question), record_str(doc))
        if key in seen:
            raise InputError(f"{key[0]} {key[1]} is judged twice (line {seen[key].line} too)", source=row.source, line=row.line)
        seen[key] = row
        resolved.append((row, question, doc))
    questions = {record_str(r["id"]): r for r in db.value("RETURN fn::seval::golden_rows($g, NONE, $ids)", {
        "g": chosen.model_dump(), "ids": list({record_str(q): q for _, q, _ in resolved}.values())}) if r} if resolved else {}
    missing = {record_str(d) for d in db.value("RETURN fn::seval::missing_records($docs)", {"docs": [d for _, _, d in resolved]})} \
        if resolved else set()
    todo, unchanged = [], 0
    for row, question, doc in resolved:
        there = record_str(doc) not in missing
        mine = questions.get(record_str(question))
        if mine is None:
            raise InputError(f"no question {record_str(question)} in the golden set {chosen.name}", source=row.source, line=row.line)
        if not there:
            raise InputError(f"no record {record_str(doc)}: a judgment names a record that exists", source=row.source, line=row.line)
        relevant = [record_str(d) for d in mine.get("relevant") or []]
        grades = mine.get("grades") or []
        now = (float(grades[relevant.index(record_str(doc))]) if relevant.index(record_str(doc)) < len(grades) else 1.0) \
            if record_str(doc) in relevant else (0.0 if record_str(doc) in {record_str(d) for d in mine.get("nonrelevant") or []} else None)
        if now == row.grade:
            unchanged += 1
            continue
        action = "judged-not-relevant" if row.grade <= 0 else "grade-changed" if now else "label-added"
        todo.append((row, {"q": question, "doc": doc, "grade": row.grade, "note": row.note or note, "action": action}))
    if todo:
        try:
            db.value("RETURN fn::seval::add_judgments($g, $rows, $source, $by)",
                     {"g": chosen.model_dump(), "rows": [r for _, r in todo], "source": label_source(source), "by": by or who()})
        except Rejected as error:  # a rule only the database checks: name the line it names
            said = str(error)
            row = next((r for r, t in todo if record_str(t["doc"]) in said and record_str(t["q"]) in said),
                       next((r for r, t in todo if record_str(t["doc"]) in said), todo[0][0]))
            raise InputError(said.removeprefix("An error occurred: "), source=row.source, line=row.line) from None
    actions: dict[str, int] = {}
    for _, r in todo:
        actions[r["action"]] = actions.get(r["action"], 0) + 1
    return LabelsAdded(golden=chosen.name, path=str(path), actions=actions, unchanged=unchanged, ungraded=ungraded)
