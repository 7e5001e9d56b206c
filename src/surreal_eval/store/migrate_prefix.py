"""`surreal-eval migrate`: a store written by surreal-eval 0.1 moved to the seval_ names, its history kept.

0.1 named what it defined without a prefix (tables article, question, eval_run, eval_ranking, ...,
analyzers english and english_stop, functions fn::<name>, indexes harness_<table>_<field> on attached
tables) and recorded each definition in its table harness_object. `migrate`:

1. imports the current harness with 0.1's settings (harness_config:current), seval_article's BM25
   index on the analyzer 0.1's article index had (english -> seval_english, english_stop ->
   seval_english_stop, an analyzer of the user's by its own name);
2. copies every row of 0.1's tables into the new ones, keys kept: a record id of a renamed table is
   rewritten wherever it stands in a value (rankings' ranked, relevant, question and run, a
   question's labels and passages, ...), and so is a table name held as a string (params.corpus,
   an ingest's corpus, ...): article -> seval_article, a chunk table x -> seval_x. Attached tables
   keep their names; 0.1's indexes on them are defined again, unchanged, as seval_<table>_<field>;
3. carries over the golden-set and corpus fingerprints of the runs that measured the store as it is
   (both hash record ids, which the rename changed): a run whose fingerprint is the store's current
   one under 0.1 gets the current one under the new names, so it compares with a new run on the
   same data; a run of another golden set or corpus keeps its own;
4. drops the caches (candidate lists, engine checks: keyed by definitions that changed);
5. removes, in one transaction at the very end, every definition 0.1's harness_object recorded (and
   its chunk tables), never another; an analyzer one of the user's own indexes uses is kept (and
   the function it calls).

Nothing of 0.1's is changed before that transaction commits. A failure removes the partial copy (the
definitions carrying the prefix), and a migration started again after an interruption does so first
(the row seval_object:`migration:0.1`, written before anything else, says one began).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional


from ..model_base import Model
from .analyzers import analyzer_of, record_analyzers
from .connection import Database
from .migrate_rows import copy_rows, insert_rows, prefixed_names, removals, renamed
from .ownership import OWNED_TABLE, record_owned
from .previous import is_previous_release, migrating
from .schema import (DOCUMENTS, PREFIX, HarnessConfig, apply, attached_script, attached_tables, checked_config, define_corpus,
                     define_corpus_indexes, function_dispatch, harness_table, identifier, import_harness, statement)
from ..errors import ConfigError

__all__ = ["MigrationReport", "migrate", "RENAMED", "HARNESS_ANALYZERS_0_1"]

log = logging.getLogger(__name__)

#: 0.1's tables and their names now.
RENAMED = {"article": "seval_article", "question": "seval_question", "eval_run": "seval_run", "eval_ranking": "seval_ranking",
           "eval_watch": "seval_watch", "corpus_table": "seval_corpus", "evaluator": "seval_evaluator", "ingest": "seval_ingest",
           "ingest_journal": "seval_ingest_journal", "retriever": "seval_retriever", "retriever_endpoint": "seval_endpoint",
           "candidate_cache": "seval_candidate_cache", "engine_check": "seval_engine_check", "harness_config": "seval_config",
           "harness_object": "seval_object", "harness_script": "seval_script"}
#: The caches, not copied: their keys hash the definitions of functions that changed.
CACHES = {"candidate_cache": "candidate lists", "engine_check": "engine checks"}
#: 0.1's analyzers and their names now.
HARNESS_ANALYZERS_0_1 = {"english": "seval_english", "english_stop": "seval_english_stop"}
#: The seval_object row that says a migration began (deleted in the transaction that ends it).
MARKER = ("migration", "0.1")
#: 0.1's golden-set fingerprint (its fn::golden_fingerprint), over its table question.
OLD_GOLDEN = "RETURN crypto::sha256(<string> (SELECT id, text, relevant, grades, passages, nonrelevant FROM question ORDER BY id))"
_FUNCTION = re.compile(r" FUNCTION fn::(\S+)")


class MigrationReport(Model):
    """What `migrate` moved, carried over, dropped and removed (`migrated` False: there was nothing to migrate)."""

    migrated: bool
    runs: int = 0
    rankings: int = 0
    #: runs whose golden-set fingerprint was the store's and is now the store's under the new names; those of another golden set
    golden_carried: int = 0
    golden_other: int = 0
    #: runs whose corpus fingerprint was carried over the same way
    corpus_carried: int = 0
    questions: int = 0
    #: questions per split: dev, test, and none for those without one
    splits: dict[str, int] = {}
    articles: int = 0
    analyzer: Optional[str] = None
    chunk_tables: dict[str, int] = {}
    attached: list[str] = []
    #: 0.1's indexes on attached tables, defined again under the new names ({old: new})
    indexes: dict[str, str] = {}
    retrievers: list[str] = []
    endpoints: list[str] = []
    evaluators: list[str] = []
    #: the access evaluator accounts now sign in through
    access: Optional[str] = None
    watch: bool = False
    ingests: int = 0
    #: caches dropped, rebuilt when needed: {what: rows}
    dropped: dict[str, int] = {}
    #: 0.1's definitions removed, as "kind name", and those kept, with why
    removed: list[str] = []
    kept: list[str] = []


@dataclass
class _Plan:
    """What a migration of one store will do, read before anything is changed."""

    config: HarnessConfig
    #: record ids: 0.1's table -> the new one (its tables and chunk tables); table names held as strings: article, chunk tables
    tables: dict[str, str]
    names: dict[str, str]
    #: the BM25 analyzer of each new corpus table
    analyzers: dict[str, Optional[str]]
    chunks: dict[str, str]
    #: 0.1's corpus_table rows of attached tables, their index names renamed
    attached: list[dict]
    #: 0.1's indexes on tables it did not make: (table, old name, new name, new definition)
    indexes: list[tuple[str, str, str, str]]
    removals: list[str]
    removed: list[str]
    kept: list[str] = field(default_factory=list)


def migrate(db: Database) -> MigrationReport:
    """Move a store of surreal-eval 0.1 to the seval_ names (see the module docstring); a report with
    `migrated` False when `db` holds no 0.1 harness (a current store, an empty one, one migrated)."""
    info = db.value("INFO FOR DB")
    if not is_previous_release(info["tables"]):
        return MigrationReport(migrated=False)
    plan = _plan(db, info)
    left = _left_over(db)
    with migrating(db):
        try:
            if left:  # what an interrupted migration left
                db.atomic("\n".join(removals(left)))
            record_owned(db, [("table", OWNED_TABLE), MARKER])
            report = _move(db, plan)
            db.atomic("\n".join([*plan.removals, "DELETE type::record('seval_object', $marker);"]), {"marker": ":".join(MARKER)})
        except BaseException:
            _remove_partial_copy(db)
            raise
    return report.model_copy(update={"removed": plan.removed, "kept": plan.kept})


def _plan(db: Database, info: dict) -> _Plan:
    """Read 0.1's store and decide everything; a ConfigError (nothing changed) for what cannot be migrated."""
    tables = info["tables"]
    if "harness_object" not in tables:
        raise ConfigError("this database's harness predates surreal-eval 0.1 (no table harness_object records what it defined): "
                          "run surreal-eval 0.1's `init` on it once, then `surreal-eval migrate`")
    unfinished = db.value("SELECT VALUE record::id(id) FROM ingest_journal") if "ingest_journal" in tables else []
    if unfinished:
        raise ConfigError(f"surreal-eval 0.1 left a load into {', '.join(map(str, unfinished))} unfinished (table ingest_journal): "
                          f"open the store once with surreal-eval 0.1, which undoes it, then run `surreal-eval migrate`")
    settings = db.value("SELECT dimension, knn_depth, knn_ef FROM ONLY harness_config:current")
    if not settings:
        raise ConfigError("this surreal-eval 0.1 store has no harness_config:current: run 0.1's `init` on it once, then migrate")
    owned = [(r["kind"], r["name"]) for r in db.value("SELECT kind, name FROM harness_object")]
    owned_tables = {name for kind, name in owned if kind == "table"}
    corpora = db.value("SELECT *, record::id(id) AS table OMIT id FROM corpus_table") if "corpus_table" in tables else []
    chunks = {r["table"]: harness_table(PREFIX + r["table"], what="chunk table") for r in corpora
              if not r.get("attached") and r["table"] != "article" and r["table"] in tables and r["table"] not in owned_tables}
    names = {"article": DOCUMENTS, **chunks}
    gone = owned_tables | set(chunks)
    # (what 0.1 defined on a table since dropped went with it)
    owned = [(kind, name) for kind, name in owned if kind not in ("index", "event", "field") or name.split(".", 1)[0] in tables]
    indexes = [_index(db, *name.split(".", 1)) for kind, name in owned if kind == "index" and name.split(".", 1)[0] not in gone]
    index_names = {(table, old): new for table, old, new, _ in indexes}
    attached = [{**r, **{key: index_names.get((r["table"], r[key]), r[key]) for key in ("bm25_index", "vector_index") if r.get(key)}}
                for r in corpora if r.get("attached") and r["table"] in tables]
    kept = _kept(db, info, owned, gone)
    dropping = [n for n in owned if n not in {k for k, _ in kept}]
    return _Plan(config=checked_config(**settings), tables={**{o: n for o, n in RENAMED.items() if o in owned_tables}, **names},
                 names=names, analyzers={new: _analyzer(db, old) for old, new in names.items()}, chunks=chunks,
                 attached=attached, indexes=indexes, removals=removals(dropping, with_tables=chunks),
                 removed=[f"{kind} {'fn::' if kind == 'function' else ''}{name}" for kind, name in sorted(dropping)
                          if kind not in ("index", "event", "field") or name.split(".", 1)[0] not in gone]
                 + [f"table {t}" for t in sorted(chunks)], kept=[why for _, why in kept])


def _analyzer(db: Database, table: str) -> Optional[str]:
    """The analyzer of 0.1's corpus table `table`'s BM25 index, by its name now (None: it has none)."""
    found = analyzer_of(db.value("INFO FOR TABLE $t", {"t": table})["indexes"].get(f"{table}_content"))
    return HARNESS_ANALYZERS_0_1.get(found, found) if found else None


def _index(db: Database, table: str, old: str) -> tuple[str, str, str, str]:
    """0.1's index `old` on table `table`, with its new name (harness_<table>_<field> -> seval_<table>_<field>)
    and its definition under that name: the engine's own (INFO FOR TABLE), unchanged but for the name
    and the analyzer's new name, so that the index is the same (BM25 parameters, HNSW settings)."""
    new = identifier(PREFIX + old.removeprefix("harness_"), what="index name")
    definition = db.value("INFO FOR TABLE $t", {"t": identifier(table, what="table")})["indexes"].get(old)
    if not definition or not definition.startswith(f"DEFINE INDEX {old} ON "):
        raise ConfigError(f"surreal-eval 0.1 recorded index {old} on table {table}, which the database does not hold as it "
                          f"was defined: run 0.1's `init` on it once, then migrate")
    analyzer = analyzer_of(definition)
    text = statement("DEFINE INDEX OVERWRITE {{index}} ON ", index=new) + definition.removeprefix(f"DEFINE INDEX {old} ON ")
    if analyzer in HARNESS_ANALYZERS_0_1:
        text = text.replace(f" ANALYZER {analyzer} ", f" ANALYZER {HARNESS_ANALYZERS_0_1[analyzer]} ", 1)
    return table, old, new, text + ";"


def _kept(db: Database, info: dict, owned: list[tuple[str, str]], gone: set[str]) -> list[tuple[tuple[str, str], str]]:
    """0.1's analyzers an index it did not make uses, and 0.1's functions a kept or user analyzer calls: ((kind, name), why)."""
    mine = {name for kind, name in owned if kind == "analyzer"}
    kept: list[tuple[tuple[str, str], str]] = []
    for table in sorted(set(info["tables"]) - gone):
        for index, definition in sorted(db.value("INFO FOR TABLE $t", {"t": table})["indexes"].items()):
            analyzer = analyzer_of(definition)
            if analyzer in mine and ("index", f"{table}.{index}") not in owned and ("analyzer", analyzer) not in {k for k, _ in kept}:
                kept.append((("analyzer", analyzer), f"analyzer {analyzer} (index {index} of table {table}, not the harness's, uses it)"))
    using = {name for (_, name), _ in kept} | (set(info["analyzers"]) - mine)
    for analyzer in sorted(using):
        called = _FUNCTION.search(info["analyzers"].get(analyzer, ""))
        if called and ("function", called[1]) in owned:
            kept.append((("function", called[1]), f"function fn::{called[1]} (analyzer {analyzer} calls it)"))
    return kept


def _left_over(db: Database) -> list[tuple[str, str]]:
    """The prefixed definitions an interrupted migration left (its marker row is there, or only the empty
    table that holds it), to remove first; a ConfigError (nothing changed) for prefixed definitions
    a migration did not make."""
    found = prefixed_names(db)
    if not found:
        return []
    if ("table", OWNED_TABLE) in found and db.value("RETURN record::exists(type::record('seval_object', $marker)) "
                                                    "OR (count(SELECT id FROM seval_object LIMIT 1) = 0 AND $alone)",
                                                    {"marker": ":".join(MARKER), "alone": len(found) == 1}):
        return found
    listed = ", ".join(f"{kind} {name}" for kind, name in found[:5]) + (", ..." if len(found) > 5 else "")
    raise ConfigError(f"this database holds surreal-eval 0.1's harness and also definitions named like the current harness's "
                      f"that no migration made ({listed}): migrate needs them gone (nothing was changed)")


def _remove_partial_copy(db: Database) -> None:
    """After a failure: remove every prefixed definition (the copy so far); 0.1's are untouched. If this
    fails too (the connection went), the next `migrate` removes them first."""
    try:
        db.atomic("\n".join(removals(prefixed_names(db))))
    except Exception:  # noqa: BLE001 - the failure being raised matters more; the next migrate cleans up
        log.warning("could not remove the partial migration; `surreal-eval migrate` again removes it first", exc_info=True)


def _move(db: Database, plan: _Plan) -> MigrationReport:
    """Import the harness, move the corpora, the golden set and the history; the report."""
    config = plan.config
    import_harness(db, config, analyzer=plan.analyzers[DOCUMENTS])
    # seval_article's indexes are defined again once its rows are in (one pass; an HNSW graph only builds so)
    db.query("REMOVE INDEX IF EXISTS seval_article_content ON seval_article; REMOVE INDEX IF EXISTS seval_article_embedding ON seval_article;")
    if plan.indexes:
        record_owned(db, [("index", f"{table}.{new}") for table, _, new, _ in plan.indexes])
        apply(db, "\n".join(text for *_, text in plan.indexes))
    for row in plan.attached:
        db.query("UPSERT type::record('seval_corpus', $t) CONTENT $row RETURN NONE",
                 {"t": row["table"], "row": {k: v for k, v in row.items() if k not in ("table", "analyzer", "analyzer_checksum")}})
    script = attached_script(attached_tables(db), config)
    apply(db, script)  # recorded as init records it, so that init then finds the harness up to date
    db.value("RETURN fn::seval::record_import($config, { attached: $sum })",
             {"config": config.model_dump(), "sum": hashlib.sha256(script.encode("utf-8")).hexdigest()})
    record_analyzers(db)
    for new in plan.chunks.values():
        define_corpus(db, new, indexes=False)
    rows = {old: copy_rows(db, old, new, plan.tables) for old, new in plan.names.items()}
    for new in plan.names.values():
        define_corpus_indexes(db, new, analyzer=plan.analyzers[new])
    questions = copy_rows(db, "question", "seval_question", plan.tables)
    carried = _Fingerprints(db, plan)
    evaluators = db.value("SELECT VALUE name FROM evaluator ORDER BY name")
    copy_rows(db, "evaluator", "seval_evaluator", plan.tables)
    runs = copy_rows(db, "eval_run", "seval_run", plan.tables, fix=carried.run, imported=True)
    rankings = copy_rows(db, "eval_ranking", "seval_ranking", plan.tables)
    retrievers = _retrievers(db, plan)
    endpoints = db.value("SELECT VALUE record::id(id) FROM retriever_endpoint ORDER BY id")
    copy_rows(db, "retriever_endpoint", "seval_endpoint", plan.tables)
    watch = copy_rows(db, "eval_watch", "seval_watch", plan.tables, fix=lambda r: _corpus_named(r, plan, "params", "corpus"))
    # imported: an ingest row created again must not evaluate (the seval_evaluate_after_ingest event); it was
    # evaluated then (done) or nothing was watched (unwatched), never pending
    ingests = copy_rows(db, "ingest", "seval_ingest", plan.tables, imported=True,
                        fix=lambda r: {**_corpus_named(r, plan, "corpus"), "state": "done" if r.get("run") else "unwatched"})
    return MigrationReport(
        migrated=True, runs=runs, rankings=rankings, golden_carried=carried.golden_carried, golden_other=carried.golden_other,
        corpus_carried=carried.corpus_carried, questions=questions,
        splits=dict(Counter(db.value("SELECT VALUE split ?? 'none' FROM seval_question"))), articles=rows["article"],
        analyzer=plan.analyzers[DOCUMENTS], chunk_tables={new: rows[old] for old, new in plan.chunks.items()},
        attached=[r["table"] for r in plan.attached], indexes={old: new for _, old, new, _ in plan.indexes},
        retrievers=retrievers, endpoints=endpoints, evaluators=evaluators, access="seval_evaluator" if evaluators else None,
        watch=bool(watch), ingests=ingests,
        dropped={what: db.value(statement("RETURN count(SELECT id FROM {{table}})", table=table))
                 for table, what in CACHES.items() if table in plan.tables})


def _retrievers(db: Database, plan: _Plan) -> list[str]:
    """Copy the user's retrievers (0.1's harness rows are the import's), those calling a function first
    (a fused one's lists must exist), and write the function dispatch again; their names."""
    rows = sorted(db.value("SELECT * FROM retriever WHERE harness = false"), key=lambda r: (r.get("function_name") is None, str(r["id"].id)))
    insert_rows(db, "seval_retriever", [_corpus_named(renamed(r, plan.tables), plan, "corpus") for r in rows])
    apply(db, function_dispatch(db))
    return [str(r["id"].id) for r in rows]


def _corpus_named(row: dict, plan: _Plan, *path: str) -> dict:
    """`row` with the table name at `path` (a corpus table: article, a chunk table) by its new name."""
    *parents, key = path
    holder: Any = row
    for part in parents:
        holder = holder.get(part) if isinstance(holder, dict) else None
    if isinstance(holder, dict) and isinstance(holder.get(key), str):
        holder[key] = plan.names.get(holder[key], holder[key])
    return row


class _Fingerprints:
    """The store's golden-set and corpus fingerprints under 0.1's names and under the new ones, and
    `run`, which gives a run the new ones where it recorded the old (its table names renamed too)."""

    def __init__(self, db: Database, plan: _Plan) -> None:
        self.plan = plan
        self.golden = (db.value(OLD_GOLDEN),
                       {**db.value("RETURN fn::seval::golden_fingerprint(fn::seval::golden_set('seval_question'), NONE)"),
                        "dangling": 0, "stale": 0, "unlabelled": 0})  # 0.1 refused a label gone and a question with none
        old_function = "corpus_fingerprint" in db.value("INFO FOR DB")["functions"]
        self.corpus = {old: (db.value("RETURN fn::corpus_fingerprint($t)", {"t": old}) if old_function else {},
                             db.value("RETURN fn::seval::corpus_fingerprint($t)", {"t": plan.names.get(old, old)}))
                       for old in [*plan.names, *(r["table"] for r in plan.attached)]}
        self.analyzers = _analyzer_checksums(db)
        self.golden_carried = self.golden_other = self.corpus_carried = 0

    def run(self, row: dict) -> dict:
        _corpus_named(row, self.plan, "params", "corpus")
        if isinstance(row.get("params"), dict):
            row["params"].setdefault("golden", "seval_question")  # 0.1 had one golden set: the harness's own
            row["params"].setdefault("dangling_labels", "stop")  # and refused every run with a label gone
        golden = row.get("golden") or {}
        if golden.get("fingerprint") and golden.get("fingerprint") == self.golden[0]:
            row["golden"] = dict(self.golden[1])
            self.golden_carried += 1
        elif golden.get("fingerprint"):
            row["golden"] = {"table": "seval_question", "dangling": 0, "stale": 0, "unlabelled": 0, **golden}
            self.golden_other += 1
        corpus = row.get("corpus")
        if isinstance(corpus, dict) and isinstance(corpus.get("table"), str):
            old, new = self.corpus.get(corpus["table"], ({}, {}))
            corpus["table"] = self.plan.names.get(corpus["table"], corpus["table"])
            same = [key for key in ("fingerprint", "embeddings") if old.get(key) and corpus.get(key) == old[key]]
            corpus.update({key: new[key] for key in same})
            self.corpus_carried += bool(same)
            pair = self.analyzers.get((corpus.get("analyzer"), corpus.get("analyzer_checksum")))
            if pair:
                corpus["analyzer"], corpus["analyzer_checksum"] = pair
        return row


def _analyzer_checksums(db: Database) -> dict[tuple[str, str], tuple[str, str]]:
    """{(0.1's analyzer, its checksum): (its name now, the checksum now)} for 0.1's analyzers, the
    checksum as fn::seval::corpus_analyzer computes it (its definition and its FUNCTION's)."""
    info = db.value("INFO FOR DB")

    def checksum(name: str) -> Optional[str]:
        definition = info["analyzers"].get(name)
        if definition is None:
            return None
        called = _FUNCTION.search(definition)
        text = definition + "\x1f" + (info["functions"].get(called[1], "") if called else "")
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    pairs = {(old, checksum(old)): (new, checksum(new)) for old, new in HARNESS_ANALYZERS_0_1.items()}
    return {old: new for old, new in pairs.items() if old[1] and new[1]}
