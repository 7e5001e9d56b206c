"""Bulk ingest of documents and golden-set questions: all or nothing, in bounded memory.

How a load runs (the engine facts behind each step are in SURREALDB.md, "Loading"):

1. What a killed load left unfinished is put right (`recover_loads`): an unfinished move is undone,
   and its staging tables (`_ingest_*`) are removed.
2. Rows are checked one at a time (embedding dimension, labels, grades) and written in batches of
   `batch_size`, one `INSERT ... RETURN NONE` per batch, into a schemaless staging table
   `_ingest_<table>`. Embeddings the rows lack are computed by `embedder`, one call per batch.
   Python holds one batch at a time, plus the ids seen (to find duplicates).
3. Problems that need every row are collected and refused together, in one message: duplicate
   ids, labels naming documents that do not exist, questions with no labels, rows with no
   embedding and no embedder to compute one.
4. The staged rows move into place: (re)define the corpus table, remove its HNSW index, write
   every staged row by id (replacing a record that exists, so labels pointing at it stay valid;
   the BM25 index is kept up to date as rows are written), remove the staging table. Up to
   MOVE_PART rows this is one transaction. A larger move commits MOVE_PART rows per transaction,
   saving what each write replaces in an undo table, under a journal row (surql/ingest.surql)
   that makes the move all-or-nothing all the same: a failure, or the next load or open of the
   store after a killed one, undoes it (`recover_loads`). Between parts an embedded store may be
   reopened to flush (`Database.relieve`): its engine never flushes on its own.
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
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .connection import Database, record_str, to_record
from .embedders import Embedder
from .errors import ConfigError, EmbeddingFailed, InputError, QueryFailed, StoreBusy, SurrealEvalError
from .harness import (
    DOCUMENTS,
    HARNESS_SCRIPTS,
    HarnessConfig,
    corpus_tables,
    harness_config,
    identifier,
    import_harness,
    render,
    surql_dir,
)
from .models import Article, Question

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "STAGING_PREFIX",
    "DatasetReport",
    "LoadReport",
    "Progress",
    "load_beir",
    "load_corpus",
    "load_dataset",
    "load_golden",
    "recover_loads",
    "staging_tables",
]

#: Rows per INSERT into the staging table (measured on CISI, 384-d: 100 to 500 are equally fast).
DEFAULT_BATCH_SIZE = 250
#: Staging tables are named this prefix + the target table.
STAGING_PREFIX = "_ingest_"
#: A move saves what it replaces in a table named this prefix + the target table.
UNDO_PREFIX = "_undo_"
#: Rows a move writes per transaction; a move of at most this many rows is one transaction. A part
#: writes ~40 KB a 384-d document (row, undo, BM25 postings): far less than a memtable, so the
#: store can flush between parts (Database.relieve). 1,000 and 5,000 load equally fast.
MOVE_PART = 1000
#: On a server, a load whose move committed nothing for this long (seconds) is taken as dead and
#: undone by the next load; a busier one makes the next load wait.
STALE_LOAD = 15 * 60
#: The table recording unfinished moves (surql/ingest.surql).
JOURNAL = "ingest_journal"
QUESTIONS = "question"
#: How many ids a refusal lists per kind of problem before "(and N more)".
SHOWN = 5
#: Labels checked for existence per query.
_EXISTS_CHUNK = 1000
#: Tables of the harness that are not corpus tables.
_NOT_CORPUS = {QUESTIONS, "eval_run", "eval_ranking", "eval_result", "harness_config", "harness_script", "corpus_table"}

#: progress(step, done, total): a step ("staging documents", "embedding", "building indexes", …)
#: has done `done` of `total` units (None: unknown).
Progress = Callable[[str, int, "int | None"], None]


class LoadReport(BaseModel):
    """What one load wrote into one table."""

    table: str
    loaded: int
    #: rows read but not loaded: BEIR or TREC queries with no relevant judgment
    skipped: int = 0
    #: rows whose embedding the embedder computed
    embedded: int = 0
    #: labels loaded (questions only)
    labels: int | None = None
    #: staging INSERT statements (each at most batch_size rows)
    batches: int = 0
    seconds: float = 0.0
    #: the dimension the harness was imported with by this load, if it was missing
    harness_imported: int | None = None
    #: the run the ingest recorded (surreal-eval watch), and why it could not, if it failed
    run: str | None = None
    evaluation_error: str | None = None


class DatasetReport(BaseModel):
    """A corpus and its golden set loaded together, all or nothing."""

    corpus: LoadReport
    golden: LoadReport
    seconds: float


# ------------------------------------------------------------------------------------ problems


class _Problems:
    """Problems that need every row to be found, refused together in one line."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.shown: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}

    def add(self, kind: str, entry: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        shown = self.shown.setdefault(kind, [])
        if len(shown) < SHOWN:
            shown.append(entry)

    def check(self) -> None:
        if not self.counts:
            return
        parts = []
        for kind, count in self.counts.items():
            more = f" (and {count - SHOWN} more)" if count > SHOWN else ""
            parts.append(f"{kind}: {', '.join(self.shown[kind])}{more}")
        raise InputError(f"{self.what} refused: {'; '.join(parts)}")


# -------------------------------------------------------------------------------------- loading


class _Load:
    """One load: the database, the dimension every embedding must have, and the options."""

    def __init__(
        self,
        db: Database,
        *,
        batch_size: int,
        embedder: Embedder | None,
        progress: Progress | None,
        create_harness: bool,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch size must be a whole number of at least 1, got {batch_size!r}")
        self.db = db
        self.batch_size = batch_size
        self.embedder = embedder
        self.progress = progress
        self.started = time.perf_counter()
        config = harness_config(db)
        if config is None and not create_harness:
            raise ConfigError("the harness is not imported here: run `surreal-eval init --dimension N` first")
        self.dimension: int | None = config.dimension if config else None
        self.learnt = config is None  # the dimension comes from the first embedding of this load
        self.harness_imported: int | None = None
        self.batches = 0

    def step(self, name: str, done: int, total: int | None = None) -> None:
        if self.progress is not None:
            self.progress(name, done, total)

    def seconds(self) -> float:
        return round(time.perf_counter() - self.started, 3)

    # -- embeddings

    def check_embedding(self, kind: str, ident: str, vector: list[float]) -> None:
        if self.dimension is None:
            self.dimension = len(vector)
            if not 0 < self.dimension <= 16384:
                raise InputError(f"{kind} {ident!r}: embedding has {len(vector)} values (1 to 16384 expected)")
        if len(vector) != self.dimension:
            expected = "the first embedding of this load has" if self.learnt else "the index expects"
            raise InputError(f"{kind} {ident!r}: embedding has {len(vector)} values, {expected} {self.dimension}")
        if not all(math.isfinite(x) for x in vector):
            raise InputError(f"{kind} {ident!r}: embedding has a value that is not a finite number")

    def embed(self, texts: list[str]) -> list[list[float]]:
        name = getattr(self.embedder, "name", type(self.embedder).__name__)
        # an empty text still needs a vector (the document stays in the corpus); endpoints refuse ""
        vectors = self.embedder.embed([t if t.strip() else " " for t in texts])
        if len(vectors) != len(texts):
            raise EmbeddingFailed(f"embedder {name} returned {len(vectors)} vectors for {len(texts)} texts")
        if self.dimension is not None and vectors and len(vectors[0]) != self.dimension:
            raise EmbeddingFailed(
                f"embedder {name} makes {len(vectors[0])}-d vectors, the index expects {self.dimension}: "
                "use the embedder the corpus was embedded with, or a database initialised for that dimension")
        return [[float(x) for x in v] for v in vectors]

    # -- statements

    def insert(self, staging: str, rows: list[dict[str, Any]]) -> None:
        if rows:  # staged as {id, row}: the move writes `row` as the record's content
            staged = [{"id": r["id"], "row": {k: v for k, v in r.items() if k != "id"}} for r in rows]
            self.db.query(_sql("INSERT INTO {{staging}} $rows RETURN NONE", staging=staging), {"rows": staged})
            self.batches += 1
            self.db.relieve()

    def ensure_harness(self) -> None:
        """Import the harness with the dimension of this load's embeddings, if it is missing."""
        if not self.learnt:
            return
        if self.dimension is None:
            raise InputError("nothing to load: no embedding was read, so the index dimension is unknown")
        import_harness(self.db, HarnessConfig(dimension=self.dimension))
        self.harness_imported = self.dimension
        self.learnt = False


def _sql(template: str, **names: str) -> str:
    """A statement with table and field names (validated identifiers) substituted in one place."""
    return render(template, {k: identifier(v, what=k) for k, v in names.items()}, source="ingest")


def _template(name: str, table: str, dimension: int) -> str:
    text = (surql_dir() / f"{name}.surql").read_text(encoding="utf-8")
    return render(text, {"corpus": table, "dimension": dimension}, source=f"surql/{name}.surql")


def staging_tables(db: Database) -> list[str]:
    """The staging and undo tables in the database (left by a load that was killed, when none is running)."""
    return sorted(t for t in db.value("INFO FOR DB")["tables"] if t.startswith((STAGING_PREFIX, UNDO_PREFIX)))


def _remove_staging(db: Database, tables: Iterable[str] | None = None) -> None:
    """Remove the staging and undo tables (of `tables`, the database's tables if already read)."""
    names = staging_tables(db) if tables is None else [t for t in tables if t.startswith((STAGING_PREFIX, UNDO_PREFIX))]
    for table in names:
        db.query(_sql("REMOVE TABLE IF EXISTS {{staging}}", staging=table))


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# ------------------------------------------------------------------------------------ documents


def _document_text(doc: Article) -> str:
    """What an embedder embeds for a document: `title. content` (the convention of the CISI set)."""
    if doc.title and doc.content:
        return f"{doc.title}. {doc.content}"
    return doc.content or doc.title


def _stage_documents(load: _Load, documents: Iterable[Article], staging: str, problems: _Problems, kind: str) -> tuple[set[str], int]:
    """Stage every document; returns the ids staged and how many the embedder embedded."""
    load.db.query(_sql("DEFINE TABLE OVERWRITE {{staging}} SCHEMALESS", staging=staging))
    seen: set[str] = set()
    embedded = 0
    step = f"staging {kind}s"
    load.step(step, 0)

    def unique() -> Iterator[Article]:
        for doc in documents:
            if doc.id in seen:
                problems.add("duplicate ids", doc.id)
                continue
            seen.add(doc.id)
            yield doc

    done = 0
    for batch in _chunks(unique(), load.batch_size):
        missing = [d for d in batch if d.embedding is None]
        vectors: dict[str, list[float]] = {}
        if missing and load.embedder is not None:
            vectors = dict(zip((d.id for d in missing), load.embed([_document_text(d) for d in missing])))
            embedded += len(missing)
        rows = []
        for doc in batch:
            vector = doc.embedding if doc.embedding is not None else vectors.get(doc.id)
            if vector is None:
                problems.add(f"{kind}s without an embedding (give an embedder to compute them)", doc.id)
                continue
            load.check_embedding(kind, doc.id, vector)
            row = doc.model_dump(exclude_none=True)
            row["embedding"] = vector
            if doc.doc is not None:
                row["doc"] = to_record(doc.doc, DOCUMENTS)
            rows.append(row)
        load.insert(staging, rows)
        done += len(batch)
        load.step(step, done)
    return seen, embedded


@dataclass(frozen=True)
class _Move:
    """Staged rows to move into `target`; a corpus table loses its HNSW index while they move."""

    staging: str
    target: str
    corpus: bool

    @property
    def undo(self) -> str:
        return UNDO_PREFIX + self.target


def _begin(move: _Move, position: int, dimension: int, described: dict[str, Any]) -> str:
    """Statements opening a move: its journal row and undo table, and for a corpus table its
    (re)definition with its BM25 index (kept up to date by the move, a part at a time: built over
    the whole table in one statement, it writes ~18 KB a document, and past ~100,000 documents that
    is more than the embedded store takes between two flushes) and without its HNSW index (built
    again after the move, in one pass: the embedded engine never builds a graph row by row).
    `described` holds INFO FOR TABLE of each target table that exists."""
    existed = move.target in described
    opening = _sql("DEFINE TABLE OVERWRITE {{undo}} SCHEMALESS PERMISSIONS NONE;\n"
                   "UPSERT type::record('ingest_journal', '{{target}}') CONTENT {undo: '{{undo}}', "
                   f"existed: {'true' if existed else 'false'}, corpus: {'true' if move.corpus else 'false'}, "
                   f"position: {int(position)}, state: 'moving', started: time::now(), updated: time::now()}} RETURN NONE;",
                   undo=move.undo, target=move.target)
    if not move.corpus:
        return opening
    indexes = described.get(move.target, {}).get("indexes", {})
    statements = [opening, _template("corpus", move.target, dimension),
                  _sql("REMOVE INDEX IF EXISTS {{vectors}} ON {{corpus}};", corpus=move.target,
                       vectors=f"{move.target}_embedding")]
    if f"{move.target}_content" not in indexes:
        statements.append(_index_statements(move.target, dimension)[f"{move.target}_content"])
    return "\n".join(statements)


def _finish(move: _Move) -> str:
    """Statements closing a move whose rows are all in place: a corpus table goes on to 'indexing'.
    (Its staging and undo tables are removed after, each in a statement of its own: removing every
    row of a large table is a large write, and leftovers are removed by the next load or open.)"""
    if move.corpus:
        return _sql("UPDATE type::record('ingest_journal', '{{target}}') SET state = 'indexing' RETURN NONE;",
                    target=move.target)
    return _sql("DELETE type::record('ingest_journal', '{{target}}');", target=move.target)


def _index_statements(table: str, dimension: int) -> dict[str, str]:
    """The statements of surql/corpus_indexes.surql for `table`, by index name."""
    text = "\n".join(line for line in _template("corpus_indexes", table, dimension).splitlines()
                     if not line.lstrip().startswith("--"))
    statements = [s.strip() + ";" for s in re.split(r";\s*(?:\n|$)", text) if s.strip()]
    return {re.search(r"DEFINE INDEX OVERWRITE (\w+) ON", s).group(1): s for s in statements}


def _index(db: Database, table: str, dimension: int) -> None:
    """Build `table`'s HNSW index over its committed rows in one pass, and close the table's journal
    in the same transaction. (It writes 6 to 11 KB a 384-d document: the store may flush first.)"""
    db.relieve()
    db.atomic("\n".join([_index_statements(table, dimension)[f"{table}_embedding"],
                         _sql("DELETE type::record('ingest_journal', '{{target}}');", target=table)]))


def _move_all(load: _Load, moves: list[_Move]) -> None:
    """Move the staged rows of `moves` into place (replacing records that exist, keeping their ids, so
    labels pointing at them stay valid), then build the corpus tables' HNSW indexes.

    At most MOVE_PART rows: one transaction. More: one transaction opens the moves (journal, undo
    tables), one per MOVE_PART rows moves them, one closes them; a failure, or the next load or open
    of the store after a killed one, undoes what was moved (`recover_loads`). A move writes one
    record at a time, never one INSERT of every row: in one transaction the engine takes time
    superlinear in the rows for a many-row INSERT or UPSERT (7,300 CISI-sized rows: 40 s).
    """
    db = load.db
    keys = [db.value("SELECT VALUE record::id(id) FROM type::table($t)", {"t": m.staging}) for m in moves]
    tables = db.value("INFO FOR DB")["tables"]
    described = {m.target: db.value(_sql("INFO FOR TABLE {{t}}", t=m.target)) for m in moves if m.target in tables}
    dimension = load.dimension or 0
    begin = "\n".join(_begin(m, i, dimension, described) for i, m in enumerate(moves))
    finish = "\n".join(_finish(m) for m in moves)
    total, done = sum(len(k) for k in keys), 0
    step = f"moving into {' and '.join(m.target for m in moves)}"
    load.step(step, 0, total)
    if total <= MOVE_PART:
        # LET, not RETURN: a RETURN inside a transaction ends it, and the statements after it never run
        calls = [f"LET $moved{i} = fn::move_staged($s{i}, $t{i}, $u{i}, $k{i});" for i in range(len(moves))]
        params: dict[str, Any] = {}
        for i, (m, k) in enumerate(zip(moves, keys)):
            params.update({f"s{i}": m.staging, f"t{i}": m.target, f"u{i}": m.undo, f"k{i}": k})
        db.atomic("\n".join([begin, *calls, finish]), params)
        load.step(step, total, total)
    else:
        db.atomic(begin)
        for move, move_keys in zip(moves, keys):
            for part in _chunks(move_keys, MOVE_PART):
                db.value("RETURN fn::move_staged($staging, $target, $undo, $keys)",
                         {"staging": move.staging, "target": move.target, "undo": move.undo, "keys": part})
                done += len(part)
                load.step(step, done, total)
                db.relieve()
        db.atomic(finish)
    _remove_staging(db)
    for move in moves:
        if move.corpus:
            _build_indexes(load, move.target)


def _build_indexes(load: _Load, table: str) -> None:
    """Define `table`'s HNSW index over its committed rows, built in one pass (its BM25 index was
    kept up to date by the move).

    This cannot share the move's transaction: an index defined in the transaction that inserted
    the rows is built from the rows committed before it, and comes out empty.
    """
    load.step("building indexes", 0, 1)
    try:
        _index(load.db, table, load.dimension or 0)
    except SurrealEvalError as error:
        raise QueryFailed(f"the rows of {table} were loaded but its HNSW index could not be built ({error}): "
                          "the next load, or the next open of this store, builds it") from error
    load.step("building indexes", 1, 1)


def _journals(db: Database, tables: Iterable[str]) -> list[dict[str, Any]]:
    """The unfinished moves, last first, with how long since each made progress (seconds)."""
    if JOURNAL not in tables:
        return []
    return db.value(f"SELECT record::id(id) AS target, undo, existed, corpus, state, position, updated, "
                    f"duration::secs(time::now() - updated) AS idle FROM {JOURNAL} ORDER BY position DESC")


def recover_loads(db: Database, *, stale_after: float | None = None) -> list[str]:
    """Finish or undo the moves a killed or failed load left unfinished; the tables put right.

    A move still 'moving' is undone a part at a time (each part one transaction, so a recovery that
    is itself killed goes on where it stopped); a move 'indexing' gets its HNSW index built. With
    `stale_after` (seconds), only moves idle that long are touched: on a server another load may be
    running. The staging and undo tables are then removed, no move being left unfinished.
    """
    tables = list(db.value("INFO FOR DB")["tables"])  # recovery adds no table: read once
    journals = _journals(db, tables)
    live = [j for j in journals if stale_after is not None and j["idle"] < stale_after]
    if live:
        raise StoreBusy(f"a load into {live[0]['target']} is in progress (it last moved rows "
                        f"{live[0]['idle']} s ago): wait for it to finish")
    config = harness_config(db) if journals else None
    put_right = []
    for journal in journals:
        target = journal["target"]
        if journal["state"] == "indexing":
            _index(db, target, config.dimension)
        elif not journal["existed"]:
            db.atomic(_sql("REMOVE TABLE IF EXISTS {{target}};\nDELETE type::record('corpus_table', '{{target}}');\n"
                           "DELETE type::record('ingest_journal', '{{target}}');", target=target))
        else:
            while db.value("RETURN fn::undo_moved($target, $undo, $limit)",
                           {"target": target, "undo": journal["undo"], "limit": MOVE_PART}):
                db.relieve()
            if journal["corpus"]:  # the rows are as they were: the indexes next, as after a load
                db.query(_sql("UPDATE type::record('ingest_journal', '{{target}}') SET state = 'indexing' "
                              "RETURN NONE", target=target))
                _index(db, target, config.dimension)
            else:
                db.query(_sql("DELETE type::record('ingest_journal', '{{target}}')", target=target))
        put_right.append(target)
    _remove_staging(db, tables)
    return put_right


# ------------------------------------------------------------------------------------ questions


def _question_row(question: Question) -> dict[str, Any]:
    """A question as a staged row, refused with its id if it breaks a rule of the golden set."""
    qid = question.id
    if not question.text.strip():
        raise InputError(f"question {qid!r}: the text is empty")
    labels = [to_record(r, DOCUMENTS) for r in question.relevant]
    names = [record_str(r) for r in labels]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(f"question {qid!r}: the same article is labelled twice ({twice})")
    if question.grades is not None and len(question.grades) != len(labels):
        raise InputError(f"question {qid!r}: {len(question.grades)} grades for {len(labels)} labels")
    if question.grades is not None and any(not (g > 0 and math.isfinite(g)) for g in question.grades):
        raise InputError(f"question {qid!r}: every grade must be a number above 0")
    row = question.model_dump(exclude_none=True)
    row["relevant"] = labels
    if question.passages:
        for passage in question.passages:
            if record_str(to_record(passage.doc, DOCUMENTS)) not in names:
                raise InputError(f"question {qid!r}: passage of {passage.doc} quotes a document that is not among its labels")
            if not passage.quote.strip():
                raise InputError(f"question {qid!r}: passage of {passage.doc} has an empty quote")
        row["passages"] = [{**p.model_dump(), "doc": to_record(p.doc, DOCUMENTS)} for p in question.passages]
    return row


def _stage_questions(
    load: _Load, questions: Iterable[Question], staging: str, problems: _Problems, staged_documents: set[str]
) -> tuple[int, int, int]:
    """Stage every question; returns (questions staged, labels, embedded by the embedder)."""
    load.db.query(_sql("DEFINE TABLE OVERWRITE {{staging}} SCHEMALESS", staging=staging))
    seen: set[str] = set()
    to_check: dict[str, tuple[Any, str]] = {}  # label -> (record, first question naming it)
    counts = {"questions": 0, "labels": 0, "embedded": 0}
    load.step("staging questions", 0)

    def valid() -> Iterator[tuple[Question, dict[str, Any]]]:
        for question in questions:
            if question.id in seen:
                problems.add("duplicate ids", question.id)
                continue
            seen.add(question.id)
            if not question.relevant:
                problems.add("questions with no labels", question.id)
                continue
            row = _question_row(question)
            for label in row["relevant"]:
                if not (label.table_name == DOCUMENTS and label.id in staged_documents):
                    to_check.setdefault(record_str(label), (label, question.id))
            yield question, row

    done = 0
    for batch in _chunks(valid(), load.batch_size):
        missing = [q for q, _ in batch if q.embedding is None]
        vectors: dict[str, list[float]] = {}
        if missing and load.embedder is not None:
            vectors = dict(zip((q.id for q in missing), load.embed([q.text for q in missing])))
            counts["embedded"] += len(missing)
        rows = []
        for question, row in batch:
            vector = question.embedding if question.embedding is not None else vectors.get(question.id)
            if vector is None:
                problems.add("questions without an embedding (give an embedder to compute them)", question.id)
                continue
            load.check_embedding("question", question.id, vector)
            row["embedding"] = vector
            rows.append(row)
            counts["labels"] += len(row["relevant"])
        load.insert(staging, rows)
        counts["questions"] += len(rows)
        done += len(batch)
        load.step("staging questions", done)

    for chunk in _chunks(list(to_check.values()), _EXISTS_CHUNK):
        missing_labels = load.db.value(
            "RETURN $labels.filter(|$r| !record::exists($r))", {"labels": [label for label, _ in chunk]})
        gone = {record_str(r) for r in missing_labels}
        for label, owner in chunk:
            if record_str(label) in gone:
                problems.add("labels to unknown documents", f"{owner} -> {record_str(label)}")
    return counts["questions"], counts["labels"], counts["embedded"]


# --------------------------------------------------------------------------------- public API


@cache
def _harness_tables() -> frozenset[str]:
    """Every table the harness's SurrealQL files define, read from them (none can be a corpus table)."""
    defined = re.compile(r"DEFINE TABLE (?:OVERWRITE |IF NOT EXISTS )?(?!OVERWRITE\b|IF\b)(\w+)")  # not {{corpus}}
    found = {name for script in HARNESS_SCRIPTS
             for name in defined.findall((surql_dir() / f"{script}.surql").read_text(encoding="utf-8"))}
    return frozenset((found | _NOT_CORPUS) - {DOCUMENTS})


def _corpus_table(table: str) -> str:
    identifier(table, what="corpus table")
    if len(STAGING_PREFIX + table) > 63:
        raise ConfigError(f"corpus table name {table!r} is too long: at most {63 - len(STAGING_PREFIX)} characters")
    if table in _harness_tables() or table.startswith((STAGING_PREFIX, UNDO_PREFIX)):
        raise ConfigError(f"{table!r} cannot be a corpus table: the harness uses that name")
    return table


def _not_another_table(db: Database, table: str) -> None:
    """Refuse to (re)define as a corpus a table that exists and is not one (the user's own table)."""
    tables = db.value("INFO FOR DB")["tables"]
    if table in tables and ("corpus_table" not in tables or table not in corpus_tables(db)):
        raise ConfigError(f"table {table} exists and is not a corpus table: load into another --table")


def _run(load: _Load, body: Callable[[], Any]) -> Any:
    """Run a load after putting right what an earlier one left unfinished; on any failure undo what
    it moved and remove its staging tables (the database is then as it was)."""
    recover_loads(load.db, stale_after=None if load.db.settings.is_embedded else STALE_LOAD)
    try:
        return body()
    except BaseException:
        try:
            recover_loads(load.db)
        except Exception:  # the original error matters more than a failed clean-up
            log.debug("could not undo the failed load", exc_info=True)
        raise


def _mark_ingest(db: Database, table: str, documents: int, source: str | None) -> dict[str, Any]:
    """Record one ingest (which may evaluate, inside the database); its run, or why that failed."""
    from .watch import record_ingest

    try:
        return {"run": record_ingest(db, corpus=table, documents=documents, source=source)}
    except SurrealEvalError as error:  # the documents are loaded; the evaluation after it is what failed
        return {"evaluation_error": str(error)}


def load_corpus(
    db: Database,
    documents: Iterable[Article],
    *,
    table: str = DOCUMENTS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    create_harness: bool = False,
    source: str | None = None,
) -> LoadReport:
    """Load documents into corpus table `table` (upsert by id), all or none, then build its indexes.

    The load is then marked as one ingest (watch.record_ingest), which evaluates the golden set
    inside the database when `surreal-eval watch` asked for it; the run is in the report.

    Documents without an embedding are embedded by `embedder` (`title. content`); with none, they
    are refused. `create_harness` imports the harness when it is missing, with the dimension of the
    first embedding (otherwise a missing harness is a ConfigError).
    """
    table = _corpus_table(table)
    _not_another_table(db, table)
    load = _Load(db, batch_size=batch_size, embedder=embedder, progress=progress, create_harness=create_harness)
    staging = STAGING_PREFIX + table
    kind = "article" if table == DOCUMENTS else "document"
    problems = _Problems("corpus")

    def body() -> LoadReport:
        staged, embedded = _stage_documents(load, documents, staging, problems, kind)
        problems.check()
        report = LoadReport(table=table, loaded=len(staged), embedded=embedded, batches=load.batches)
        if not staged:
            _remove_staging(db)
            return report.model_copy(update={"seconds": load.seconds()})
        load.ensure_harness()
        _move_all(load, [_Move(staging, table, corpus=True)])
        return report.model_copy(update={"seconds": load.seconds(), "harness_imported": load.harness_imported,
                                         **_mark_ingest(db, table, len(staged), source)})

    return _run(load, body)


def load_golden(
    db: Database,
    questions: Iterable[Question],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    create_harness: bool = False,
) -> LoadReport:
    """Load golden-set questions (upsert by id), all or none.

    Refused together, in one message: duplicate ids, labels naming documents that do not exist,
    questions with no labels, questions with no embedding (when no embedder is given). Refused at
    once, naming the question: empty text, a label twice, grades that do not match the labels, an
    embedding of the wrong dimension. `skipped` in the report is `questions.skipped` when the
    questions come from a BEIR or TREC reader (queries with no judgment).
    """
    load = _Load(db, batch_size=batch_size, embedder=embedder, progress=progress, create_harness=create_harness)
    staging = STAGING_PREFIX + QUESTIONS
    problems = _Problems("golden set")

    def body() -> LoadReport:
        count, labels, embedded = _stage_questions(load, questions, staging, problems, set())
        problems.check()
        report = LoadReport(table=QUESTIONS, loaded=count, skipped=getattr(questions, "skipped", 0),
                            embedded=embedded, labels=labels, batches=load.batches)
        if count:
            load.ensure_harness()
            _move_all(load, [_Move(staging, QUESTIONS, corpus=False)])
        else:
            _remove_staging(db)
        return report.model_copy(update={"seconds": load.seconds(), "harness_imported": load.harness_imported})

    return _run(load, body)


def load_dataset(
    db: Database,
    documents: Iterable[Article],
    questions: Iterable[Question],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    create_harness: bool = False,
    source: str | None = None,
) -> DatasetReport:
    """Load documents into `article` and the golden set that labels them, all or nothing.

    Labels may name documents of this load or articles already stored. The documents' problems
    are refused first (one message), then the golden set's (one message).
    """
    load = _Load(db, batch_size=batch_size, embedder=embedder, progress=progress, create_harness=create_harness)
    doc_staging, question_staging = STAGING_PREFIX + DOCUMENTS, STAGING_PREFIX + QUESTIONS
    doc_problems, question_problems = _Problems("corpus"), _Problems("golden set")

    def body() -> DatasetReport:
        staged, doc_embedded = _stage_documents(load, documents, doc_staging, doc_problems, "article")
        doc_problems.check()
        doc_batches = load.batches
        count, labels, q_embedded = _stage_questions(load, questions, question_staging, question_problems, staged)
        question_problems.check()
        load.ensure_harness()
        moves = [_Move(doc_staging, DOCUMENTS, corpus=True)] if staged else []
        moves += [_Move(question_staging, QUESTIONS, corpus=False)] if count else []
        _move_all(load, moves)
        _remove_staging(db)
        seconds = load.seconds()
        return DatasetReport(
            corpus=LoadReport(table=DOCUMENTS, loaded=len(staged), embedded=doc_embedded, batches=doc_batches,
                              seconds=seconds, harness_imported=load.harness_imported,
                              **(_mark_ingest(db, DOCUMENTS, len(staged), source) if staged else {})),
            golden=LoadReport(table=QUESTIONS, loaded=count, skipped=getattr(questions, "skipped", 0),
                              embedded=q_embedded, labels=labels, batches=load.batches - doc_batches, seconds=seconds),
            seconds=seconds,
        )

    return _run(load, body)


def load_beir(
    db: Database,
    folder: Path | str,
    *,
    split: str = "test",
    batch_size: int = DEFAULT_BATCH_SIZE,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    create_harness: bool = False,
) -> DatasetReport:
    """Load a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv, embeddings/ if present)
    into `article` and `question` all or nothing; queries with no judgment are skipped and counted."""
    from .loaders import read_beir

    documents, questions = read_beir(Path(folder), split=split)
    return load_dataset(db, documents, questions, batch_size=batch_size, embedder=embedder,
                        progress=progress, create_harness=create_harness, source=str(folder))
