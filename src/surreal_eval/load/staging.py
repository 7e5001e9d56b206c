"""Staging a load: rows checked one at a time and written in batches into a schemaless staging table.

Python holds one batch at a time, plus the ids seen (to find duplicates: module duplicates). Problems that need every
row (duplicate ids, labels to unknown documents, questions with no labels or no embedding) are
collected in `Problems` and refused together, in one line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, TypedDict

from ..errors import ConfigError, EmbeddingFailed, InputError
from ..models import Article, Question, vector_problem
from ..store.connection import Database, record_str, to_record
from ..store.schema import DOCUMENTS, HarnessConfig, harness_config, import_harness, statement
from .duplicates import DUPLICATE_IDS, Duplicates
from .embedding import Embedder
from .rows import DEFAULT_BATCH_SIZE

__all__ = ["Progress", "Problems", "Load", "batches", "stage_documents", "stage_questions"]

#: How many ids a refusal lists per kind of problem before "(and N more)".
SHOWN = 5
#: Labels checked for existence per query.
_EXISTS_CHUNK = 1000

#: progress(step, done, total): a step ("staging documents", "embedding", "building indexes", …)
#: has done `done` of `total` units (None: unknown).
Progress = Callable[[str, int, "int | None"], None]


class Problems:
    """Problems that need every row to be found, refused together in one line.

    A problem filed under a key (a row's id) is forgotten with `forget(key)`, when a later row
    with that id replaces the row it was found on (`--on-duplicate last`)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.shown: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        self.keyed: dict[str, list[tuple[str, str]]] = {}

    def add(self, kind: str, entry: str, key: str | None = None) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        shown = self.shown.setdefault(kind, [])
        if len(shown) < SHOWN:
            shown.append(entry)
        if key is not None:
            self.keyed.setdefault(key, []).append((kind, entry))

    def forget(self, key: str) -> None:
        for kind, entry in self.keyed.pop(key, []):
            self.counts[kind] -= 1
            if entry in self.shown[kind]:
                self.shown[kind].remove(entry)
            if not self.counts[kind]:
                del self.counts[kind], self.shown[kind]

    def check(self) -> None:
        if not self.counts:
            return
        parts = []
        for kind, count in self.counts.items():
            more = f" (and {count - len(self.shown[kind])} more)" if count > len(self.shown[kind]) else ""
            parts.append(f"{kind}: {', '.join(self.shown[kind])}{more}"
                         + (" (--allow-unlabelled loads them: ranked, left out of every mean)" if kind == "questions with no labels" else ""))
        hint = ("; to load it as it is, keep one row of each id with --on-duplicate first or last"
                if DUPLICATE_IDS in self.counts else "")
        raise InputError(f"{self.what} refused: {'; '.join(parts)}{hint}")


# -------------------------------------------------------------------------------------- loading


class LoadOptions(TypedDict, total=False):
    """How every load runs (load_corpus, load_golden, load_dataset, load_beir take them as keywords): rows per
    INSERT while staging (`batch_size`, default DEFAULT_BATCH_SIZE), the `embedder` of rows without an embedding
    (None: such rows are refused), `progress(step, done, total)`, whether to import a missing harness
    (`create_harness`, default True; False makes a missing harness a ConfigError), what an id on two rows does
    (`on_duplicate`: 'refuse', the default, or keep the 'first' or the 'last') and `meanwhile()`: work done in the
    caller's thread while the engine commits the move (its one transaction, or the one closing its parts: the CLI makes
    ready what evaluates after an ingest; move.move_all)."""

    batch_size: int
    embedder: Embedder | None
    progress: Progress | None
    create_harness: bool
    on_duplicate: str
    meanwhile: Callable[[], None] | None


class Load:
    """One load: the database, the dimension every embedding must have, and the options (LoadOptions)."""

    def __init__(
        self,
        db: Database,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        embedder: Embedder | None = None,
        progress: Progress | None = None,
        create_harness: bool = True,
        on_duplicate: str = "refuse",
        meanwhile: Callable[[], None] | None = None,
        tables: list[str] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch size must be a whole number of at least 1, got {batch_size!r}")
        self.db = db
        self.batch_size = batch_size
        self.embedder = embedder
        self.progress = progress
        self.meanwhile = meanwhile
        self.started = time.perf_counter()
        #: the database's tables as the load found them (INFO FOR DB), when its caller read them: its checks before
        #: anything is staged read them once (each read costs the engine about 10 ms)
        self.tables = tables
        config = harness_config(db, tables)
        #: the configuration of the harness the load writes into (as found, or as this load imported it)
        self.config: HarnessConfig | None = config
        if config is None and not create_harness:
            raise ConfigError("the harness is not imported here: run `surreal-eval init --dimension N` first")
        self.dimension: int | None = config.dimension if config else None
        self.learnt = config is None  # the dimension comes from the first embedding of this load
        self.harness_imported: int | None = None
        self.batches = 0
        Duplicates(on_duplicate, Problems("load"))  # refuses an unknown policy before anything is staged
        self.on_duplicate = on_duplicate
        #: per staging table, the rows dropped because another row had their id
        self.dropped: dict[str, int] = {}
        #: rows moved into place, per table (move.move_all), and whether a failed load was undone (bulk._run)
        self.moved: dict[str, int] = {}
        self.undone = False

    def interrupted(self) -> str:
        """What an interrupted load kept and discarded (errors.on_interrupt): its rows once moved into place, else nothing."""
        if self.moved:
            what = {"seval_article": "articles", "seval_question": "questions"}
            return "loaded " + " and ".join(f"{n} {what.get(t, 'rows')} into {t}" for t, n in self.moved.items()) + \
                " (they were moved in before the interruption)"
        if self.undone:
            return "nothing was loaded: a load is kept whole or not at all, and this one was undone"
        return "nothing was loaded; the unfinished load is undone by the next load, or the next open of an embedded store"

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
        problem = vector_problem(vector)
        if problem:
            raise InputError(f"{kind} {ident!r}: {problem}")

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

    def insert(self, staging: str, rows: list[dict[str, Any]], *, replace: bool = False) -> None:
        """Stage `rows` as {id, row} (the move writes `row` as the record's content); `replace`: a
        row whose id is staged already replaces it."""
        if rows:
            staged = [{"id": r["id"], "row": {k: v for k, v in r.items() if k != "id"}} for r in rows]
            upsert = " ON DUPLICATE KEY UPDATE row = $input.row" if replace else ""
            self.db.query(statement("INSERT INTO {{staging}} $rows" + upsert + " RETURN NONE", staging=staging),
                          {"rows": staged})
            self.batches += 1
            self.db.flush_if_full()

    def staged_embeddings(self, staging: str, keys: list[str]) -> dict[str, list[float]]:
        """The embeddings of the rows staged under `keys` (for rows replacing them that have none)."""
        if not keys:
            return {}
        rows = self.db.value(statement("SELECT record::id(id) AS key, row.embedding AS embedding FROM {{staging}} "
                                       "WHERE record::id(id) IN $keys", staging=staging), {"keys": keys})
        return {row["key"]: row["embedding"] for row in rows if row.get("embedding") is not None}

    def ensure_harness(self, analyzer: str | None = None) -> None:
        """Import the harness with the dimension of this load's embeddings (article's BM25 index with
        `analyzer`), if it is missing."""
        if not self.learnt:
            return
        if self.dimension is None:
            raise InputError("nothing to load: no embedding was read, so the index dimension is unknown")
        self.config = HarnessConfig(dimension=self.dimension)
        import_harness(self.db, self.config, analyzer=analyzer)
        self.harness_imported = self.dimension
        self.learnt = False



def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch



def _document_text(doc: Article) -> str:
    """What an embedder embeds for a document: `title. content` (the convention of the CISI set)."""
    if doc.title and doc.content:
        return f"{doc.title}. {doc.content}"
    return doc.content or doc.title


def stage_documents(load: Load, documents: Iterable[Article], staging: str, problems: Problems, kind: str,
                    doc_table: str = DOCUMENTS) -> tuple[dict[str, Any], int]:
    """Stage every document (a chunk's bare `doc` id naming a record of `doc_table`); returns the ids
    staged (with where each was read) and how many the embedder embedded. A repeated id is handled as
    `load.on_duplicate` says (module duplicates)."""
    load.db.query(statement("DEFINE TABLE OVERWRITE {{staging}} SCHEMALESS", staging=staging))
    ids = Duplicates(load.on_duplicate, problems)
    embedded = 0
    step = f"staging {kind}s"
    load.step(step, 0)

    done = 0
    for batch in batches((doc for doc in documents if ids.admit(doc)), load.batch_size):
        done += len(batch)
        batch = ids.last_of_each(batch)
        missing = [d for d in batch if d.embedding is None]
        vectors: dict[str, list[float]] = {}
        if missing and load.embedder is not None:
            vectors = dict(zip((d.id for d in missing), load.embed([_document_text(d) for d in missing])))
            embedded += len(missing)
        vectors.update(load.staged_embeddings(staging, ids.lacking(batch, vectors)))
        rows = []
        for doc in batch:
            vector = doc.embedding if doc.embedding is not None else vectors.get(doc.id)
            if vector is None:
                problems.add(f"{kind}s without an embedding (give an embedder to compute them)", doc.id, ids.key(doc.id))
                continue
            load.check_embedding(kind, doc.id, vector)
            row = doc.model_dump(exclude_none=True)
            row["embedding"] = vector
            if doc.doc is not None:
                row["doc"] = to_record(doc.doc, doc_table)
            rows.append(row)
        load.insert(staging, rows, replace=ids.replacing)
        load.step(step, done)
    load.dropped[staging] = ids.dropped
    return ids.read, embedded



def _question_row(question: Question, label_table: str = DOCUMENTS) -> dict[str, Any]:
    """A question as a staged row (bare label ids naming records of `label_table`), refused with its
    id if it breaks a rule of the golden set."""
    qid = question.id
    if not question.text.strip():
        raise InputError(f"question {qid!r}: the text is empty")
    labels = [to_record(r, label_table) for r in question.relevant]
    names = [record_str(r) for r in labels]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(f"question {qid!r}: the same article is labelled twice ({twice})")
    if question.grades is not None and len(question.grades) != len(labels):
        raise InputError(f"question {qid!r}: {len(question.grades)} grades for {len(labels)} labels")
    if question.grades is not None and any(not (g > 0 and math.isfinite(g)) for g in question.grades):
        raise InputError(f"question {qid!r}: every grade must be a number above 0")
    row = question.model_dump(exclude_none=True, exclude={"provenance"})  # provenance goes to seval_label (labels.keep_provenance)
    row["relevant"] = labels
    if question.nonrelevant:
        judged = [to_record(r, label_table) for r in question.nonrelevant]
        both = sorted({record_str(r) for r in judged} & set(names))
        if both:
            raise InputError(f"question {qid!r}: {both[0]} is judged both relevant and non-relevant")
        row["nonrelevant"] = list({record_str(r): r for r in judged}.values())
    if question.passages:
        for passage in question.passages:
            if record_str(to_record(passage.doc, DOCUMENTS)) not in names:
                raise InputError(f"question {qid!r}: passage of {passage.doc} quotes a document that is not among its labels")
            if not passage.quote.strip():
                raise InputError(f"question {qid!r}: passage of {passage.doc} has an empty quote")
        row["passages"] = [{**p.model_dump(), "doc": to_record(p.doc, DOCUMENTS)} for p in question.passages]
    return row


def stage_questions(
    load: Load, questions: Iterable[Question], staging: str, problems: Problems, staged_documents: Collection[str],
    label_table: str = DOCUMENTS, allow_unlabelled: bool = False,
) -> tuple[int, int, int]:
    """Stage every question; returns (questions staged, labels, embedded by the embedder). A
    repeated id is handled as `load.on_duplicate` says (module duplicates)."""
    load.db.query(statement("DEFINE TABLE OVERWRITE {{staging}} SCHEMALESS", staging=staging))
    ids = Duplicates(load.on_duplicate, problems)
    to_check: dict[str, tuple[Any, str]] = {}  # label -> (record, first question naming it)
    counts = {"questions": 0, "labels": 0, "embedded": 0}
    labels_of: dict[str, int] = {}  # --on-duplicate last: the labels of each staged question
    load.step("staging questions", 0)

    def valid(batch: list[Question]) -> Iterator[tuple[Question, dict[str, Any]]]:
        for question in batch:
            if not question.relevant and not allow_unlabelled:  # judged not relevant only: a question nothing answers
                problems.add("questions with no labels", question.id, ids.key(question.id))
                continue
            row = _question_row(question, label_table)
            for label in row["relevant"]:
                if not (label.table_name == DOCUMENTS and label.id in staged_documents):
                    to_check.setdefault(record_str(label), (label, question.id))
            yield question, row

    done = 0
    for read in batches((q for q in questions if ids.admit(q)), load.batch_size):
        done += len(read)
        batch = list(valid(ids.last_of_each(read)))
        missing = [q for q, _ in batch if q.embedding is None]
        vectors: dict[str, list[float]] = {}
        if missing and load.embedder is not None:
            vectors = dict(zip((q.id for q in missing), load.embed([q.text for q in missing])))
            counts["embedded"] += len(missing)
        vectors.update(load.staged_embeddings(staging, ids.lacking([q for q, _ in batch], vectors)))
        rows = []
        for question, row in batch:
            vector = question.embedding if question.embedding is not None else vectors.get(question.id)
            if vector is None:
                problems.add("questions without an embedding (give an embedder to compute them)", question.id,
                             ids.key(question.id))
                continue
            load.check_embedding("question", question.id, vector)
            row["embedding"] = vector
            rows.append(row)
            if ids.replacing:  # a row replacing a staged one takes its place in the counts
                counts["questions"] -= question.id in labels_of
                counts["labels"] -= labels_of.get(question.id, 0)
                labels_of[question.id] = len(row["relevant"])
            counts["labels"] += len(row["relevant"])
        load.insert(staging, rows, replace=ids.replacing)
        counts["questions"] += len(rows)
        load.step("staging questions", done)

    for chunk in batches(list(to_check.values()), _EXISTS_CHUNK):
        missing_labels = load.db.value(
            "RETURN $labels.filter(|$r| !record::exists($r))", {"labels": [label for label, _ in chunk]})
        gone = {record_str(r) for r in missing_labels}
        for label, owner in chunk:
            if record_str(label) not in gone:
                continue
            if owner in ids.replaced:  # the question naming it first was replaced: who names it now?
                owner = load.db.value(statement(
                    "RETURN (SELECT VALUE record::id(id) FROM {{staging}} WHERE $label INSIDE row.relevant "
                    "ORDER BY id LIMIT 1)[0]", staging=staging), {"label": label})
                if owner is None:
                    continue
            problems.add("labels to unknown documents", f"{owner} -> {record_str(label)}")
    load.dropped[staging] = ids.dropped
    return counts["questions"], counts["labels"], counts["embedded"]


# --------------------------------------------------------------------------------- public API

