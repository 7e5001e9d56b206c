"""Moving staged rows into place, all or nothing, and building the corpus table's HNSW index after."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..errors import QueryFailed, SurrealEvalError
from ..store import journal
from ..store.journal import UNDO_PREFIX, build_hnsw, corpus_template, index_statements, remove_staging
from ..store.analyzers import DEFAULT_ANALYZER, analyzer_of, record_analyzers
from ..store.schema import statement
from .staging import Load, batches

__all__ = ["Move", "move_all"]


@dataclass(frozen=True)
class Move:
    """Staged rows to move into `target`; a corpus table loses its HNSW index while they move, unless the graph
    is kept (`keep_graph`: a few rows into a table whose graph is built go into that graph as they are written)."""

    staging: str
    target: str
    corpus: bool
    #: the analyzer of a corpus table's BM25 index (store/analyzers.table_analyzer)
    analyzer: str = DEFAULT_ANALYZER
    keep_graph: bool = False

    @property
    def undo(self) -> str:
        return UNDO_PREFIX + self.target


def _begin(move: Move, position: int, dimension: int, described: dict[str, Any]) -> str:
    """Statements opening a move: its journal row and undo table, and for a corpus table its
    (re)definition with its BM25 index (kept up to date by the move, a part at a time: built over
    the whole table in one statement, it writes ~18 KB a document, and past ~100,000 documents that
    is more than the embedded store takes between two flushes) and without its HNSW index (built
    again after the move, in one pass: the embedded engine never builds a graph row by row).
    `described` holds INFO FOR TABLE of each target table that exists."""
    existed = move.target in described
    flags = f"existed: {'true' if existed else 'false'}, corpus: {'true' if move.corpus else 'false'}, position: {int(position)}"
    opening = statement("DEFINE TABLE OVERWRITE {{undo}} SCHEMALESS PERMISSIONS NONE;\n"
                        "UPSERT type::record('seval_ingest_journal', '{{target}}') CONTENT {undo: '{{undo}}', " + flags
                        + ", state: 'moving', started: time::now(), updated: time::now()} RETURN NONE;",
                        undo=move.undo, target=move.target)
    if not move.corpus:
        return opening
    indexes = described.get(move.target, {}).get("indexes", {})
    statements = [opening, _without_held_indexes(corpus_template("corpus", move.target, dimension), indexes)]
    if not move.keep_graph:
        statements.append(statement("REMOVE INDEX IF EXISTS {{vectors}} ON {{corpus}};", corpus=move.target,
                                    vectors=f"{move.target}_embedding"))
    if _defines_bm25(move, described):
        statements.append(index_statements(move.target, dimension, move.analyzer)[f"{move.target}_content"])
    return "\n".join(statements)


def _defines_bm25(move: Move, described: dict[str, Any]) -> bool:
    """Whether the move (re)defines its corpus table's BM25 index: missing, with another analyzer, or on another field
    than bm25_text (surql/corpus.surql). `described`: as _begin's."""
    bm25 = described.get(move.target, {}).get("indexes", {}).get(f"{move.target}_content")
    return move.corpus and (analyzer_of(bm25) != move.analyzer or " FIELDS bm25_text " not in (bm25 or ""))


def _finish(move: Move) -> str:
    """Statements closing a move whose rows are all in place: a corpus table goes on to 'indexing'.
    (Its staging and undo tables are removed after, each in a statement of its own: removing every
    row of a large table is a large write, and leftovers are removed by the next load or open.)"""
    if move.corpus and not move.keep_graph:
        return statement("UPDATE type::record('seval_ingest_journal', '{{target}}') SET state = 'indexing' RETURN NONE;",
                    target=move.target)
    return statement("DELETE type::record('seval_ingest_journal', '{{target}}');", target=move.target)


def _without_held_indexes(template: str, indexes: dict[str, str]) -> str:
    """`template` (surql/corpus.surql rendered) without each DEFINE INDEX the table already holds as it is
    (`indexes`: INFO FOR TABLE's): defined again with OVERWRITE, an index is built again over every record (the doc
    index of CISI's 1,460 articles: 87 ms of each load, however few rows it moves)."""
    def kept(match: re.Match[str]) -> str:
        held = " ".join(indexes.get(match.group(1), "").split())
        return "" if held == " ".join(f"DEFINE INDEX {match.group(1)} {match.group(2)}".split()) else match.group(0)

    return re.sub(r"^DEFINE INDEX OVERWRITE (\w+) (ON [^;]*);[ \t]*$", kept, template, flags=re.MULTILINE)


def move_all(load: Load, moves: list[Move]) -> None:
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
    # the tables as the load found them when nothing since can have defined or removed one: on an embedded store (one
    # process holds it), no harness imported by the load, no unfinished load put right (INFO FOR DB: about 20 ms)
    fresh = load.tables is None or load.harness_imported is not None or not db.settings.is_embedded
    tables = db.value("INFO FOR DB")["tables"] if fresh else load.tables
    described = {m.target: db.value(statement("INFO FOR TABLE {{t}}", t=m.target)) for m in moves if m.target in tables}
    moves = [replace(m, keep_graph=_keeps_graph(db, m, len(k), described)) for m, k in zip(moves, keys)]
    dimension = load.dimension or 0
    begin = "\n".join(_begin(m, i, dimension, described) for i, m in enumerate(moves))
    finish = "\n".join(_finish(m) for m in moves)
    total, done = sum(len(k) for k in keys), 0
    step = f"moving into {' and '.join(m.target for m in moves)}"
    load.step(step, 0, total)
    if total <= journal.MOVE_PART:
        # LET, not RETURN: a RETURN inside a transaction ends it, and the statements after it never run
        calls = [f"LET $moved{i} = fn::seval::move_staged($s{i}, $t{i}, $u{i}, $k{i});" for i in range(len(moves))]
        params: dict[str, Any] = {}
        for i, (m, k) in enumerate(zip(moves, keys)):
            params.update({f"s{i}": m.staging, f"t{i}": m.target, f"u{i}": m.undo, f"k{i}": k})
        db.atomic("\n".join([begin, *calls, finish]), params, meanwhile=load.meanwhile)
        load.step(step, total, total)
    else:
        db.atomic(begin)
        for move, move_keys in zip(moves, keys):
            for part in batches(move_keys, journal.MOVE_PART):
                db.value("RETURN fn::seval::move_staged($staging, $target, $undo, $keys)",
                         {"staging": move.staging, "target": move.target, "undo": move.undo, "keys": part})
                done += len(part)
                load.step(step, done, total)
                db.flush_if_full()
        db.atomic(finish, meanwhile=load.meanwhile)
    load.moved.update({m.target: len(k) for m, k in zip(moves, keys)})  # in place now, whatever follows
    # the staging and undo tables as read (any a killed load left), with this load's staging and undo tables
    remove_staging(db, list(dict.fromkeys([*tables, *(m.staging for m in moves), *(m.undo for m in moves)])))
    for move in moves:
        if move.corpus and not move.keep_graph:
            _build_indexes(load, move.target)
    # each corpus table's analyzer recorded again where the move defined a BM25 index (18 ms on CISI: it reads INFO)
    if any(_defines_bm25(move, described) for move in moves):
        record_analyzers(db)
    # the candidate lists kept for reuse (surql/candidate_cache.surql) are left as they are: a slot holds one
    # list, a run reads one only at the current version or the state's (and brings it up to date,
    # surql/incremental.surql), and pruning reads the whole corpus (1.3 s of a 20-document load on 20,000)


#: A move of at most this many rows, and at most half as many as the table holds, writes them into the table's
#: built HNSW graph as it goes instead of building the graph again over every row (20 rows into the
#: 20,000-document Debian set: the rebuild was most of the load). A larger one builds the graph again.
KEEP_GRAPH_ROWS = 1000


def _keeps_graph(db: Any, move: Move, rows: int, described: dict[str, Any]) -> bool:
    """Whether `move` (of `rows` rows) keeps its table's HNSW graph: a corpus table whose graph is built and
    ready, and a move small beside it (KEEP_GRAPH_ROWS)."""
    index = f"{move.target}_embedding"
    if not move.corpus or rows > KEEP_GRAPH_ROWS or index not in described.get(move.target, {}).get("indexes", {}):
        return False
    built = db.value(statement("INFO FOR INDEX {{index}} ON {{table}}", index=index, table=move.target)).get("building", {})
    # counted by the table's count, not its records: through type::table($t), or as count(SELECT id ...), the engine
    # reads every record, embeddings and all (78 against 0.9 ms on CISI's 1,480)
    held = db.value(statement("RETURN (SELECT count() FROM {{table}} GROUP ALL)[0].count ?? 0", table=move.target))
    return built.get("status") == "ready" and not built.get("pending") and rows * 2 <= held


def _build_indexes(load: Load, table: str) -> None:
    """Define `table`'s HNSW index over its committed rows, built in one pass (its BM25 index was
    kept up to date by the move).

    This cannot share the move's transaction: an index defined in the transaction that inserted
    the rows is built from the rows committed before it, and comes out empty.
    """
    load.step("building indexes", 0, 1)
    try:
        build_hnsw(load.db, table, load.dimension or 0)
    except SurrealEvalError as error:
        raise QueryFailed(f"the rows of {table} were loaded but its HNSW index could not be built ({error}): "
                          "the next load, or the next open of this store, builds it") from error
    load.step("building indexes", 1, 1)
