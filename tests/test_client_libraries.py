"""The databases users really have: the tables langchain-surrealdb, kreuzberg-surrealdb and the SurrealDB
documentation's LlamaIndex guide write, built with each one's own statements and record shapes (the
help-centre passages of data/help_centre.jsonl, dimension 4), with the harness imported beside them.
In each, `init` changes none of the library's definitions or rows, the table is attached, a golden
set is loaded or attached, and every retriever of the registry evaluates; the library's tables end
as they began, byte for byte (the engine's own rendering of every definition and row).

Sources, the statement texts below copied from them:
- langchain-surrealdb 0.2.1 (PyPI wheel), langchain_surrealdb/vectorstores.py: DEFINE_INDEX, run by
  SurrealDBVectorStore._ensure_index with the defaults table="documents", index_name=
  "documents_vector_index"; add_documents (connection.upsert(RecordID(table, id), {vector, text,
  metadata}), or connection.insert(table, ...) for a Document without an id: a random id);
  delete (connection.delete(RecordID(table, id)) per id, connection.delete(table) without ids);
  SEARCH_QUERY with _build_search_query's defaults (effort 40, score_threshold -1.0, no filter).
- kreuzberg-surrealdb 0.2.0 (PyPI wheel; kreuzberg-dev/kreuzberg-surrealdb@5595c37987ab32aaabcee30db5427293262e42f9):
  kreuzberg_surrealdb/schema.py build_pipeline_schema (DocumentPipeline, embed=True, defaults:
  tables documents and chunks, analyzer doc_analyzer, BM25(1.2,0.75), COSINE, EFC 150, M 12),
  _base.py _map_result_to_doc (documents:⟨sha256(content)⟩), pipeline.py DocumentPipeline._ingest_result
  (INSERT IGNORE INTO documents $records, then INSERT IGNORE INTO chunks $records, chunks:⟨hash_i⟩
  whose `document` names the document).
- surrealdb/docs.surrealdb.com@1a6b65775e004d68749215f5d14a4270da68942f,
  src/content/doc-integrations/Frameworks/llama-index.mdx: the schema, run with $tb bound to
  TABLE = "llama_chunks" (DIMENSION 768 there); SurrealVectorStore.add (INSERT INTO llama_chunks $data,
  ids the strings "llama_chunks:<i>", which SurrealDB 3 keeps as the key: llama_chunks:⟨llama_chunks:0⟩;
  text node.get_content(metadata_mode="all"): the node's metadata, a blank line, its text).
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

import pytest
from surrealdb import RecordID

from surreal_eval import HarnessConfig, Settings, add_function_retriever, connect, evaluate, import_harness, registry
from surreal_eval.errors import SurrealEvalError
from surreal_eval.load.attach import attach_table
from surreal_eval.golden.files import load_golden
from surreal_eval.golden.attach import attach_golden
from surreal_eval.models import Question
from surreal_eval.store.connection import Database, record_str, to_record

PASSAGES = [json.loads(line) for line in (Path(__file__).parent / "data" / "help_centre.jsonl").read_text().splitlines()]
FILES = [(name, list(group)) for name, group in groupby(PASSAGES, key=lambda p: p["file"])]

#: Help-centre questions: the passage (index into PASSAGES) that answers each, and an embedding near its vector.
QUESTIONS = [
    ("refund_time", "how long until my refund arrives", [0.88, 0.12, 0.08, 0.02], 0),
    ("password", "I forgot my password", [0.0, 0.93, 0.02, 0.1], 3),
    ("parcel", "where is my parcel tracking link", [0.02, 0.0, 0.94, 0.1], 5),
    ("gift_card", "do gift cards expire", [0.28, 0.0, 0.02, 0.9], 8),
    ("two_step", "turn on two-step verification", [0.05, 0.84, 0.0, 0.32], 4),
]

# ------------------------------------------------------------------------------ langchain-surrealdb

#: vectorstores.py DEFINE_INDEX, formatted with the defaults and embedding_dimension=4.
LANGCHAIN_SCHEMA = """
    DEFINE TABLE IF NOT EXISTS documents SCHEMALESS;
    DEFINE INDEX IF NOT EXISTS documents_vector_index
        ON TABLE documents
        FIELDS vector
        HNSW DIMENSION 4 DIST COSINE TYPE F32
        CONCURRENTLY;
"""
#: The ids the application gives add_documents, one a passage: strings, a uuid4, and one Document with none.
LANGCHAIN_IDS = ["1", "2", "3", "4", "5", "6", "7", "8", "f47ac10b-58cc-4372-a567-0e02b2c3d479", None]
#: SEARCH_QUERY as a function: the library's text, with K a literal (SurrealDB 3 takes no $param there:
#: a ceiling of 100 at the library's effort 40) and LIMIT $k, as the docs' function retrievers do.
LANGCHAIN_SIMILARITY = """
DEFINE FUNCTION fn::lc_similarity($vector: array<float>, $k: int) -> array {
    RETURN SELECT
        id,
        text,
        metadata,
        vector,
        similarity
    FROM (
        SELECT
            id,
            text,
            metadata,
            vector,
            (1 - vector::distance::knn()) as similarity
        FROM type::table("documents")
        WHERE vector <|100,40|> $vector
    )
    WHERE similarity >= -1.0
    ORDER BY similarity DESC
    LIMIT $k;
};
"""


def langchain_db() -> Database:
    """The store SurrealDBVectorStore(embedding, connection, embedding_dimension=4).add_documents(...) leaves."""
    db = connect(Settings(url="mem://"))
    db.query(LANGCHAIN_SCHEMA)
    for doc_id, passage in zip(LANGCHAIN_IDS, PASSAGES, strict=True):
        metadata = {"source": f"https://shop.example/help/{passage['file']}", "title": passage["title"]} if doc_id else {}
        data = {"vector": passage["vector"], "text": passage["text"], "metadata": metadata}
        if doc_id is None:
            db.query("INSERT INTO documents $data", {"data": data})
        else:
            db.query("UPSERT $id CONTENT $data", {"id": RecordID("documents", doc_id), "data": data})
    # CONCURRENTLY: the index builds in the background, and until it is ready KNN answers every row with distance NONE
    deadline = time.monotonic() + 30
    while db.value("INFO FOR INDEX documents_vector_index ON documents")["building"]["status"] != "ready":
        assert time.monotonic() < deadline, "documents_vector_index never became ready"
        time.sleep(0.05)
    return db


def langchain_golden(db: Database) -> str:
    """The questions loaded from a file, labelled with the ids add_documents returned (bare: records of documents)."""
    load_golden(db, [Question(id=key, text=text, embedding=vector, relevant=[LANGCHAIN_IDS[answer]])
                     for key, text, vector, answer in QUESTIONS], label_table="documents")
    return "seval_question"


# ------------------------------------------------------------------------------ kreuzberg-surrealdb

#: schema.py build_pipeline_schema(embed=True, embedding_dimension=4) with its defaults; the library sends one statement a query.
KREUZBERG_SCHEMA = [
    "DEFINE ANALYZER IF NOT EXISTS doc_analyzer TOKENIZERS class FILTERS snowball(english);",
    "DEFINE TABLE IF NOT EXISTS documents SCHEMAFULL;",
    "DEFINE FIELD IF NOT EXISTS source ON TABLE documents TYPE string;",
    "DEFINE FIELD IF NOT EXISTS content ON TABLE documents TYPE string;",
    "DEFINE FIELD IF NOT EXISTS mime_type ON TABLE documents TYPE string;",
    "DEFINE FIELD IF NOT EXISTS title ON TABLE documents TYPE option<string>;",
    "DEFINE FIELD IF NOT EXISTS authors ON TABLE documents TYPE option<string>;",
    "DEFINE FIELD IF NOT EXISTS created_at ON TABLE documents TYPE option<datetime>;",
    "DEFINE FIELD IF NOT EXISTS ingested_at ON TABLE documents TYPE datetime DEFAULT time::now();",
    "DEFINE FIELD IF NOT EXISTS metadata ON TABLE documents TYPE object FLEXIBLE;",
    "DEFINE FIELD IF NOT EXISTS quality_score ON TABLE documents TYPE option<float>;",
    "DEFINE FIELD IF NOT EXISTS content_hash ON TABLE documents TYPE string;",
    "DEFINE FIELD IF NOT EXISTS detected_languages ON TABLE documents TYPE option<array<object>>;",
    "DEFINE FIELD IF NOT EXISTS keywords ON TABLE documents TYPE option<array<string>>;",
    "DEFINE INDEX IF NOT EXISTS idx_doc_source ON TABLE documents FIELDS source UNIQUE;",
    "DEFINE INDEX IF NOT EXISTS idx_doc_hash ON TABLE documents FIELDS content_hash UNIQUE;",
    "DEFINE TABLE IF NOT EXISTS chunks SCHEMAFULL;",
    "DEFINE FIELD IF NOT EXISTS document ON TABLE chunks TYPE record<documents>;",
    "DEFINE FIELD IF NOT EXISTS content ON TABLE chunks TYPE string;",
    "DEFINE FIELD IF NOT EXISTS chunk_index ON TABLE chunks TYPE int;",
    "DEFINE FIELD IF NOT EXISTS embedding ON TABLE chunks TYPE option<array<float>>;",
    "DEFINE FIELD IF NOT EXISTS page_number ON TABLE chunks TYPE option<int>;",
    "DEFINE FIELD IF NOT EXISTS char_start ON TABLE chunks TYPE option<int>;",
    "DEFINE FIELD IF NOT EXISTS char_end ON TABLE chunks TYPE option<int>;",
    "DEFINE FIELD IF NOT EXISTS word_count ON TABLE chunks TYPE option<int>;",
    "DEFINE FIELD IF NOT EXISTS first_page ON TABLE chunks TYPE option<int>;",
    "DEFINE FIELD IF NOT EXISTS last_page ON TABLE chunks TYPE option<int>;",
    "DEFINE INDEX IF NOT EXISTS idx_chunk_content ON TABLE chunks FIELDS content FULLTEXT ANALYZER doc_analyzer BM25(1.2,0.75) HIGHLIGHTS;",
    "DEFINE INDEX IF NOT EXISTS idx_chunk_embedding ON TABLE chunks FIELDS embedding HNSW DIMENSION 4 TYPE F32 DIST COSINE EFC 150 M 12;",
]


def kreuzberg_hash(chunks: list[dict]) -> str:
    """_content_hash of the extracted content: sha256 of the text the chunks were cut from."""
    return hashlib.sha256("\n\n".join(c["text"] for c in chunks).encode()).hexdigest()


def kreuzberg_ingest(db: Database, name: str, chunks: list[dict]) -> list:
    """DocumentPipeline._ingest_result for one extracted file: its document, then its chunks; the
    result of the documents' INSERT IGNORE (what _check_insert_result inspects)."""
    content_hash = kreuzberg_hash(chunks)
    doc_id = RecordID("documents", content_hash)
    pages = [c["page"] for c in chunks if "page" in c]
    doc = {"id": doc_id, "source": f"help-centre/{name}", "content": "\n\n".join(c["text"] for c in chunks),
           "mime_type": "application/pdf" if name.endswith(".pdf") else "text/markdown", "title": chunks[0]["title"],
           "authors": None, "created_at": None,
           "metadata": {"title": chunks[0]["title"], **({"page_count": max(pages)} if pages else {})},
           "quality_score": 0.9, "content_hash": content_hash, "detected_languages": [], "keywords": []}
    inserted = db.value("INSERT IGNORE INTO documents $records", {"records": [doc]})
    records = [{"id": RecordID("chunks", f"{content_hash}_{i}"), "document": doc_id, "content": c["text"], "chunk_index": i,
                "embedding": c["vector"], "word_count": len(c["text"].split()), "page_number": c.get("page"),
                "char_start": None, "char_end": None, "first_page": c.get("page"), "last_page": c.get("page")}
               for i, c in enumerate(chunks)]
    db.query("INSERT IGNORE INTO chunks $records", {"records": records})
    return inserted


#: The golden set a kreuzberg user keeps beside it: questions, the documents that answer them, and the
#: question's embedding from DocumentPipeline.embed_query.
KREUZBERG_QUESTIONS = """
DEFINE TABLE eval_questions SCHEMAFULL;
DEFINE FIELD question ON eval_questions TYPE string;
DEFINE FIELD expected ON eval_questions TYPE array<record<documents>>;
DEFINE FIELD embedding ON eval_questions TYPE array<float>;
"""


def document_of(passage: int) -> RecordID:
    """The kreuzberg document holding passage `passage`."""
    return RecordID("documents", kreuzberg_hash(next(chunks for _, chunks in FILES if PASSAGES[passage] in chunks)))


def kreuzberg_db() -> Database:
    """The store DocumentPipeline(embed=True) leaves after setup_schema() and ingesting the help centre's files."""
    db = connect(Settings(url="mem://"))
    for statement in KREUZBERG_SCHEMA:
        db.query(statement)
    for name, chunks in FILES:
        kreuzberg_ingest(db, name, chunks)
    db.query(KREUZBERG_QUESTIONS)
    for key, text, vector, answer in QUESTIONS:
        db.query("CREATE type::record('eval_questions', $key) CONTENT { question: $text, expected: [$doc], embedding: $vector }",
                 {"key": key, "text": text, "doc": document_of(answer), "vector": vector})
    return db


def kreuzberg_golden(db: Database) -> str:
    report = attach_golden(db, "eval_questions", text="question", relevant="expected", embedding="embedding")
    assert (report.questions, report.labels, report.dangling) == (len(QUESTIONS), len(QUESTIONS), 0)
    return "eval_questions"


# ------------------------------------------------------------------------------ the LlamaIndex guide

#: The guide's schema, as it runs it: sdb.query(schema, {"tb": TABLE}); DIMENSION 768 there.
LLAMA_SCHEMA = """
DEFINE TABLE $tb SCHEMALESS PERMISSIONS NONE;
DEFINE FIELD text      ON $tb TYPE string;
DEFINE FIELD embedding ON $tb TYPE array;

DEFINE INDEX idx_hnsw ON $tb
  FIELDS embedding
  HNSW DIMENSION 4
  DIST   COSINE;
"""


def llama_text(passage: dict) -> str:
    """node.get_content(metadata_mode="all"): the file metadata SimpleDirectoryReader attaches, one `key: value`
    a line, a blank line, the text."""
    size = sum(len(p["text"]) + 2 for p in PASSAGES if p["file"] == passage["file"])
    metadata = {"file_path": f"/data/my_pdfs/{passage['file']}", "file_name": passage["file"],
                "file_type": mimetypes.guess_type(passage["file"])[0], "file_size": size,
                "creation_date": "2025-01-10", "last_modified_date": "2025-01-10"}
    return "\n".join(f"{k}: {v}" for k, v in metadata.items()) + "\n\n" + passage["text"]


def llama_db() -> Database:
    """The store VectorStoreIndex.from_documents(docs, vector_store=SurrealVectorStore(table=TABLE, conn=sdb)) leaves."""
    db = connect(Settings(url="mem://"))
    db.query(LLAMA_SCHEMA, {"tb": "llama_chunks"})
    rows = [{"id": f"llama_chunks:{i}", "text": llama_text(p), "embedding": p["vector"]} for i, p in enumerate(PASSAGES)]
    db.query("INSERT INTO llama_chunks $data", {"data": rows})
    return db


def llama_golden(db: Database) -> str:
    """The questions loaded from a file, labelled with the ids the guide's query() returns, written out as str(RecordID)."""
    load_golden(db, [Question(id=key, text=text, embedding=vector, relevant=[str(RecordID("llama_chunks", f"llama_chunks:{answer}"))])
                     for key, text, vector, answer in QUESTIONS], label_table="llama_chunks")
    return "seval_question"


# ------------------------------------------------------------------------------ the three, alike


@dataclass
class Library:
    """How one library's store is built, attached and given its golden set."""

    build: Callable[[], Database]
    corpus: str
    attach: dict
    #: the indexes attach defines on the corpus table (harness-owned, prefixed)
    defines: set[str]
    golden: Callable[[Database], str]
    #: what a label of each question names: the answering passage's record, or its document
    label: Callable[[int], RecordID]
    #: its tables that labels name but attach never touches
    untouched: list[str] = field(default_factory=list)


LIBRARIES = {
    "langchain": Library(langchain_db, "documents", {"content": "text", "embedding": "vector", "title": "metadata.title", "index": True},
                         # --index with --title: BM25 searches the title too, through an index of its own
                         {"seval_documents_text", "seval_documents_metadata_title"}, langchain_golden,
                         lambda p: RecordID("documents", LANGCHAIN_IDS[p])),
    "kreuzberg": Library(kreuzberg_db, "chunks", {"content": "content", "embedding": "embedding", "doc": "document"},
                         set(), kreuzberg_golden, document_of, untouched=["documents"]),
    "llamaindex": Library(llama_db, "llama_chunks", {"content": "text", "embedding": "embedding", "index": True},
                          {"seval_llama_chunks_text"}, llama_golden, lambda p: RecordID("llama_chunks", f"llama_chunks:{p}")),
}


#: The means below 1.0 when every retriever of the registry runs at k 1, 3, 5: every question's label is its nearest
#: record, so the vector retrievers and the fusions find all five at k 1, and BM25 finds all five at k 1 but in
#: LlamaIndex's, where `refund_time` ("how long until my refund arrives") ranks llama_chunks:6 first: its text has
#: "arrived", and the metadata lines the guide prepends put "refunds.md" into every chunk of that file, so "refund" is
#: the commoner term there (idf lower) and chunk 6 outscores chunk 0: 4 of 5 at k 1.
BM25_MISSES = {"documents": {}, "chunks": {}, "llama_chunks": {("bm25", 1): pytest.approx(0.8)}}


def harness_name(name: str) -> bool:
    return name.startswith(("seval_", "seval::"))


def users_only(info: dict) -> dict:
    """INFO FOR DB / INFO FOR TABLE without the harness's names."""
    return {kind: {n: d for n, d in defs.items() if not harness_name(n)} for kind, defs in info.items()}


def library_state(db: Database) -> dict:
    """Every definition and row that is not the harness's: INFO FOR DB, INFO FOR TABLE and every row
    of each table, as the engine renders them (<string>, so a changed type shows as well as a changed value)."""
    info = db.value("INFO FOR DB")
    tables = sorted(t for t in info["tables"] if not harness_name(t))
    return {"db": users_only(info),
            "tables": {t: users_only(db.value("INFO FOR TABLE $t", {"t": t})) for t in tables},
            "rows": {t: db.value("RETURN <string> (SELECT * FROM type::table($t) ORDER BY id)", {"t": t}) for t in tables}}


def harness_names_on(db: Database, table: str) -> set[str]:
    return {n for defs in db.value("INFO FOR TABLE $t", {"t": table}).values() for n in defs if harness_name(n)}


def built_in_retrievers(db: Database) -> list[str]:
    return [r.name for r in registry(db) if r.harness]


def per_question(report, retriever: str, k: int) -> dict[str, list[str]]:
    return {r.question: r.ranked for r in report.per_question if r.retriever == retriever and r.k == k}


@pytest.fixture(params=sorted(LIBRARIES))
def library(request):
    """(its description, its store with the harness imported, the store as the library left it)."""
    lib = LIBRARIES[request.param]
    db = lib.build()
    before = library_state(db)
    import_harness(db, HarnessConfig(dimension=4))
    yield lib, db, before
    db.close()


@pytest.fixture
def attached():
    """make(name): that library's store with the harness imported, its table attached and (unless
    golden=False) its golden set loaded or attached, as (the store, the golden set's table); closed at teardown."""
    opened = []

    def make(name: str, *, golden: bool = True) -> tuple[Database, str | None]:
        lib = LIBRARIES[name]
        db = lib.build()
        opened.append(db)
        import_harness(db, HarnessConfig(dimension=4))
        attach_table(db, lib.corpus, **lib.attach)
        return db, lib.golden(db) if golden else None

    yield make
    for db in opened:
        db.close()


def test_init_changes_none_of_the_librarys_definitions_or_rows(library):
    lib, db, before = library
    assert library_state(db) == before
    assert not harness_names_on(db, lib.corpus)


def test_the_librarys_table_is_attached_and_every_retriever_evaluates_leaving_it_as_it_was(library):
    lib, db, before = library
    report = attach_table(db, lib.corpus, **lib.attach)
    assert report.records == len(PASSAGES) and report.missing_content == report.missing_embedding == 0
    assert set(report.defined) == lib.defines == harness_names_on(db, lib.corpus)  # the only definitions added to it
    for table in lib.untouched:  # kreuzberg's documents: labels name its records, nothing is defined on it
        assert report.parents == [table] and not harness_names_on(db, table)
        assert not db.value("RETURN record::exists(type::record('seval_corpus', $t))", {"t": table})
    golden = lib.golden(db)
    retrievers = built_in_retrievers(db)
    assert {"bm25", "vector", "vector_exact", "hybrid", "hybrid_floor", "hybrid_linear"} <= set(retrievers)
    run = evaluate(db, ks=[1, 3, 5], retrievers=retrievers, params={"corpus": lib.corpus, "golden": golden}, per_question=True)
    assert run.questions == len(QUESTIONS) and run.corpus["table"] == lib.corpus and run.golden["table"] == golden
    assert {r.retriever for r in run.results} == set(retrievers)
    for key, _, _, answer in QUESTIONS:  # each question's nearest record is the one it is labelled with
        for retriever in ("vector", "vector_exact"):
            assert per_question(run, retriever, 1)[f"{golden}:{key}"] == [record_str(lib.label(answer))]
    recall = {(r.retriever, r.k): r.scores["recall"] for r in run.results}
    for (retriever, k), value in recall.items():  # one label a question: recall@k is the share of questions found in the top k
        ranked = per_question(run, retriever, k)
        found = sum(record_str(lib.label(answer)) in ranked[f"{golden}:{key}"][:k] for key, _, _, answer in QUESTIONS)
        assert value == pytest.approx(found / len(QUESTIONS)), (retriever, k)
    assert {key: value for key, value in recall.items() if value != 1.0} == BM25_MISSES[lib.corpus]
    assert library_state(db) == before  # apart from the harness's own index on it (above), its tables as they were


def test_a_label_spelled_as_surrealdb_its_sdk_or_the_harness_write_the_record_names_that_record(attached):
    """The guide's ids are keys that are not plain words: the SDK's str(RecordID) writes
    llama_chunks:⟨llama_chunks:0⟩, the engine llama_chunks:`llama_chunks:3` (as in the harness's own
    dangling-label message), the harness's JSON llama_chunks:llama_chunks:5; each names the record
    (the brackets and backticks were once read as part of the key: "labels to unknown documents")."""
    db, _ = attached("llamaindex", golden=False)
    key = {answer: f"llama_chunks:{answer}" for _, _, _, answer in QUESTIONS}
    spelled = [str(RecordID("llama_chunks", key[0])), db.value("RETURN <string> type::record('llama_chunks', $k)", {"k": key[3]}),
               record_str(RecordID("llama_chunks", key[5])), f"⟨{key[8]}⟩", f"llama_chunks:`{key[4]}`"]
    assert spelled[:2] == ["llama_chunks:⟨llama_chunks:0⟩", "llama_chunks:`llama_chunks:3`"]
    load_golden(db, [Question(id=q, text=text, embedding=vector, relevant=[label])
                     for (q, text, vector, _), label in zip(QUESTIONS, spelled, strict=True)], label_table="llama_chunks")
    stored = db.value("SELECT VALUE relevant[0] FROM seval_question ORDER BY id")
    by_id = dict(zip(sorted(q for q, *_ in QUESTIONS), stored, strict=True))
    assert {q: by_id[q] for q, *_ in QUESTIONS} == {q: RecordID("llama_chunks", key[a]) for q, _, _, a in QUESTIONS}
    assert to_record("documents:⟨f47ac10b-58cc-4372-a567-0e02b2c3d479⟩", "documents") == RecordID("documents", LANGCHAIN_IDS[8])
    assert to_record("t:`a\\`b`", "t") == RecordID("t", "a`b") and to_record("other:⟨4⟩", "t") == RecordID("t", "other:⟨4⟩")


def test_labels_naming_the_documents_of_chunks_attached_without_doc_say_so_and_name_both_ways_on():
    """kreuzberg's labels name documents:⟨hash⟩ while the texts are chunks: attached without --doc, the refusal says the
    labels name another table than the corpus, and how to go on (--corpus documents, or --doc FIELD)."""
    lib = LIBRARIES["kreuzberg"]
    db = lib.build()
    try:
        import_harness(db, HarnessConfig(dimension=4))
        attach_table(db, "chunks", content="content", embedding="embedding")  # no doc="document"
        with pytest.raises(SurrealEvalError) as refused:
            attach_golden(db, "eval_questions", text="question", relevant="expected", embedding="embedding")
        said = str(refused.value)
        assert "a record of table documents: the labels name another table than the corpus (the corpus tables: chunks, seval_article)" in said
        assert "attach it (surreal-eval attach documents --content FIELD) and evaluate with --corpus documents" in said
        assert "if each record of chunks names its documents record in a field, attach chunks again with --doc FIELD" in said
        assert said.endswith(f"({len(QUESTIONS)} labels affected); nothing was attached")
        attach_table(db, "chunks", content="content", embedding="embedding", doc="document")  # the second way on
        assert lib.golden(db) == "eval_questions"
    finally:
        db.close()


def test_langchains_own_similarity_query_as_a_retriever_scores_the_mrr_of_vector(attached):
    db, _ = attached("langchain")
    db.query(LANGCHAIN_SIMILARITY)  # the application's own search, as a function of its database
    add_function_retriever(db, "langchain", function="fn::lc_similarity", corpus="documents")
    run = evaluate(db, ks=[1, 3, 5], retrievers=["vector", "langchain"], params={"corpus": "documents"}, per_question=True)
    mrr = {(r.retriever, r.k): r.scores["mrr"] for r in run.results}
    for k in (1, 3, 5):
        assert mrr[("langchain", k)] == pytest.approx(mrr[("vector", k)])
    assert per_question(run, "langchain", 5) == per_question(run, "vector", 5)


def test_langchains_deletes_succeed_and_the_next_run_names_the_dangling_label(attached):
    db, _ = attached("langchain")
    gone = RecordID("documents", LANGCHAIN_IDS[QUESTIONS[1][3]])
    db.query("DELETE $id", {"id": gone})  # vector_store.delete(ids=["4"]): connection.delete(RecordID("documents", "4"))
    assert not db.value("RETURN record::exists($id)", {"id": gone})
    with pytest.raises(SurrealEvalError) as refused:
        evaluate(db, ks=[1], params={"corpus": "documents"})
    message = str(refused.value)
    assert message.startswith("question seval_question:password is labelled with ") and "\n" not in message
    named = re.search(r"labelled with (\S+),", message)[1]  # as the engine writes it: documents:`4`
    assert to_record(named, "documents") == gone  # and read back as that record, to relabel or restore it
    counted = evaluate(db, ks=[1, 3], params={"corpus": "documents", "dangling_labels": "miss"})
    assert counted.golden["dangling"] == 1
    db.query("DELETE documents")  # vector_store.delete(): connection.delete("documents")
    assert db.value("RETURN count(SELECT id FROM documents)") == 0


def test_kreuzberg_chunks_are_scored_by_the_document_a_label_names(attached):
    db, golden = attached("kreuzberg")
    run = evaluate(db, ks=[1, 5], retrievers=["vector", "bm25"], params={"corpus": "chunks", "golden": golden}, per_question=True)
    for retriever in ("vector", "bm25"):
        ranked = per_question(run, retriever, 5)
        for key, text, vector, _ in QUESTIONS:
            chunks = db.value("RETURN fn::seval::retrieve($r, $t, $v, 5, { corpus: 'chunks' })", {"r": retriever, "t": text, "v": vector})
            assert all(c.table_name == "chunks" for c in chunks)
            # each chunk ranked becomes its document, each document at the rank of its best chunk
            documents = list(dict.fromkeys(record_str(db.value("SELECT VALUE document FROM ONLY $c", {"c": c})) for c in chunks))
            assert ranked[f"{golden}:{key}"] == documents
    # the refund question's three nearest chunks are refunds.md's: its document first, the fourth chunk's second
    assert len([c for c in db.value("RETURN fn::seval::retrieve('vector', '', $v, 3, { corpus: 'chunks' })", {"v": QUESTIONS[0][2]})
                if c.id.startswith(document_of(0).id)]) == 3
    assert per_question(run, "vector", 5)[f"{golden}:refund_time"][:2] == [record_str(document_of(0)), record_str(document_of(5))]
    assert next(r for r in run.results if r.retriever == "vector" and r.k == 1).scores["recall"] == 1.0


def test_a_kreuzberg_document_row_dropped_on_insert_is_reported_as_a_dangling_label(attached):
    db, golden = attached("kreuzberg")
    # refunds.md is edited and ingested again: a new content hash, the same source. INSERT IGNORE drops the
    # document (idx_doc_source is UNIQUE) and returns no error string, so _check_insert_result passes and the
    # new chunks go in, pointing at a document that was never written.
    name, chunks = FILES[0]
    edited = [{**chunks[0], "text": chunks[0]["text"] + " Refunds to gift cards are instant."}, *chunks[1:]]
    assert kreuzberg_ingest(db, name, edited) == []
    missing = RecordID("documents", kreuzberg_hash(edited))
    assert not db.value("RETURN record::exists($d)", {"d": missing})
    assert db.value("SELECT VALUE id FROM chunks WHERE document = $d", {"d": missing})
    # a question labelled from what the user saw: the new chunk's document
    db.query("CREATE eval_questions:instant CONTENT { question: 'are gift card refunds instant', expected: [$d], embedding: $v }",
             {"d": missing, "v": edited[0]["vector"]})
    dangling = db.value("RETURN fn::seval::dangling_labels(fn::seval::golden_rows(fn::seval::golden_set('eval_questions'), NONE, NONE))")
    assert [(record_str(d["question"]), record_str(d["label"])) for d in dangling] == [("eval_questions:instant", record_str(missing))]
    with pytest.raises(SurrealEvalError, match="eval_questions:instant is labelled with documents:"):
        evaluate(db, ks=[1], params={"corpus": "chunks", "golden": golden})


#: The copy route of docs/own-database.md#langchain-surrealdb: the query its script runs in the application's environment.
LANGCHAIN_COPY = "SELECT record::id(id) AS id, text AS content, vector AS embedding, metadata.title ?? '' AS title FROM documents"


def test_langchains_rows_copied_as_the_docs_say_load_label_and_evaluate_as_attached_in_place(tmp_path):
    """langchain-surrealdb pins the 1.x SDK, so its database is read in its own environment and copied: the rows the
    docs' query returns, written one JSON object a line, load into a harness corpus that the same bare-id labels name,
    and every question's vector ranking is the one the attached table gives."""
    from typer.testing import CliRunner

    from surreal_eval.present.cli import app

    source = langchain_db()
    try:
        rows = source.value(LANGCHAIN_COPY)
        import_harness(source, HarnessConfig(dimension=4))
        attach_table(source, "documents", **LIBRARIES["langchain"].attach)
        golden = langchain_golden(source)
        attached = evaluate(source, ks=[3], retrievers=["vector"], params={"corpus": "documents", "golden": golden}, per_question=True)
    finally:
        source.close()
    (tmp_path / "documents.jsonl").write_text("".join(json.dumps({**r, "id": str(r["id"])}) + "\n" for r in rows))
    (tmp_path / "questions.jsonl").write_text("".join(
        json.dumps({"id": key, "text": text, "embedding": vector, "relevant": [next(str(r["id"]) for r in rows if r["content"] ==
                                                                                   PASSAGES[answer]["text"])]}) + "\n"
        for key, text, vector, answer in QUESTIONS))
    url = f"surrealkv://{tmp_path / 'store'}"
    runner = CliRunner()
    for args in (["init", "--dimension", "4"], ["load", "corpus", str(tmp_path / "documents.jsonl"), "--corpus", "seval_documents"],
                 ["load", "golden", str(tmp_path / "questions.jsonl"), "--corpus", "seval_documents"]):
        done = runner.invoke(app, ["--url", url, *args])
        assert done.exit_code == 0, done.output
    with connect(Settings(url=url)) as copy:
        run = evaluate(copy, ks=[3], retrievers=["vector"], params={"corpus": "seval_documents"}, per_question=True)
    assert {q.removeprefix("seval_question:"): [i.split(":", 1)[1] for i in ranked] for q, ranked in per_question(run, "vector", 3).items()} == \
           {q.removeprefix("seval_question:"): [i.split(":", 1)[1] for i in ranked] for q, ranked in per_question(attached, "vector", 3).items()}
    assert [r.scores["recall"] for r in run.results] == [1.0]
