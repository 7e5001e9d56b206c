"""Bulk loads of documents (and, through golden/files.py, of golden-set questions): all or nothing, in bounded memory.

How a load runs (the engine facts behind each step are in SURREALDB.md, "Loading"):

1. What a killed load left unfinished is put right (`recover_loads`): an unfinished move is undone,
   and its staging tables (`seval_stage_*`) are removed.
2. Rows are checked one at a time (embedding dimension, labels, grades) and written in batches of
   `batch_size`, one `INSERT ... RETURN NONE` per batch, into a schemaless staging table
   `seval_stage_<table>`. Embeddings the rows lack are computed by `embedder`, one call per batch.
   Python holds one batch at a time, plus the ids seen (to find duplicates).
3. Problems that need every row are collected and refused together, in one message: duplicate
   ids (with the file and both lines; `on_duplicate` 'first' or 'last' keeps one of each), labels naming
   documents that do not exist, questions with no labels, rows with no embedding and no embedder to compute one.
4. The staged rows move into place: (re)define the corpus table, remove its HNSW index, write
   every staged row by id (replacing a record that exists, so labels pointing at it stay valid;
   the BM25 index is kept up to date as rows are written), remove the staging table. Up to
   MOVE_PART rows this is one transaction. A larger move commits MOVE_PART rows per transaction,
   saving what each write replaces in an undo table, under a journal row (surql/ingest.surql)
   that makes the move all-or-nothing all the same: a failure, or the next load or open of the
   store after a killed one, undoes it (`recover_loads`). Between parts an embedded store may be
   reopened to flush (`Database.flush_if_full`): its engine never flushes on its own.
5. The HNSW index is defined again and built in one pass over the whole table (the embedded engine
   never builds an HNSW graph in the background), in the transaction that closes the journal.
   This cannot be the transaction that wrote the rows: an index defined in the transaction that
   inserted the rows is built from the rows committed before it, and comes out empty.

Any failure before the index build undoes the move and removes the staging tables: the database is
exactly as it was. (Should the index build itself fail, the rows stay loaded, and the next load or
open of the store builds the index.) Nothing here prints: progress goes to a callback,
`progress(step, done, total)`, called as each batch or step completes (`total` None if unknown).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, Unpack


from ..model_base import Model
from ..errors import ConfigError, on_interrupt
from ..models import Article
from ..store.analyzers import table_analyzer
from ..store.connection import Database
from ..store.journal import STAGING_PREFIX, STALE_LOAD, UNDO_PREFIX, recover_loads, remove_staging, staging_tables
from ..store.schema import (DOCUMENTS, HARNESS_SCRIPTS, corpus_tables, harness_table, identifier, record_article_indexes, surql_dir,
                            upgrade_corpus_table)
from .move import Move, move_all
from .rows import DEFAULT_BATCH_SIZE
from .ingests import existing, mark_ingest, record_ingest
from .staging import Load, LoadOptions, Problems, Progress, stage_documents

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "QUESTIONS",
    "STAGING_PREFIX",
    "LoadReport",
    "Progress",
    "load_corpus",
    "record_ingest",
    "recover_loads",
    "run_load",
    "staging_tables",
]

QUESTIONS = "seval_question"
#: Tables of the harness that are not corpus tables.
_NOT_CORPUS = {QUESTIONS, "seval_run", "seval_ranking", "eval_result", "seval_config", "seval_script", "seval_corpus"}


class LoadReport(Model):
    """What one load wrote into one table."""

    table: str
    loaded: int
    #: rows read but not loaded: BEIR or TREC queries with no relevant judgment
    skipped: int = 0
    #: rows whose embedding the embedder computed
    embedded: int = 0
    #: rows not loaded because another row of the file had their id (on_duplicate first or last)
    duplicates: int = 0
    #: labels loaded (questions only)
    labels: int | None = None
    #: staging INSERT statements (each at most batch_size rows)
    batches: int = 0
    seconds: float = 0.0
    #: the dimension the harness was imported with by this load, if it was missing
    harness_imported: int | None = None
    #: the ingest the load recorded (seval_ingest; evaluated afterwards when watched: runs/watch.py)
    ingest: str | None = None


# ------------------------------------------------------------------------------------ problems



@cache
def _harness_tables() -> frozenset[str]:
    """Every table the harness's SurrealQL files define, read from them (none can be a corpus table)."""
    defined = re.compile(r"DEFINE TABLE (?:OVERWRITE |IF NOT EXISTS )?(?!OVERWRITE\b|IF\b)(\w+)")  # not {{corpus}}
    found = {name for script in HARNESS_SCRIPTS
             for name in defined.findall((surql_dir() / f"{script}.surql").read_text(encoding="utf-8"))}
    return frozenset((found | _NOT_CORPUS) - {DOCUMENTS})


def _corpus_table(table: str) -> str:
    harness_table(table, what="corpus table")
    if len(STAGING_PREFIX + table) > 63:
        raise ConfigError(f"corpus table name {table!r} is too long: at most {63 - len(STAGING_PREFIX)} characters")
    if table in _harness_tables() or table.startswith((STAGING_PREFIX, UNDO_PREFIX)):
        raise ConfigError(f"{table!r} cannot be a corpus table: the harness uses that name")
    return table


def _not_another_table(db: Database, table: str, tables: list[str]) -> None:
    """Refuse to (re)define as a corpus a table that exists and is not one (the user's own table); `tables`: the
    database's (INFO FOR DB)."""
    if table in tables and ("seval_corpus" not in tables or table not in corpus_tables(db)):
        raise ConfigError(f"table {table} exists and is not a corpus table: load into another --corpus")
    if table in tables and db.value("RETURN type::record('seval_corpus', $t).attached ?? false", {"t": table}):
        raise ConfigError(f"table {table} is attached (your own table, used in place): loads never write to it; "
                          f"load into another --corpus")


def run_load(load: Load, body: Callable[[], Any]) -> Any:
    """Run a load after putting right what an earlier one left unfinished; on any failure undo what
    it moved and remove its staging tables (the database is then as it was)."""
    if recover_loads(load.db, stale_after=None if load.db.settings.is_embedded else STALE_LOAD, tables=load.tables):
        load.tables = None  # a table put right may be gone: read again where it is needed
    with on_interrupt(load.interrupted):
        try:
            return body()
        except BaseException:
            try:
                recover_loads(load.db)
                load.undone = True
            except Exception:  # the original error matters more than a failed clean-up
                log.debug("could not undo the failed load", exc_info=True)
            raise


def load_corpus(
    db: Database,
    documents: Iterable[Article],
    *,
    table: str = DOCUMENTS,
    source: str | None = None,
    doc_table: str = DOCUMENTS,
    analyzer: str | None = None,
    tables: list[str] | None = None,
    **options: Unpack[LoadOptions],
) -> LoadReport:
    """Load documents into corpus table `table` (upsert by id), all or none, then build its indexes.
    A chunk's `doc` names a record of `doc_table` (article, or the attached table it was cut from).

    The load is then marked as one ingest (watch.record_ingest), which evaluates the golden set
    inside the database when `surreal-eval watch` asked for it; the run is in the report.

    `options` say how the load runs (LoadOptions): documents without an embedding are embedded by the `embedder`
    (`title. content`); with none, they are refused; a missing harness is imported, with the dimension of the first
    embedding, unless `create_harness=False`. The table's BM25 index uses
    `analyzer`, else the one it has, else the default (store/analyzers.py). `tables`: the database's tables (INFO FOR
    DB) when the caller has just read them (Database.opened_tables, before any other statement).
    """
    tables = list(db.value("INFO FOR DB")["tables"] if tables is None else tables)  # read once for the checks before anything is staged
    _not_another_table(db, identifier(table, what="corpus table"), tables)  # a table of yours first: the message says why
    table = _corpus_table(table)
    analyzer = table_analyzer(db, table, analyzer, tables)
    load = Load(db, tables=tables, **options)
    staging = STAGING_PREFIX + table
    kind = "article" if table == DOCUMENTS else "document"
    problems = Problems("corpus")

    def body() -> LoadReport:
        staged, embedded = stage_documents(load, documents, staging, problems, kind, doc_table)
        problems.check()
        report = LoadReport(table=table, loaded=len(staged), embedded=embedded, batches=load.batches,
                            duplicates=load.dropped[staging])
        if not staged:
            remove_staging(db)
            return report.model_copy(update={"seconds": load.seconds()})
        load.ensure_harness(analyzer if table == DOCUMENTS else None)
        # a table an older version wrote: bm25_text on its rows first (store/schema.py); the tables as the load found
        # them (a harness this load imported holds no table of an older version)
        upgrade_corpus_table(db, table, tables)
        existed = existing(db, table, staged)
        move_all(load, [Move(staging, table, corpus=True, analyzer=analyzer)])
        if table == DOCUMENTS:
            record_article_indexes(db, analyzer, load.config)
        return report.model_copy(update={"seconds": load.seconds(), "harness_imported": load.harness_imported,
                                         **mark_ingest(load, table, list(staged), existed, source)})

    return run_load(load, body)
