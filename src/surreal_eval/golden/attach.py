"""A golden set the user already keeps in a table of their own, registered in place (`golden attach`):
never copied and never written. Its registry row (table seval_golden) names the field holding each
thing the harness reads of a question; every run reads the questions through it (surql/golden.surql),
so a label the user edits counts at the next run. What the harness keeps of those questions lives on
its side, keyed by the question's id (table seval_question_extra): the dev/test split, and an
embedding computed by the configured embedder when the table has none (with the digest of the text it
was computed from, so a question whose text changed is embedded again by the next attach).
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional


from ..model_base import Model
from ..errors import ConfigError, InputError
from ..store.connection import Database, record_str
from ..store.field_map import GoldenFields
from ..store.golden import OWN_GOLDEN, GoldenSet, golden_rows
from ..store.schema import PREFIX, identifier, require_config
from ..load.embedders import Embedder
from .labels import who

__all__ = ["GoldenAttachReport", "GoldenFields", "attach_golden", "detach_golden", "golden_sets", "list_dangling"]


class GoldenAttachReport(Model):
    """What `golden attach` registered and found: the table, its fields, and its questions' state."""

    table: str
    fields: dict[str, Optional[str]]
    questions: int
    labels: int
    #: labels whose record is gone (each stops a run, or counts as a miss with --dangling-labels miss)
    dangling: int = 0
    #: questions the embedder embedded now (the table has no embedding field)
    embedded: int = 0
    #: questions with no embedding (no field, no embedder): only retrievers without vectors can run
    unembedded: int = 0
    #: whether the table was attached before (the fields are replaced)
    again: bool = False


def _check_table(db: Database, table: str) -> None:
    tables = db.value("INFO FOR DB")["tables"]
    if table not in tables:
        raise InputError(f"table {table} does not exist: golden attach names a table the database already holds")
    if table.startswith(PREFIX):
        raise InputError(f"table {table} is the harness's own: golden attach is for a table of yours "
                         f"(load golden fills {OWN_GOLDEN})")
    if db.value("RETURN fn::seval::is_corpus_table($t)", {"t": table}):
        raise InputError(f"table {table} is attached as a corpus: a golden set is another table (its questions and labels)")


def _problems(table: str, fields: dict[str, Optional[str]], rows: list[dict[str, Any]], dimension: int) -> None:
    """Refuse a table whose questions cannot be read as a golden set, naming the first question that cannot."""
    if not rows:
        raise InputError(f"table {table} has no records: golden attach needs the questions there")
    checks = [
        (lambda r: not isinstance(r.get("text"), str) or not r["text"].strip(), f"has no text in field {fields['text']}"),
        (lambda r: not r["relevant"], f"has no labels in field {fields['relevant']}"),
        (lambda r: fields["grades"] and (not isinstance(r.get("grades"), list) or len(r["grades"]) != len(r["relevant"])
                                         or not all(isinstance(g, (int, float)) and not isinstance(g, bool) and g > 0 for g in r["grades"])),
         f"has grades in field {fields['grades']} that are not one positive number per label"),
        (lambda r: r.get("embedding") is not None and (not isinstance(r["embedding"], list) or len(r["embedding"]) != dimension),
         f"has an embedding in field {fields['embedding']} that is not {dimension} numbers (the harness's dimension)"),
    ]
    for bad, says in checks:
        found = [r for r in rows if bad(r)]
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise InputError(f"question {record_str(found[0]['id'])} of {table} {says}{more}; nothing was attached")


def attach_golden(
    db: Database, table: str, fields: GoldenFields | None = None, *, embedder: Embedder | None = None, **named: str | None
) -> GoldenAttachReport:
    """Register user table `table` as a golden set, in place: its questions' text, labels (records of
    an attached corpus, or of the tables their records belong to) and optional embedding, grades,
    category and language are read from the fields `fields` names (or the same given as keyword
    arguments: text="ask", relevant="gold", ...), at every run. Refused, with nothing
    changed: a table that does not exist or is the harness's, a field that is not a field, a table with
    no questions, a question with no text or no labels, grades that are not one positive number per
    label, an embedding of another dimension, a label that is not a record of such a table. Labels
    whose record is gone are counted, not refused. With no `embedding` field, `embedder` embeds each
    question (kept on the harness's side); attaching again replaces the fields and embeds the
    questions added or changed since."""
    config = require_config(db)
    table = identifier(table, what="golden table")
    mapped = GoldenFields.given(fields, named).model_dump()
    _check_table(db, table)
    golden = GoldenSet(name=table, attached=True, fields=mapped)
    rows = golden_rows(db, golden)
    _problems(table, mapped, rows, config.dimension)
    misplaced = db.value("RETURN fn::seval::label_problem($g, $rows, 'miss').problem", {"g": golden.model_dump(), "rows": rows})
    if misplaced:
        raise InputError(f"{misplaced}; nothing was attached")
    dangling = db.value("RETURN fn::seval::dangling_labels($rows)", {"rows": rows})
    to_embed = [r for r in rows if r.get("embedding") is None]
    extras = []
    if to_embed and embedder is not None:
        vectors = embedder.embed([r["text"] for r in to_embed])
        for row, vector in zip(to_embed, vectors, strict=True):
            if len(vector) != config.dimension:
                raise ConfigError(f"the embedder returned {len(vector)}-d vectors; the harness was imported with dimension "
                                  f"{config.dimension}")
            extras.append({"id": row["id"], "embedding": vector,
                           "text_digest": hashlib.sha256(row["text"].encode("utf-8")).hexdigest()})
    again = db.value("RETURN fn::seval::is_golden($t)", {"t": table})
    # (the same fields again: the row as it is, what the last run saw of the set kept)
    db.value("RETURN fn::seval::attach_golden_table($t, $fields, $extras)",
             {"t": table, "fields": {key: field for key, field in mapped.items() if field}, "extras": extras})
    # the harness sees these labels now: their provenance (source 'table') and the digest of each document's text
    db.value("RETURN fn::seval::see_golden_labels($t, 'table', $by)", {"t": table, "by": who()})
    return GoldenAttachReport(table=table, fields=mapped, questions=len(rows), labels=sum(len(r["relevant"]) for r in rows),
                              dangling=len(dangling), embedded=len(extras),
                              unembedded=len(to_embed) - len(extras), again=bool(again))


def detach_golden(db: Database, table: str) -> int:
    """Forget attached golden set `table` (its registry row and what the harness kept of its questions);
    the table itself is untouched and the runs that measured it stay in history. Returns how many
    questions' extras were removed."""
    table = identifier(table, what="golden table")
    row = db.value("RETURN fn::seval::golden_registration($t)", {"t": table})
    if row is None or not row.get("attached"):
        raise InputError(f"{table} is not an attached golden set (surreal-eval golden list shows them)")
    kept = db.value("RETURN fn::seval::detach_golden_table($t)", {"t": table})
    return kept


def golden_sets(db: Database) -> list[dict[str, Any]]:
    """Every golden set: {name, attached, fields, questions}, the harness's own first."""
    rows = db.value("RETURN fn::seval::golden_sets()")
    return sorted(rows, key=lambda r: (r["attached"], r["name"]))


def list_dangling(db: Database, golden: GoldenSet) -> list[dict[str, str]]:
    """Every label of `golden` whose record is gone, as {question, label}, in question order."""
    found = db.value("RETURN fn::seval::dangling_labels(fn::seval::golden_rows($g, NONE, NONE))", {"g": golden.model_dump()})
    return [{"question": record_str(d["question"]), "label": record_str(d["label"])} for d in found]
