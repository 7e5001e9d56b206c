"""The load journal: what an unfinished move left, and putting it right after a kill or a failure.

A load moves staged rows (`_ingest_<table>`) into place under a journal row (`seval_ingest_journal`,
surql/ingest.surql) and an undo table (`seval_undo_<table>`) holding what each write replaced; see
`load.bulk` for how a load runs. `recover_loads` undoes a move still 'moving' and builds the HNSW
index of one left 'indexing'. It is opened by `store.opening.connect` for embedded stores, and by
every load and `init`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import StoreBusy
from .connection import Database
from .defaults import DEFAULT_ANALYZER
from .schema import harness_config, statement, surql_dir, render

__all__ = ["STAGING_PREFIX", "UNDO_PREFIX", "MOVE_PART", "STALE_LOAD", "JOURNAL", "corpus_template",
           "staging_tables", "remove_staging", "index_statements", "build_hnsw", "recover_loads"]

#: Staging tables are named this prefix + the target table.
STAGING_PREFIX = "seval_stage_"
#: A move saves what it replaces in a table named this prefix + the target table.
UNDO_PREFIX = "seval_undo_"
#: Rows a move writes per transaction; a move of at most this many rows is one transaction. A part
#: writes ~40 KB a 384-d document (row, undo, BM25 postings): far less than a memtable, so the
#: store can flush between parts (Database.flush_if_full). 1,000 and 5,000 load equally fast.
MOVE_PART = 1000
#: On a server, a load whose move committed nothing for this long (seconds) is taken as dead and
#: undone by the next load; a busier one makes the next load wait.
STALE_LOAD = 15 * 60
#: The table recording unfinished moves (surql/ingest.surql).
JOURNAL = "seval_ingest_journal"


def corpus_template(name: str, table: str, dimension: int, analyzer: str = DEFAULT_ANALYZER) -> str:
    """surql/<name>.surql (corpus or corpus_indexes) rendered for corpus table `table` (its BM25 index with `analyzer`)."""
    text = (surql_dir() / f"{name}.surql").read_text(encoding="utf-8")
    return render(text, {"corpus": table, "dimension": dimension, "analyzer": analyzer}, source=f"surql/{name}.surql")


def staging_among(tables: Iterable[str]) -> list[str]:
    """The staging and undo tables among `tables`, sorted."""
    return sorted(t for t in tables if t.startswith((STAGING_PREFIX, UNDO_PREFIX)))


def staging_tables(db: Database) -> list[str]:
    """The staging and undo tables in the database (left by a load that was killed, when none is running)."""
    return staging_among(db.value("INFO FOR DB")["tables"])


def remove_staging(db: Database, tables: Iterable[str] | None = None) -> None:
    """Remove the staging and undo tables (of `tables`, the database's tables if already read)."""
    names = staging_tables(db) if tables is None else staging_among(tables)
    for table in names:
        db.query(statement("REMOVE TABLE IF EXISTS {{staging}}", staging=table))


def index_statements(table: str, dimension: int, analyzer: str = DEFAULT_ANALYZER) -> dict[str, str]:
    """The statements of surql/corpus_indexes.surql for `table` (its BM25 index with `analyzer`), by index name:
    each index's DEFINE with the statements that follow it in the file (the HNSW index's: recording its build)."""
    text = "\n".join(line for line in corpus_template("corpus_indexes", table, dimension, analyzer).splitlines()
                     if not line.lstrip().startswith("--"))
    parts = [p.strip() for p in re.split(r"^(?=DEFINE INDEX )", text, flags=re.MULTILINE) if p.strip()]
    return {re.match(r"DEFINE INDEX OVERWRITE (\w+) ON", p).group(1): p for p in parts}


def build_hnsw(db: Database, table: str, dimension: int) -> None:
    """Build `table`'s HNSW index over its committed rows in one pass, and close the table's journal
    in the same transaction. (It writes 6 to 11 KB a 384-d document: the store may flush first.)"""
    db.flush_if_full()
    db.atomic("\n".join([index_statements(table, dimension)[f"{table}_embedding"],
                         statement("DELETE type::record('seval_ingest_journal', '{{target}}');", target=table)]))


def unfinished_moves(db: Database, tables: Iterable[str]) -> list[dict[str, Any]]:
    """The unfinished moves, last first, with how long since each made progress (seconds)."""
    if JOURNAL not in tables:
        return []
    return db.value(f"SELECT record::id(id) AS target, undo, existed, corpus, state, position, updated, "
                    f"duration::secs(time::now() - updated) AS idle FROM {JOURNAL} ORDER BY position DESC")


def recover_loads(db: Database, *, stale_after: float | None = None, tables: list[str] | None = None) -> list[str]:
    """Finish or undo the moves a killed or failed load left unfinished; the tables put right.

    A move still 'moving' is undone a part at a time (each part one transaction, so a recovery that
    is itself killed goes on where it stopped); a move 'indexing' gets its HNSW index built. With
    `stale_after` (seconds), only moves idle that long are touched: on a server another load may be
    running. The staging and undo tables are then removed, no move being left unfinished. `tables`: the
    database's tables (INFO FOR DB) when the caller has just read them.
    """
    tables = list(db.value("INFO FOR DB")["tables"] if tables is None else tables)  # recovery adds no table: read once
    journals = unfinished_moves(db, tables)
    live = [j for j in journals if stale_after is not None and j["idle"] < stale_after]
    if live:
        raise StoreBusy(f"a load into {live[0]['target']} is in progress (it last moved rows "
                        f"{live[0]['idle']} s ago): wait for it to finish")
    config = harness_config(db) if journals else None
    put_right = []
    for journal in journals:
        target = journal["target"]
        if journal["state"] == "indexing":
            build_hnsw(db, target, config.dimension)
        elif not journal["existed"]:
            db.atomic(statement("REMOVE TABLE IF EXISTS {{target}};\nDELETE type::record('seval_corpus', '{{target}}');\n"
                           "DELETE type::record('seval_ingest_journal', '{{target}}');", target=target))
        else:
            while db.value("RETURN fn::seval::undo_moved($target, $undo, $limit)",
                           {"target": target, "undo": journal["undo"], "limit": MOVE_PART}):
                db.flush_if_full()
            if journal["corpus"]:  # the rows are as they were: the indexes next, as after a load
                db.query(statement("UPDATE type::record('seval_ingest_journal', '{{target}}') SET state = 'indexing' "
                              "RETURN NONE", target=target))
                build_hnsw(db, target, config.dimension)
            else:
                db.query(statement("DELETE type::record('seval_ingest_journal', '{{target}}')", target=target))
        put_right.append(target)
    remove_staging(db, tables)
    return put_right


# ------------------------------------------------------------------------------------ questions
