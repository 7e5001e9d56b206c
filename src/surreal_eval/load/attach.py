"""Attach a table the user already has as a corpus, in place: nothing of it is copied or altered.

`attach_table` records in the table's seval_corpus row which of its fields hold the content, the
embedding, the title and the document of each record, and which of its own indexes the retrievers
go through: its FULLTEXT index on the content field (the BM25 list, analyzer included) and its
HNSW index on the embedding field (the vector list), both read from `INFO FOR TABLE`. The
retrievers' branches for the table are then rendered into surql/attached.surql's functions.

BM25 searches the fields `bm25_fields` names, each through a FULLTEXT index on it alone (the list's score is the
sum of their BM25 scores: a FULLTEXT index covers one field, and the user's table gains no field joining them). By
default: the title and the content when `title` names a field that has such an index (or `index=True` defines one),
else the content alone, and the report says why (`bm25_note`).

Without such an index the attach is refused, unless `index=True`, which defines a harness-owned one
(named `seval_<table>_<field>`, recorded in seval_object): the only change an attach can make
to the table, and only when asked. Golden-set labels may then name the table's records
(load_golden(label_table=...)), and, when `doc` names each record's document, records of the tables
those documents are in (the parents, found by reading the doc field; nothing is defined on them).
A labelled record can always be deleted by the application: a run then names the label that is gone.
Fields may be paths into nested objects (`metadata.title`).
"""

from __future__ import annotations

import re
from typing import Optional


from ..model_base import Model
from ..errors import InputError
from ..store.analyzers import DEFAULT_ANALYZER, check_analyzer, record_analyzers
from ..store.connection import Database
from ..store.field_map import CorpusFields
from ..store.journal import STAGING_PREFIX, UNDO_PREFIX
from ..store.ownership import record_owned, refuse_conflicts
from ..store.schema import DOCUMENTS, apply, attached_script, attached_tables, field_path, FieldPath, identifier, record_attached_script, render, require_config

__all__ = ["AttachReport", "CorpusFields", "attach_table", "harness_index_name"]

_FULLTEXT = re.compile(r"\bFIELDS\s+(\S+)\s+FULLTEXT\b")
_HNSW = re.compile(r"\bFIELDS\s+(\S+)\s+HNSW\s+DIMENSION\s+(\d+)")
_INDEX_STATEMENTS = {
    "content": "DEFINE INDEX OVERWRITE {{index}} ON {{table}} FIELDS {{field}} FULLTEXT ANALYZER {{analyzer}} BM25;",
    "embedding": "DEFINE INDEX OVERWRITE {{index}} ON {{table}} FIELDS {{field}} HNSW DIMENSION {{dimension}} DIST COSINE;",
}


class AttachReport(Model):
    """What an attach recorded: the table, its fields, the indexes used and those it defined."""

    table: str
    content: str
    embedding: Optional[str] = None
    title: Optional[str] = None
    doc: Optional[str] = None
    bm25_index: str
    #: the fields BM25 searches, and the FULLTEXT index it reads on each
    bm25_fields: list[str] = []
    bm25_indexes: list[str] = []
    #: why BM25 searches the content alone though a title field was named (None: it searches what was asked)
    bm25_note: Optional[str] = None
    vector_index: Optional[str] = None
    #: indexes this attach defined (only with index=True), harness-owned
    defined: list[str] = []
    records: int
    #: records whose content field holds no text, those with no text in any BM25 field (never found by BM25), and
    #: with --embedding, records with no vector
    missing_content: int = 0
    missing_bm25: int = 0
    missing_embedding: int = 0
    #: the tables the doc field's records are in: labels may name their records
    parents: list[str] = []


def harness_index_name(table: str, field: str) -> str:
    """The name of a harness-owned index on `field` of attached table `table`."""
    return identifier(f"seval_{table}_{field.replace('.', '_')}", what="index name")


def _own_index(indexes: dict[str, str], pattern: re.Pattern[str], field: str) -> tuple[str, int | None] | None:
    """(name, dimension) of the first index in `indexes` (INFO FOR TABLE) of kind `pattern` on `field` alone."""
    for name, ddl in sorted(indexes.items()):
        found = pattern.search(ddl)
        if found and found[1] == field:
            return name, int(found[2]) if pattern is _HNSW else None
    return None


def _check_table(db: Database, table: str) -> None:
    """Refuse a table that does not exist, or is the harness's own (its tables and its corpus tables)."""
    tables = db.value("INFO FOR DB")["tables"]
    if table not in tables:
        raise InputError(f"table {table} does not exist: attach names a table the database already holds")
    owned = "seval_object" in tables and db.value(
        "RETURN record::exists(type::record('seval_object', 'table:' + $t))", {"t": table})
    row = db.value("SELECT * FROM ONLY type::record('seval_corpus', $t)", {"t": table})
    if owned or table == DOCUMENTS or table.startswith((STAGING_PREFIX, UNDO_PREFIX)) or (
            row is not None and not row.get("attached")):
        raise InputError(f"table {table} is the harness's own: attach is for a table of yours (load corpus fills this one)")


def _field_dimension(db: Database, table: str, field: str) -> int | None:
    """The length of field `field` of the first record of `table` that has it, None if none has."""
    return db.value("RETURN array::len((SELECT VALUE type::field($f) FROM type::table($t) WHERE type::field($f) != NONE "
                    "LIMIT 1)[0] ?? []) OR NONE", {"t": table, "f": field})


def attach_table(
    db: Database,
    table: str,
    fields: CorpusFields | None = None,
    *,
    index: bool = False,
    analyzer: str | None = None,
    bm25_fields: list[str] | None = None,
    **named: str | None,
) -> AttachReport:
    """Register user table `table` as a corpus, in place, reading each record's content (and embedding, title, doc:
    the field naming its document) from the table's own fields that `fields` names, or the same given as keyword
    arguments (content="body", embedding="vec"); BM25 searches `bm25_fields` (default: see the module docstring).
    A BM25 index defined with `index` uses `analyzer` (store/analyzers.py; default DEFAULT_ANALYZER)."""
    config = require_config(db)
    chosen = DEFAULT_ANALYZER if analyzer is None else check_analyzer(db, analyzer)
    table = identifier(table, what="table")
    mapped = CorpusFields.given(fields, named).model_dump()
    _check_table(db, table)
    indexes = db.value("INFO FOR TABLE $t", {"t": table})["indexes"]
    searched, note = _bm25_fields(table, mapped, bm25_fields, indexes, index)
    counts = _counts(db, table, mapped, searched)
    records = counts["records"]
    if records and counts["content"] == records:
        raise InputError(f"table {table} has no record with text in field {mapped['content']}: check --content")
    if records and mapped["embedding"] and counts["embedding"] == records:
        raise InputError(f"table {table} has no record with a vector in field {mapped['embedding']}: check --embedding, "
                         f"or attach without it (BM25 only)")
    parents = _parents(db, table, mapped["doc"]) if mapped["doc"] else []

    found: dict[str, str] = {}
    defining: list[str] = []
    defined_roles: list[str] = []
    owned: list[tuple[str, str]] = []
    roles = [(f"bm25:{field}", field, _FULLTEXT, "FULLTEXT") for field in searched]
    for role, field, pattern, flag in roles + [("embedding", mapped["embedding"], _HNSW, "HNSW")]:
        if field is None:
            continue
        own = _own_index(indexes, pattern, field)
        if own is not None:
            name, dimension = own
            if dimension is not None and dimension != config.dimension:
                raise InputError(f"index {name} of table {table} holds {dimension}-d vectors; the harness was "
                                 f"imported with dimension {config.dimension}")
            if role != "embedding" and analyzer is not None:
                raise InputError(f"--analyzer: table {table} has its own FULLTEXT index {name} on {field}, which keeps its "
                                 f"analyzer; --analyzer applies only to an index --index defines")
            found[role] = name
            continue
        if role == "embedding":
            stored = _field_dimension(db, table, field)
            if stored is not None and stored != config.dimension:
                raise InputError(f"field {field} of table {table} holds {stored}-d vectors; the harness was "
                                 f"imported with dimension {config.dimension}")
        name = harness_index_name(table, field)
        if not index:
            raise InputError(f"table {table} has no {flag} index on {field}: give --index to define a harness-owned "
                             f"one ({name}), or define your own and attach again")
        found[role] = name
        defined_roles.append(role)
        statement_of = _INDEX_STATEMENTS["embedding" if role == "embedding" else "content"]
        defining.append(render(statement_of, {"index": name, "table": table, "field": FieldPath(field),
                                              "dimension": config.dimension, "analyzer": chosen}, source="attach"))
        owned.append(("index", f"{table}.{name}"))
    refuse_conflicts(db, owned, action=f"attaching {table}")

    bm25_indexes = [found[f"bm25:{field}"] for field in searched]
    # bm25_index: the index whose analyzer a run records (fn::seval::corpus_analyzer): the content field's, else the first
    bm25_index = bm25_indexes[searched.index(mapped["content"])] if mapped["content"] in searched else bm25_indexes[0]
    row = {**mapped, "attached": True, "bm25_index": bm25_index, "bm25_fields": searched, "bm25_indexes": bm25_indexes,
           "vector_index": found.get("embedding"), "parents": parents}
    rows = [r for r in attached_tables(db) if r["table"] != table] + [{**row, "table": table}]
    script = attached_script(sorted(rows, key=lambda r: r["table"]), config)
    # vector_built: when the harness built the table's HNSW graph (now, when it defines the index over rows; kept
    # while the index stays the one it built), which a run records (fn::seval::corpus_fingerprint); state: the
    # digests the last run found (surql/incremental.surql), kept while the fields read stay the same
    built = records > 0 and "embedding" in defined_roles
    apply(db, "\n".join(defining) + "\nLET $before = type::record('seval_corpus', $table).*;\n"
          "UPSERT type::record('seval_corpus', $table) CONTENT object::extend($row, { vector_built: IF $built { time::now() } "
          "ELSE IF $before.vector_index = $row.vector_index { $before.vector_built } ELSE { NONE }, "
          "state: IF [$before.content, $before.embedding, $before.title] = [$row.content, $row.embedding, $row.title] "
          "{ $before.state } ELSE { NONE } }) RETURN NONE;\n" + script,
          {"table": table, "row": row, "built": built})
    record_attached_script(db, script)
    if owned:
        record_owned(db, owned)
    record_analyzers(db)
    # its lists kept for reuse are of the table as it was attached before (keyed by its index definitions;
    # its state, surql/incremental.surql, went with its seval_corpus row: the next run takes it anew)
    db.value("RETURN fn::seval::prune_candidate_cache()")
    return AttachReport(table=table, **mapped, bm25_index=bm25_index, bm25_fields=searched, bm25_indexes=bm25_indexes,
                        bm25_note=note, vector_index=found.get("embedding"),
                        defined=[n.split(".", 1)[1] for _, n in owned], records=records, missing_content=counts["content"],
                        missing_bm25=counts["bm25"],
                        missing_embedding=counts["embedding"] if mapped["embedding"] else 0, parents=parents)


def _bm25_fields(table: str, fields: dict[str, str | None], asked: list[str] | None, indexes: dict[str, str],
                 index: bool) -> tuple[list[str], str | None]:
    """The fields BM25 searches on `table` (`asked`, checked; by default title and content, or the content alone
    when the title field has no FULLTEXT index of its own and `index` is not given) and the note saying why the
    default left the title out (None when it did not)."""
    if asked is not None:
        chosen = [str(field_path(f.strip(), what="--bm25-fields field")) for f in asked]
        if not chosen:
            raise InputError("--bm25-fields names no field: give one or more, e.g. --bm25-fields title,content")
        if len(set(chosen)) != len(chosen):
            raise InputError(f"--bm25-fields names a field twice: {','.join(chosen)}")
        return chosen, None
    content, title = fields["content"], fields["title"]
    if title is None or title == content:
        return [content], None
    if index or _own_index(indexes, _FULLTEXT, title) is not None:
        return [title, content], None
    return [content], (f"BM25 searches {content} alone: {title} has no FULLTEXT index of its own; give --index to define "
                       f"{harness_index_name(table, title)} and search both, or --bm25-fields {content} to say so")


def _counts(db: Database, table: str, fields: dict[str, str | None], searched: list[str]) -> dict[str, int]:
    """How many records `table` has, how many hold no text in the content field, how many in none of the BM25
    fields `searched` (BM25 never finds them), and how many no vector in the embedding field (0 without one)."""
    return db.value(
        "LET $rows = SELECT type::is_string(type::field($c)) AND string::len(type::field($c)) > 0 AS text, "
        "$b.all(|$f| !(type::is_string(type::field($f)) AND string::len(type::field($f)) > 0)) AS unsearched, "
        "(IF $e { type::is_array(type::field($e)) AND array::len(type::field($e)) > 0 } ELSE { true }) AS vector "
        "FROM type::table($t); "
        "RETURN { records: array::len($rows), content: array::len($rows[WHERE !text]), bm25: array::len($rows[WHERE unsearched]), "
        "embedding: array::len($rows[WHERE !vector]) }",
        {"t": table, "c": fields["content"], "e": fields["embedding"], "b": searched})


def _parents(db: Database, table: str, doc: str) -> list[str]:
    """The tables the records field `doc` of `table` names are in (the documents its records belong to), but itself."""
    found = db.value("RETURN array::distinct(SELECT VALUE record::tb(type::field($f)) FROM type::table($t) "
                     "WHERE type::is_record(type::field($f)))", {"t": table, "f": doc})
    return sorted(t for t in found if t != table)
