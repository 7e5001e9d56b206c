"""Attach a table the user already has as a corpus, in place: nothing of it is copied or altered.

`attach_table` records in the table's seval_corpus row which of its fields hold the content, the
embedding, the title and the document of each record, and which of its own indexes the retrievers
go through: its FULLTEXT index on the content field (the BM25 list, analyzer included) and its
HNSW index on the embedding field (the vector list), both read from `INFO FOR TABLE`. The
retrievers' branches for the table are then rendered into surql/attached.surql's functions.

Without such an index the attach is refused, unless `index=True`, which defines a harness-owned one
(named `harness_<table>_<field>`, recorded in seval_object): the only change an attach can make
to the table, and only when asked. Golden-set labels may then name the table's records
(load_golden(label_table=...)); a labelled record cannot be deleted (the label's REFERENCE, held on
the question's side), and a run refuses labels that no longer exist.
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel

from ..errors import InputError
from ..store.analyzers import DEFAULT_ANALYZER, check_analyzer, record_analyzers
from ..store.connection import Database
from ..store.journal import STAGING_PREFIX, UNDO_PREFIX
from ..store.ownership import record_owned, refuse_conflicts
from ..store.schema import DOCUMENTS, apply, attached_script, attached_tables, identifier, render, require_config

__all__ = ["AttachReport", "attach_table", "harness_index_name"]

_FULLTEXT = re.compile(r"\bFIELDS\s+(\S+)\s+FULLTEXT\b")
_HNSW = re.compile(r"\bFIELDS\s+(\S+)\s+HNSW\s+DIMENSION\s+(\d+)")
_INDEX_STATEMENTS = {
    "content": "DEFINE INDEX OVERWRITE {{index}} ON {{table}} FIELDS {{field}} FULLTEXT ANALYZER {{analyzer}} BM25;",
    "embedding": "DEFINE INDEX OVERWRITE {{index}} ON {{table}} FIELDS {{field}} HNSW DIMENSION {{dimension}} DIST COSINE;",
}


class AttachReport(BaseModel):
    """What an attach recorded: the table, its fields, the indexes used and those it defined."""

    table: str
    content: str
    embedding: Optional[str] = None
    title: Optional[str] = None
    doc: Optional[str] = None
    bm25_index: str
    vector_index: Optional[str] = None
    #: indexes this attach defined (only with index=True), harness-owned
    defined: list[str] = []
    records: int


def harness_index_name(table: str, field: str) -> str:
    """The name of a harness-owned index on `field` of attached table `table`."""
    return identifier(f"seval_{table}_{field}", what="index name")


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
    *,
    content: str,
    embedding: str | None = None,
    title: str | None = None,
    doc: str | None = None,
    index: bool = False,
    analyzer: str | None = None,
) -> AttachReport:
    """Register user table `table` as a corpus, in place, reading `content` (and `embedding`, `title`,
    `doc`: the field naming each record's document) from its own fields; see the module docstring.
    A BM25 index defined with `index` uses `analyzer` (store/analyzers.py; default DEFAULT_ANALYZER)."""
    config = require_config(db)
    chosen = DEFAULT_ANALYZER if analyzer is None else check_analyzer(db, analyzer)
    table = identifier(table, what="table")
    fields = {"content": identifier(content, what="--content field"),
              "embedding": embedding and identifier(embedding, what="--embedding field"),
              "title": title and identifier(title, what="--title field"), "doc": doc and identifier(doc, what="--doc field")}
    _check_table(db, table)
    indexes = db.value("INFO FOR TABLE $t", {"t": table})["indexes"]
    records = db.value("RETURN count(SELECT id FROM type::table($t))", {"t": table})
    if records and not db.value("RETURN count(SELECT id FROM type::table($t) WHERE type::is_string(type::field($f)) LIMIT 1)",
                                {"t": table, "f": fields["content"]}):
        raise InputError(f"table {table} has no record with a text field {fields['content']}: check --content")

    found: dict[str, str] = {}
    defining: list[str] = []
    owned: list[tuple[str, str]] = []
    for role, pattern, flag in (("content", _FULLTEXT, "FULLTEXT"), ("embedding", _HNSW, "HNSW")):
        field = fields[role]
        if field is None:
            continue
        own = _own_index(indexes, pattern, field)
        if own is not None:
            name, dimension = own
            if dimension is not None and dimension != config.dimension:
                raise InputError(f"index {name} of table {table} holds {dimension}-d vectors; the harness was "
                                 f"imported with dimension {config.dimension}")
            if role == "content" and analyzer is not None:
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
        defining.append(render(_INDEX_STATEMENTS[role], {"index": name, "table": table, "field": field,
                                                         "dimension": config.dimension, "analyzer": chosen}, source="attach"))
        owned.append(("index", f"{table}.{name}"))
    refuse_conflicts(db, owned, action=f"attaching {table}")

    row = {**fields, "attached": True, "bm25_index": found["content"], "vector_index": found.get("embedding")}
    rows = [r for r in attached_tables(db) if r["table"] != table] + [{**row, "table": table}]
    script = attached_script(sorted(rows, key=lambda r: r["table"]), config)
    apply(db, "\n".join(defining) + "\nUPSERT type::record('seval_corpus', $table) CONTENT $row RETURN NONE;\n" + script,
          {"table": table, "row": row})
    if owned:
        record_owned(db, owned)
    record_analyzers(db)
    # its lists kept for reuse are of the table as it was attached before (a new graph if indexed now)
    db.value("RETURN fn::seval::prune_candidate_cache($rebuilt)", {"rebuilt": [table] if defining else []})
    return AttachReport(table=table, **fields, bm25_index=found["content"],
                        vector_index=found.get("embedding"), defined=[n.split(".", 1)[1] for _, n in owned], records=records)
