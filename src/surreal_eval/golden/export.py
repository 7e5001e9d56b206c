"""`golden export`: a golden set written as JSONL in exactly the format `load golden` reads, so a set built
here can be reviewed, versioned in git and loaded elsewhere.

One line per question, in id order: `id` (the record's key), `text`, `relevant` as an `{doc: grade}` map
(the labels with their grades, then each document judged not relevant with grade 0, as the JSONL reader
takes them back; a question whose labels all have the default grade 1 as a list, with `nonrelevant`, so
that a load stores its grades exactly as they are and the golden-set fingerprint reads the same), `category`,
`language`, `source`, `split`, `frequency`, `passages` when set, and
`provenance`: per judged document, where the judgment came from (source, by, note, added_at, and origin
'harness' for a label added here to an attached set, to merge into your table). An attached set is
exported with the labels added on the harness's side merged (fn::seval::golden_rows), as every run reads it.
Documents are bare ids of the one table they belong to (`ExportReport.label_table`: `load golden --corpus
TABLE` reads them back). Embeddings are written only with `embeddings=True`; without them `load golden`
needs an embedder (`--embedder`). The file is written to a temporary file beside it and renamed into place.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


from ..model_base import Model
from ..errors import InputError
from ..store.connection import Database, RecordID, record_str
from ..store.golden import golden_rows, golden_set

__all__ = ["ExportReport", "export_golden"]


class ExportReport(Model):
    """What `export_golden` wrote: the golden set, the file, questions, judgments, the labels added on the
    harness's side (an attached set), the table its documents belong to, and whether embeddings are in it."""

    golden: str
    path: str
    questions: int
    judgments: int
    harness_labels: int
    label_table: str | None
    embeddings: bool


def _key(record: RecordID) -> str:
    return str(record.id)


def _label_table(rows: list[dict[str, Any]]) -> str | None:
    """The one table every judged document belongs to (None: nothing judged); several is refused."""
    tables = sorted({d.table_name for r in rows for d in [*r["relevant"], *(r.get("nonrelevant") or [])]})
    if len(tables) > 1:
        raise InputError(f"the golden set judges records of several tables ({', '.join(tables)}): "
                         "load golden reads bare ids of one table, so it cannot be exported")
    return tables[0] if tables else None


def _line(row: dict[str, Any], kept: dict[str, dict], frequency: int | None, embeddings: bool) -> dict[str, Any]:
    grades = row.get("grades") or [1] * len(row["relevant"])
    judged = {_key(d): g for d, g in zip(row["relevant"], grades, strict=True)}
    judged.update({_key(d): 0 for d in row.get("nonrelevant") or []})
    line: dict[str, Any] = {"id": _key(row["id"]), "text": row["text"]}
    if all(type(g) is int and g == 1 for g in grades):
        # no grades given: a load gives each label grade 1 as the set has it (a map's grades are stored as floats)
        line["relevant"] = [_key(d) for d in row["relevant"]]
        if row.get("nonrelevant"):
            line["nonrelevant"] = [_key(d) for d in row["nonrelevant"]]
    else:
        line["relevant"] = judged
    for field in ("category", "language", "source", "split"):
        if row.get(field) is not None:
            line[field] = row[field]
    if frequency is not None:
        line["frequency"] = frequency
    if row.get("passages"):
        line["passages"] = [{"doc": _key(p["doc"]), "quote": p["quote"], "grade": p.get("grade", 1)} for p in row["passages"]]
    provenance = {}
    for doc in judged:
        label = kept.get((record_str(row["id"]), doc))
        if label:
            provenance[doc] = {k: v for k, v in label.items() if v is not None}
    if provenance:
        line["provenance"] = provenance
    if embeddings and row.get("embedding") is not None:
        line["embedding"] = row["embedding"]
    return line


def export_golden(db: Database, path: str | Path, *, golden: str | None = None, embeddings: bool = False,
                  force: bool = False) -> ExportReport:
    """Write golden set `golden` (else the default one) to `path` as JSONL `load golden` reads back (see the
    module docstring). Refused in one line, nothing written: an existing `path` unless `force`, a golden set
    that does not exist, judged documents of several tables."""
    path = Path(path)
    if path.exists() and not force:
        raise InputError("the file exists: pass --force to replace it", source=str(path))
    if path.is_dir():
        raise InputError("is a folder, not a file", source=str(path))
    chosen = golden_set(db, golden)
    rows = golden_rows(db, chosen)
    table = _label_table(rows)
    labels = db.value("RETURN fn::seval::label_provenance($name)", {"name": chosen.name})
    kept = {(record_str(r["question"]), str(r["doc"])): {
        "source": r["source"], "by": r.get("by"), "note": r.get("note"),
        "added_at": r["added_at"].isoformat() if r.get("added_at") else None,
        "origin": "harness" if r["origin"] == "harness" else None} for r in labels}
    frequency = {} if chosen.attached else {
        record_str(r["id"]): r["frequency"] for r in db.value("RETURN fn::seval::question_frequencies()")}
    lines = [_line(row, kept, frequency.get(record_str(row["id"])), embeddings) for row in rows]
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            for line in lines:
                stream.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(temporary, path)
    except OSError as error:
        if temporary:
            Path(temporary).unlink(missing_ok=True)
        raise InputError(f"cannot write the export: {error.strerror}", source=str(path)) from None
    return ExportReport(golden=chosen.name, path=str(path), questions=len(lines),
                        judgments=sum(len(line["relevant"]) + len(line.get("nonrelevant", [])) for line in lines),
                        harness_labels=sum(1 for r in labels if r["origin"] == "harness"), label_table=table,
                        embeddings=embeddings)
