"""Import the harness's SurrealQL files into a database, in a fixed order, recording checksums, and
define the corpus tables and the dispatches generated from the database. The literals the files need
are filled by store/names.py's `render`, the one place that puts them into SurrealQL."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from pydantic import ConfigDict, Field

from ..model_base import Model
from .analyzers import record_analyzers, table_analyzer
from .bm25_fields import bm25_fields, bm25_predicates
from .connection import Database
from .migrations import move_old_results
from .names import (PREFIX, PREFIX_FUNCTIONS, RESERVED_WORDS, FieldPath, field_path, function_name, harness_table, identifier,
                    render, statement)
from .ownership import defined_names, record_owned, refuse_conflicts
from .previous import refuse_previous_release
from ..errors import ConfigError
from ..grammar import check_number, file_metrics, surql_dir

__all__ = [
    "HARNESS_SCRIPTS",
    "HarnessConfig",
    "surql_dir",
    "metric_dispatch",
    "function_dispatch",
    "function_name",
    "function_call",
    "function_probe",
    "render",
    "statement",
    "import_harness",
    "harness_config",
    "stored_dimension",
    "RESERVED_WORDS",
    "define_corpus",
    "define_vector_ef",
    "define_corpus_indexes",
    "upgrade_corpus_table",
    "record_article_indexes",
    "corpus_tables",
    "identifier",
    "harness_table",
    "field_path",
    "FieldPath",
    "PREFIX",
    "PREFIX_FUNCTIONS",
    "attached_tables",
    "attached_script",
    "record_attached_script",
    "require_config",
    "apply",
]

#: The files that make up the harness, in the order they are applied. corpus and corpus_indexes
#: are templates of one corpus table, applied here for `article` (and by define_corpus for others).
HARNESS_SCRIPTS = ("analyzers", "schema", "golden", "labels", "promote", "generate", "judge", "corpus", "corpus_indexes", "ingest", "bm25_match", "retrievers",
                   "tune_ef", "attached", "user_retrievers", "supplied", "endpoints", "rerank", "registry", "metrics", "scoring", "history",
                   "candidate_cache", "incremental", "incremental_bm25", "certificate", "ann_check",
                   "checks", "evaluate", "watch", "queries", "runs", "tags", "prune", "access")
#: The script rendered with one branch per attached table (see attached_script).
ATTACHED_SCRIPT = "attached"
CORPUS_SCRIPTS = ("corpus", "corpus_indexes")
DOCUMENTS = "seval_article"
#: The name the generated metric dispatch (metric_dispatch) is recorded under in harness_script.
METRIC_DISPATCH = "metric_dispatch"
DEMO_DIMENSION = 4

_EACH = re.compile(r"^-- each (content|embedding|bm25)\n(.*?)^-- end\n", re.MULTILINE | re.DOTALL)

class HarnessConfig(Model):
    """The literals the harness is rendered with; stored in the database as `seval_config:current`."""

    model_config = ConfigDict(frozen=True)

    dimension: int = Field(gt=0, le=16384)
    knn_depth: int = Field(default=100, gt=0, le=10000)
    knn_ef: int = Field(default=100, gt=0, le=10000)


def checked_config(*, dimension: Any, knn_depth: Any = 100, knn_ef: Any = 100) -> HarnessConfig:
    """A HarnessConfig from option values, each range-checked (grammar.LIMITS) with a one-line error."""
    return HarnessConfig(dimension=check_number("dimension", dimension), knn_depth=check_number("knn_depth", knn_depth),
                         knn_ef=check_number("knn_ef", knn_ef))

def _read(name: str) -> str:
    path = surql_dir() / f"{name}.surql"
    return path.read_text(encoding="utf-8")


def harness_config(db: Database, tables: Iterable[str] | None = None) -> HarnessConfig | None:
    """The configuration the database's harness was imported with, or None before `init` (`tables`: the database's
    tables, INFO FOR DB, when the caller has just read them)."""
    if not _has_harness(db, tables):
        return None
    row = db.value("SELECT * OMIT id FROM ONLY seval_config:current")
    return HarnessConfig(**row) if row else None


def stored_dimension(db: Database) -> int | None:
    """The dimension of the embeddings already stored, if any article or question exists (the harness imported)."""
    found = db.value(
        "RETURN array::len((SELECT VALUE embedding FROM seval_article LIMIT 1)[0] "
        "?? (SELECT VALUE embedding FROM seval_question LIMIT 1)[0] ?? [])"
    )
    return found or None


def import_harness(db: Database, config: HarnessConfig, *, skip_unchanged: bool = False,
                   analyzer: str | None = None) -> list[str]:
    """Apply every harness script to `db`, rendered with `config`; returns the script names applied.

    `article`'s BM25 index uses `analyzer` (english, seval_english_stop or an analyzer the database
    holds), else the analyzer it has, else the default (store/analyzers.py).

    Importing again with the same config changes nothing (every statement is DEFINE ... OVERWRITE).
    A dimension that differs from the embeddings already stored is refused, and so is any name the
    harness defines that the database already holds and the harness did not make (ownership.py).
    With `skip_unchanged`, a script whose rendered text has the checksum recorded for it in
    `seval_script` is not applied again (a changed config renders another text, so it is), and
    only the scripts applied are returned.
    """
    # server_events: 1 arms the ASYNC event that evaluates after an ingest (surql/watch.surql); an embedded engine never
    # runs it, and queuing it cost every watched commit 1.3 ms (3.7%) for nothing
    values = {**config.model_dump(), "corpus": DOCUMENTS, "analyzer": table_analyzer(db, DOCUMENTS, analyzer),
              "server_events": 0 if db.settings.is_embedded else 1}
    attached = attached_tables(db)
    texts = {name: attached_script(attached, config) if name == ATTACHED_SCRIPT
             else render(_read(name), values, source=f"surql/{name}.surql") for name in HARNESS_SCRIPTS}
    names = defined_names([*texts.values(), DISPATCH_DEFINES])
    refuse_conflicts(db, names)
    present = _has_harness(db)
    stored = stored_dimension(db) if present else None
    if stored and stored != config.dimension:
        raise ConfigError(
            f"the database holds {stored}-d embeddings; it cannot be re-imported with dimension "
            f"{config.dimension} (use a new database, or --dimension {stored})"
        )
    # corpus tables written before bm25_text (an older version): the field computed on their rows, their BM25 index
    # defined again on it below (article's by corpus_indexes, applied again since its text changed)
    upgraded = {t: table_analyzer(db, t) for t in _tables_without_bm25_text(db)} if present else {}
    for table in upgraded:
        _write_bm25_text(db, table, config)
    recorded = {}
    if skip_unchanged and present and harness_config(db) == config:
        recorded = {row["name"]: row["checksum"] for row in
                    db.value("SELECT record::id(id) AS name, checksum FROM seval_script")}
    checksums = {}
    applied = []
    for name, text in texts.items():
        checksums[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if recorded.get(name) == checksums[name]:
            continue
        apply(db, text)
        applied.append(name)
    for table, chosen in upgraded.items():
        if table != DOCUMENTS or "corpus_indexes" not in applied:
            define_corpus_indexes(db, table, analyzer=chosen)
    move_old_results(db)
    if "incremental_bm25" in applied and present:  # a BM25 state an earlier release kept beside the digests, moved to its table
        db.value("RETURN fn::seval::move_bm25_state()")
    dispatch = metric_dispatch(db)
    checksums[METRIC_DISPATCH] = hashlib.sha256(dispatch.encode("utf-8")).hexdigest()
    if recorded.get(METRIC_DISPATCH) != checksums[METRIC_DISPATCH]:
        apply(db, dispatch)
        applied.append(METRIC_DISPATCH)
    # the users' retriever functions: written again from the registry (not recorded: users' rows are not the harness)
    apply(db, function_dispatch(db))
    db.value("RETURN fn::seval::record_import($config, $checksums)", {"config": config.model_dump(), "checksums": checksums})
    record_owned(db, names)
    record_analyzers(db)
    db.value("RETURN fn::seval::prune_candidate_cache()")  # the candidate lists kept for reuse that can no longer match
    return applied


#: The names metric_dispatch defines (its text depends on the database, its names do not), for the ownership check.
DISPATCH_DEFINES = ("DEFINE FUNCTION fn::seval::scored_metrics\nDEFINE FUNCTION fn::seval::metrics\n"
                    "DEFINE FUNCTION fn::seval::extra_metrics\nDEFINE FUNCTION fn::seval::with_extra_metrics\n"
                    "DEFINE FUNCTION fn::seval::extra_metric_names\nDEFINE FUNCTION fn::seval::function_candidates")


def metric_dispatch(db: Database) -> str:
    """SurrealQL defining fn::seval::scored_metrics, fn::seval::metrics, fn::seval::extra_metrics and fn::seval::with_extra_metrics
    over every fn::seval::metric_* in `db` (metrics.surql applied): the file's in file order, then any other by name.

    SurrealQL cannot call a function named by a value, so the calls are written out here, each
    name a validated identifier; fn::seval::extra_metrics holds those fn::seval::standard_scores leaves out, and
    fn::seval::with_extra_metrics adds them to its rows (none: the rows as they are, nothing called).
    """
    defined = [name[len("seval::metric_"):] for name in db.value("INFO FOR DB")["functions"] if name.startswith("seval::metric_")]
    ordered = [n for n in file_metrics(_read("metrics")) if n in defined] + sorted(set(defined) - set(file_metrics(_read("metrics"))))
    names = [identifier(n, what="metric") for n in ordered]
    standard = set(db.value("RETURN object::keys(fn::seval::standard_scores([0], fn::seval::label_profile([0], [1], [1], NONE), [1])[0].metrics)"))
    args = "($ranked: array, $relevant: array, $grades: array, $k: int) -> object"
    extra = [n for n in names if n not in standard]

    def calls(chosen: list[str]) -> str:
        return ", ".join(n + ": fn::seval::metric_" + n + "($ranked, $relevant, $grades, $k)" for n in chosen)

    return "\n".join([
        "-- fn::seval::scored_metrics: every metric of this database (a function fn::seval::metric_<name> each), in report order.",
        "DEFINE FUNCTION OVERWRITE fn::seval::scored_metrics() -> array<string> { RETURN " + repr(names).replace('"', "'") + "; };",
        "-- fn::seval::metrics: every metric of fn::seval::scored_metrics() of one ranking at cutoff $k, as {<name>: value}.",
        "DEFINE FUNCTION OVERWRITE fn::seval::metrics" + args + " { RETURN { " + calls(names) + " }; };",
        "-- fn::seval::extra_metrics: the metrics of fn::seval::scored_metrics() that fn::seval::standard_scores does not compute,"
        " at cutoff $k, as {<name>: value}.",
        "DEFINE FUNCTION OVERWRITE fn::seval::extra_metrics" + args + " { RETURN { " + calls(extra) + " }; };",
        "-- fn::seval::extra_metric_names: the metrics of fn::seval::scored_metrics() that fn::seval::standard_scores does not compute"
        " (a run calls fn::seval::scores_at only when there are any).",
        "DEFINE FUNCTION OVERWRITE fn::seval::extra_metric_names() -> array<string> { RETURN " + repr(extra).replace('"', "'") + "; };",
        "-- fn::seval::with_extra_metrics: rows $rows of fn::seval::standard_scores for ranking $ranked with fn::seval::extra_metrics added at each k,"
        " on label profile $p's judged ids and the gains its level leaves (undefined values 0 above level 1).",
        "DEFINE FUNCTION OVERWRITE fn::seval::with_extra_metrics($rows: array<object>, $ranked: array, $p: object) -> array<object> { RETURN "
        + ("$rows.map(|$row| { k: $row.k, metrics: object::extend($row.metrics, "
           "fn::seval::defined_at_level(fn::seval::extra_metrics($ranked, $p.judged, $p.cut, $row.k), $p.level)) })" if extra else "$rows")
        + "; };",
    ])


def function_call(name: str, binding: list[str] | tuple[str, ...] = ("text", "embedding", "k"), *, text: str = "$text",
                  embedding: str = "$embedding", k: str = "$k", args: str = "$args") -> str:
    """A call of user function `name` (validated), each parameter given what `binding` says (store/signatures.py):
    `text`, `embedding`, `k`, or `arg:NAME` (field NAME, a validated identifier, of the object `args` evaluates to)."""
    given = {"text": text, "embedding": embedding, "k": k}
    if any(b not in given and not b.startswith("arg:") for b in binding):
        raise ConfigError(f"{name}: binding {list(binding)} names something other than text, embedding, k or arg:NAME")
    return function_name(name) + "(" + ", ".join(given.get(b) or args + "." + identifier(b[4:], what="argument") for b in binding) + ")"


def function_probe(name: str, binding: list[str] | tuple[str, ...]) -> str:
    """The statement registration runs: fn::seval::function_hits of user function `name` called as `binding` says on
    $text, $embedding, $k and the arguments $args, as retriever $name's candidate list on corpus $corpus."""
    return "RETURN fn::seval::function_hits($name, " + function_call(name, binding) + ", $corpus, $k)"


def function_dispatch(db: Database, *, rows: list[dict] | None = None) -> str:
    """SurrealQL defining fn::seval::function_candidates with one branch per registry row that calls a user's
    function (`retriever add --function`): that function called on what its row's `binding` gives each parameter
    (the question's text, its embedding, the depth $p.depth, or a value of the row's `args`, read from the row
    at the call), its result made a candidate list by fn::seval::function_hits. Each list name is a
    validated identifier and each function name a validated function name; `rows` ({name, function_name, binding})
    in place of the database's, for a transaction that changes them."""
    if rows is None:
        rows = db.value("SELECT record::id(id) AS name, function_name, binding FROM seval_retriever WHERE function_name != NONE")
    branches = "".join(
        "    IF $list = '" + identifier(r["name"], what="retriever") + "' { RETURN fn::seval::function_hits($list, "
        + function_call(r["function_name"], r.get("binding") or ("text", "embedding", "k"), text="$q.text", embedding="$q.embedding",
                        k="$p.depth", args="type::record('seval_retriever', $list).args") + ", $p.corpus, $p.depth) };\n"
        for r in sorted(rows, key=lambda r: r["name"]))
    return ("-- fn::seval::function_candidates: question $q's candidate list $list from the user's function its registry row names, "
            "called with what the row binds to each parameter: its text, embedding, the run's depth $p.depth or the row's args "
            "(fn::seval::function_hits on corpus $p.corpus).\n"
            "DEFINE FUNCTION OVERWRITE fn::seval::function_candidates($list: string, $q: object, $p: object) -> array<object> {\n"
            + branches + "    THROW 'no retriever function is registered as ' + $list + ' (surreal-eval retriever add)';\n};")


def attached_tables(db: Database) -> list[dict]:
    """The seval_corpus rows of the tables attached in place, as {table, content, embedding, ...}, by table."""
    if "seval_corpus" not in db.value("INFO FOR DB")["tables"]:
        return []
    return db.value("SELECT *, record::id(id) AS table OMIT id FROM seval_corpus WHERE attached = true ORDER BY table")


def attached_script(rows: list[dict], config: HarnessConfig) -> str:
    """surql/attached.surql rendered with one branch per row of `rows` naming the branch's field."""
    source = f"surql/{ATTACHED_SCRIPT}.surql"

    def expand(each: re.Match[str]) -> str:
        field = each[1]
        if field == "bm25":
            return "".join(render(bm25_predicates(each[2], bm25_fields(row)), {**config.model_dump(), "table": row["table"]}, source=source)
                           for row in rows if row.get("content"))
        return "".join(render(each[2], {**config.model_dump(), "table": row["table"], field: FieldPath(row[field])}, source=source)
                       for row in rows if row.get(field))

    return render(_EACH.sub(expand, _read(ATTACHED_SCRIPT)), config.model_dump(), source=source)


def _tables_without_bm25_text(db: Database, tables: Iterable[str] | None = None) -> list[str]:
    """The harness's corpus tables (not attached) that exist without field bm25_text: written by a version before it
    (`tables`: the database's tables, INFO FOR DB, when the caller has read them)."""
    if "seval_corpus" not in (tables := list(db.value("INFO FOR DB")["tables"] if tables is None else tables)):
        return []
    owned = db.value("SELECT VALUE record::id(id) FROM seval_corpus WHERE attached != true ORDER BY id")
    return [t for t in owned if t in tables and "bm25_text" not in db.value("INFO FOR TABLE $t", {"t": identifier(t, what="corpus table")})["fields"]]


def upgrade_corpus_table(db: Database, table: str, tables: Iterable[str] | None = None) -> bool:
    """Give harness corpus table `table`, written by a version before bm25_text (surql/corpus.surql), that field on
    every row and its BM25 index on it (with the analyzer its index had); True when it did, False when the table is
    missing or has the field already. (A load into such a table calls this first, with the tables it read before
    staging: `tables`; `init` does it for every one.)"""
    if table not in _tables_without_bm25_text(db, tables):
        return False
    chosen = table_analyzer(db, table)
    _write_bm25_text(db, table, require_config(db))
    define_corpus_indexes(db, table, analyzer=chosen)
    return True


def _write_bm25_text(db: Database, table: str, config: HarnessConfig) -> None:
    """Remove corpus table `table`'s search indexes, define its fields as corpus.surql does now, and write its rows
    again a thousand at a time (each write committed: an index defined in the transaction that wrote the rows comes
    out empty), so that the engine computes bm25_text; its indexes are defined again by the caller."""
    apply(db, statement("REMOVE INDEX IF EXISTS {{text}} ON {{corpus}}; REMOVE INDEX IF EXISTS {{vectors}} ON {{corpus}};",
                        text=f"{table}_content", vectors=f"{table}_embedding", corpus=table) + "\n"
          + render(_read("corpus"), {"corpus": identifier(table, what="corpus table"), "dimension": config.dimension},
                   source="surql/corpus.surql"))
    page = statement("RETURN array::len(UPDATE (SELECT VALUE id FROM {{corpus}} WHERE bm25_text = NONE LIMIT 1000) RETURN id);",
                     corpus=table)
    while db.value(page):
        db.flush_if_full()


def define_vector_ef(db: Database, ef: int) -> None:
    """Render surql/tune_ef.surql alone with HNSW search width `ef` and apply it: fn::seval::vec_candidates_at_ef,
    read only by a run whose parameters carry `knn_ef` (tune's sweep). Not recorded in seval_script:
    the harness as imported, and every ordinary evaluation, are unchanged by it."""
    config = require_config(db)
    values = {**config.model_dump(), "knn_ef": check_number("knn_ef", ef), "corpus": DOCUMENTS}
    apply(db, render(_read("tune_ef"), values, source="surql/tune_ef.surql"))


def define_corpus(db: Database, table: str, *, indexes: bool = True) -> None:
    """Define (or re-define, idempotently) corpus table `table` with the harness's dimension.

    With `indexes=False` the BM25 and HNSW indexes are left out, for a bulk load that defines them
    afterwards with define_corpus_indexes (one pass over the data instead of one per row).
    """
    config = require_config(db)
    values = {"corpus": identifier(table, what="corpus table"), "dimension": config.dimension}
    apply(db, render(_read("corpus"), values, source="surql/corpus.surql"))
    if indexes:
        define_corpus_indexes(db, table)


def define_corpus_indexes(db: Database, table: str, *, analyzer: str | None = None) -> None:
    """Define the FULLTEXT (BM25) and HNSW indexes of corpus table `table`, building them now; the
    BM25 index with `analyzer`, else the one it has, else the default (store/analyzers.py)."""
    config = require_config(db)
    chosen = table_analyzer(db, table, analyzer)
    values = {"corpus": identifier(table, what="corpus table"), "dimension": config.dimension, "analyzer": chosen}
    apply(db, render(_read("corpus_indexes"), values, source="surql/corpus_indexes.surql"))
    record_analyzers(db)
    if table == DOCUMENTS:
        record_article_indexes(db, chosen)


def record_article_indexes(db: Database, analyzer: str, config: HarnessConfig | None = None) -> None:
    """Record, after `article`'s BM25 index was given `analyzer` outside an import, the checksum an
    import now renders surql/corpus_indexes.surql with, so that `init` leaves the indexes be (`config`: the
    harness's configuration when the caller holds it, else read)."""
    config = config or require_config(db)
    text = render(_read("corpus_indexes"), {**config.model_dump(), "corpus": DOCUMENTS, "analyzer": analyzer},
                  source="surql/corpus_indexes.surql")
    db.value("RETURN fn::seval::record_import($config, { corpus_indexes: $sum })",
             {"config": config.model_dump(), "sum": hashlib.sha256(text.encode("utf-8")).hexdigest()})


def record_attached_script(db: Database, text: str) -> None:
    """Record the checksum of surql/attached.surql as rendered `text` (applied by an attach, outside an
    import), so that `init` finds the attached branches up to date and leaves them be."""
    config = require_config(db)
    db.value("RETURN fn::seval::record_import($config, { attached: $sum })",
             {"config": config.model_dump(), "sum": hashlib.sha256(text.encode("utf-8")).hexdigest()})


def corpus_tables(db: Database) -> list[str]:
    """Every table defined as a corpus by corpus.surql, `article` first."""
    found = db.value("SELECT VALUE record::id(id) FROM seval_corpus")
    return sorted(found, key=lambda t: (t != DOCUMENTS, t))


def require_config(db: Database) -> HarnessConfig:
    config = harness_config(db)
    if config is None:
        raise ConfigError("the harness is not imported here: run `surreal-eval init` first")
    return config


def _has_harness(db: Database, tables: Iterable[str] | None = None) -> bool:
    tables = list(db.value("INFO FOR DB")["tables"] if tables is None else tables)
    refuse_previous_release(db, tables)  # 0.1's harness, under unprefixed names: `surreal-eval migrate` first
    return "seval_config" in tables


def apply(db: Database, text: str, params: dict | None = None) -> None:
    """Run one rendered script (values in `params`) as a single transaction: all of it applies, or none."""
    db.query(f"BEGIN TRANSACTION;\n{text}\nCOMMIT TRANSACTION;", params)
