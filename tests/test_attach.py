"""A database that already holds a user's own tables: importing the harness never changes them, and
a user's corpus table is attached in place and evaluated, compared and gated through its own indexes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import HarnessConfig, Settings, connect, import_harness
from surreal_eval.errors import ConfigError, InputError, Rejected, SurrealEvalError
from surreal_eval.load.attach import attach_table
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_golden
from surreal_eval.models import Article, Question
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate

from .conftest import snapshot, lists_reused
from .test_candidate_cache import rankings

runner = CliRunner()

#: A user's own store, as the issue found it: their article table (schemaless: body, vec, owner),
#: their own question and eval_run tables, with data.
USER_TABLES = """
DEFINE TABLE seval_article SCHEMALESS PERMISSIONS FULL;
CREATE seval_article:1 CONTENT { body: 'my own notes', vec: [1, 2, 3], owner: 'ana' };
DEFINE TABLE seval_question SCHEMALESS;
CREATE seval_question:faq1 CONTENT { asked: 'how do I log in', votes: 3 };
DEFINE TABLE seval_run SCHEMAFULL;
DEFINE FIELD score ON seval_run TYPE float;
CREATE seval_run:jan CONTENT { score: 0.5 };
"""

#: The table langchain-surrealdb's SurrealDBVectorStore writes (vectorstores.py at 4cfecc5: SCHEMALESS
#: `documents`, rows {text, vector, metadata}, HNSW index `documents_vector_index` on `vector`), plus
#: the application's own FULLTEXT index on `text` with its own analyzer.
LANGCHAIN_TABLE = """
DEFINE TABLE IF NOT EXISTS documents SCHEMALESS;
DEFINE INDEX IF NOT EXISTS documents_vector_index ON TABLE documents FIELDS vector HNSW DIMENSION 4 DIST COSINE TYPE F32;
DEFINE ANALYZER IF NOT EXISTS app_words TOKENIZERS blank, class FILTERS lowercase, snowball(english);
DEFINE INDEX IF NOT EXISTS documents_text ON documents FIELDS text FULLTEXT ANALYZER app_words BM25;
"""
DOCS = {
    "refund": ("How to request a refund for a damaged parcel", [0.9, 0.1, 0.0, 0.0]),
    "track": ("Track your order with the courier number", [0.1, 0.9, 0.0, 0.0]),
    "password": ("Reset a forgotten password from the login page", [0.0, 0.1, 0.9, 0.0]),
    "invoice": ("Download an invoice for every purchase", [0.0, 0.0, 0.2, 0.9]),
    "shipping": ("Shipping costs and delivery times abroad", [0.2, 0.7, 0.1, 0.0]),
    "returns": ("Return an item within thirty days for a refund", [0.8, 0.0, 0.1, 0.2]),
    "account": ("Close your account and delete your data", [0.1, 0.0, 0.8, 0.3]),
    "gift": ("Gift cards never expire", [0.3, 0.3, 0.3, 0.3]),
}
QUESTIONS = [
    {"id": "money", "text": "refund for a damaged parcel", "embedding": [0.85, 0.05, 0.05, 0.05], "relevant": ["refund", "returns"]},
    {"id": "where", "text": "where is my order courier", "embedding": [0.1, 0.8, 0.05, 0.05], "relevant": ["track", "shipping"]},
    {"id": "login", "text": "forgotten password login", "embedding": [0.0, 0.1, 0.85, 0.1], "relevant": ["password"]},
    {"id": "bill", "text": "invoice purchase", "embedding": [0.0, 0.05, 0.2, 0.85], "relevant": ["invoice"]},
]


def user_store(path, text: str):
    """A surrealkv store at `path` holding `text`'s definitions and rows, closed again."""
    db = connect(Settings(url=f"surrealkv://{path}"))
    db.query(text)
    return db


def langchain_documents(db) -> None:
    db.query(LANGCHAIN_TABLE)
    for key, (text, vector) in DOCS.items():
        db.query("UPSERT type::record('documents', $k) CONTENT { text: $t, vector: $v, metadata: { source: $k + '.md' } }",
                 {"k": key, "t": text, "v": vector})


def table_state(db, table: str) -> dict:
    return {"info": db.value("INFO FOR TABLE $t", {"t": table}),
            "rows": db.value("SELECT * FROM type::table($t) ORDER BY id", {"t": table})}


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


# ------------------------------------------------------------------------------- import is safe


def test_init_refuses_a_store_with_the_users_own_article_question_and_eval_run_and_changes_nothing(tmp_path):
    store = tmp_path / "store"
    db = user_store(store, USER_TABLES)
    before = snapshot(db)
    db.close()
    result = cli(store, "init", "--dimension", "3")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "table seval_article" in lines[0] and "table seval_question" in lines[0] and "table seval_run" in lines[0]
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert snapshot(db) == before
    db.query("UPDATE seval_article:1 SET owner = 'bo'")  # the write the issue saw fail after init
    assert db.value("SELECT VALUE owner FROM ONLY seval_article:1") == "bo"
    db.close()


@pytest.mark.parametrize("definition, named", [
    ("DEFINE ANALYZER seval_english TOKENIZERS blank FILTERS lowercase", "analyzer seval_english"),
    ("DEFINE FUNCTION fn::seval::metric_recall($x: int) { RETURN $x }", "function fn::seval::metric_recall"),
    ("DEFINE TABLE seval_retriever SCHEMALESS; CREATE seval_retriever:mine SET kind = 'elastic'", "table seval_retriever"),
    ("DEFINE ACCESS seval_evaluator ON DATABASE TYPE RECORD", "access seval_evaluator"),
    ("DEFINE TABLE seval_corpus SCHEMALESS", "table seval_corpus"),
])
def test_import_refuses_each_name_the_user_already_defined_in_one_line_changing_nothing(definition, named):
    db = connect(Settings(url="mem://"))
    db.query(definition)
    before = snapshot(db)
    with pytest.raises(InputError) as refused:
        import_harness(db, HarnessConfig(dimension=4))
    assert named in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(db) == before


def test_import_again_and_an_import_by_an_earlier_harness_are_not_conflicts():
    db = connect(Settings(url="mem://"))
    import_harness(db, HarnessConfig(dimension=4))
    import_harness(db, HarnessConfig(dimension=4))
    owned = db.value("SELECT VALUE name FROM seval_object WHERE kind = 'table'")
    assert {"seval_article", "seval_question", "seval_run", "seval_retriever"} <= set(owned)
    db.query("REMOVE TABLE seval_object")  # as an earlier version of the harness left it
    import_harness(db, HarnessConfig(dimension=4))
    assert db.value("INFO FOR DB")["tables"].keys() >= {"seval_object", "seval_question"}


def test_a_load_that_would_import_the_harness_refuses_the_users_names_changing_nothing():
    db = connect(Settings(url="mem://"))
    db.query(USER_TABLES)
    before = snapshot(db)
    with pytest.raises(SurrealEvalError) as refused:
        load_corpus(db, [Article(id="a", content="text", embedding=[1.0, 0.0, 0.0])], table="seval_docs", create_harness=True)
    assert "table seval_article" in str(refused.value)
    assert snapshot(db) == before


# ---------------------------------------------------------------------------- attach in place


@pytest.fixture
def attached(tmp_path):
    """A store with the user's langchain `documents` table, the harness imported, the table attached
    and a golden set labelling its records loaded; yields (store, the table as it was before)."""
    store = tmp_path / "store"
    db = connect(Settings(url=f"surrealkv://{store}"))
    langchain_documents(db)
    before = table_state(db, "documents")
    db.close()
    assert cli(store, "init", "--dimension", "4").exit_code == 0
    result = cli(store, "attach", "documents", "--content", "text", "--embedding", "vector")
    assert result.exit_code == 0, result.output
    assert "documents_text" in result.stdout and "documents_vector_index" in result.stdout
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    result = cli(store, "load", "golden", str(golden), "--corpus", "documents")
    assert result.exit_code == 0, result.output
    return store, before


def test_attach_and_golden_set_leave_the_users_table_as_it_was(attached):
    store, before = attached
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert table_state(db, "documents") == before
    labels = db.value("SELECT VALUE relevant FROM ONLY seval_question:money")
    assert [str(r) for r in labels] == ["documents:refund", "documents:returns"]
    db.close()


def test_attached_retrievers_rank_exactly_as_the_applications_own_queries(attached):
    store, _ = attached
    db = connect(Settings(url=f"surrealkv://{store}"))
    for q in QUESTIONS:
        ours = db.value("RETURN fn::seval::retrieve('vector', $t, $v, 5, { corpus: 'documents' })", {"t": q["text"], "v": q["embedding"]})
        # langchain-surrealdb's similarity search, as vectorstores.py writes it
        theirs = db.value("SELECT id, (1 - vector::distance::knn()) AS similarity FROM type::table($table) "
                          "WHERE vector <|5, 40|> $vector ORDER BY similarity DESC, id", {"table": "documents", "vector": q["embedding"]})
        assert ours == [r["id"] for r in theirs]
        words = db.value("SELECT id, search::score(1) AS s FROM documents WHERE text @1,OR@ $q ORDER BY s DESC, id LIMIT 5",
                         {"q": q["text"]})
        bm25 = db.value("RETURN fn::seval::retrieve('bm25', $t, $v, 5, { corpus: 'documents' })", {"t": q["text"], "v": q["embedding"]})
        assert bm25 == [r["id"] for r in words if r["s"] > 0] and bm25
    db.close()


def test_an_attached_table_is_evaluated_compared_and_gated_through_the_cli(attached):
    store, before = attached
    first = cli(store, "evaluate", "--corpus", "documents", "--k", "1,3", "--tag", "a", "--json")
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["questions"] == 4 and data["corpus"]["table"] == "documents"
    assert {r["retriever"] for r in data["results"]} >= {"bm25", "vector", "hybrid"}
    vector_at_1 = next(r for r in data["results"] if r["retriever"] == "vector" and r["k"] == 1)
    assert vector_at_1["hit_rate"] == 1.0  # every question's nearest document is one of its labels
    second = cli(store, "evaluate", "--corpus", "documents", "--k", "1,3", "--tag", "b", "--json")
    assert second.exit_code == 0, second.output
    compared = cli(store, "compare", data["run"], json.loads(second.stdout)["run"], "--json")
    assert compared.exit_code == 0, compared.output
    gated = cli(store, "gate", "--baseline", data["run"], "--metric", "recall@3")
    assert gated.exit_code == 0, gated.output
    diagnosed = cli(store, "diagnose", "money", "--corpus", "documents", "--k", "3")
    assert diagnosed.exit_code == 0 and "How to request a refund" in diagnosed.stdout, diagnosed.output
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert table_state(db, "documents") == before
    db.close()


def test_the_application_deletes_a_labelled_record_and_the_next_run_names_the_dangling_label(attached):
    store, _ = attached
    db = connect(Settings(url=f"surrealkv://{store}"))
    db.query("DELETE documents:refund")  # as langchain-surrealdb's delete(ids=[...]) does: the harness never blocks it
    assert not db.value("RETURN record::exists(documents:refund)")
    with pytest.raises(SurrealEvalError) as refused:
        evaluate(db, ks=[1], params={"corpus": "documents"})
    assert "seval_question:money" in str(refused.value) and "documents:refund" in str(refused.value)
    assert "--dangling-labels miss" in str(refused.value) and "\n" not in str(refused.value)
    counted = evaluate(db, ks=[1], params={"corpus": "documents", "dangling_labels": "miss"})
    assert counted.golden["dangling"] == 1
    # the user rebuilds their table from scratch (langchain-surrealdb's delete() with no ids): it succeeds too
    db.query("DELETE documents")
    assert db.value("RETURN count(SELECT id FROM documents)") == 0
    db.close()


def test_attach_refusals_are_one_line_exit_2_and_change_nothing(tmp_path):
    store = tmp_path / "store"
    db = connect(Settings(url=f"surrealkv://{store}"))
    db.query("DEFINE TABLE notes SCHEMALESS; CREATE notes:1 SET body = 'hello world', vec = [1, 0, 0, 0];"
             "DEFINE TABLE wide SCHEMALESS; DEFINE INDEX wide_vec ON wide FIELDS vec HNSW DIMENSION 8 DIST COSINE;"
             "DEFINE INDEX wide_body ON wide FIELDS body FULLTEXT ANALYZER like BM25;"
             "DEFINE ANALYZER like TOKENIZERS blank;")
    db.close()
    assert cli(store, "init", "--dimension", "4").exit_code == 0
    db = connect(Settings(url=f"surrealkv://{store}"))
    before = snapshot(db)
    db.close()
    for args, says in [
        (["attach", "nothing", "--content", "body"], "does not exist"),
        (["attach", "seval_article", "--content", "content"], "harness's own"),
        (["attach", "notes", "--content", "body"], "no FULLTEXT index on body: give --index"),
        (["attach", "notes", "--content", "missing"], "no record with text in field missing"),
        (["attach", "notes", "--content", "body", "--embedding", "nowhere", "--index"], "no record with a vector in field nowhere"),
        (["attach", "notes", "--content", "body", "--title", "meta..title"], "--title field 'meta..title'"),
        (["attach", "wide", "--content", "body", "--embedding", "vec"], "8-d"),
        (["attach", "notes", "--content", "bad-name"], "not a valid identifier"),
    ]:
        result = cli(store, *args)
        assert result.exit_code == 2, (args, result.output)
        assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert snapshot(db) == before
    db.close()


def test_attach_with_index_defines_harness_owned_indexes_and_says_so(tmp_path):
    store = tmp_path / "store"
    db = connect(Settings(url=f"surrealkv://{store}"))
    db.query("DEFINE TABLE notes SCHEMALESS;")
    for key, (text, vector) in DOCS.items():
        db.query("CREATE type::record('notes', $k) CONTENT { body: $t, vec: $v }", {"k": key, "t": text, "v": vector})
    rows = db.value("SELECT * FROM notes ORDER BY id")
    db.close()
    assert cli(store, "init", "--dimension", "4").exit_code == 0
    result = cli(store, "attach", "notes", "--content", "body", "--embedding", "vec", "--index")
    assert result.exit_code == 0, result.output
    assert "seval_notes_body" in result.stdout and "seval_notes_vec" in result.stdout
    assert "without text" not in result.stdout and "without a vector" not in result.stdout  # every record has both
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert db.value("SELECT * FROM notes ORDER BY id") == rows
    assert set(db.value("INFO FOR TABLE notes")["indexes"]) == {"seval_notes_body", "seval_notes_vec"}
    assert {"notes.seval_notes_body", "notes.seval_notes_vec"} <= set(
        db.value("SELECT VALUE name FROM seval_object WHERE kind = 'index'"))
    assert db.value("RETURN fn::seval::retrieve('bm25', 'refund parcel', [1, 0, 0, 0], 3, { corpus: 'notes' })")[0].id == "refund"
    db.close()


def test_loads_never_write_to_an_attached_table_and_labels_need_an_attached_table_and_existing_records():
    db = connect(Settings(url="mem://"))
    langchain_documents(db)
    import_harness(db, HarnessConfig(dimension=4))
    attach_table(db, "documents", content="text", embedding="vector")
    before = table_state(db, "documents")
    with pytest.raises(ConfigError, match="attached"):
        load_corpus(db, [Article(id="x", content="new", embedding=[1.0, 0.0, 0.0, 0.0])], table="documents")
    with pytest.raises(ConfigError, match="attach elsewhere"):
        load_golden(db, [Question(id="q", text="t", embedding=[1.0, 0, 0, 0], relevant=["x"])], label_table="elsewhere")
    with pytest.raises(InputError, match="labels to unknown documents: q -> documents:nope"):
        load_golden(db, [Question(id="q", text="t", embedding=[1.0, 0, 0, 0], relevant=["refund", "nope"])],
                    label_table="documents")
    assert db.value("SELECT VALUE id FROM seval_question") == []
    assert table_state(db, "documents") == before
    reimported = import_harness(db, HarnessConfig(dimension=4, knn_ef=40))  # as tune does: the attached branches stay
    assert reimported and db.value("RETURN fn::seval::retrieve('vector', '', [0.9, 0.1, 0, 0], 1, { corpus: 'documents' })")[0].id == "refund"


def test_an_attached_table_is_chunked_and_its_labels_score_the_chunks(attached):
    from surreal_eval.load.chunking import chunk_corpus

    from .test_chunks import WordHashEmbedder

    store, before = attached
    db = connect(Settings(url=f"surrealkv://{store}"))
    report = chunk_corpus(db, source="documents", target="seval_doc_chunks", size=3, overlap=1, embedder=WordHashEmbedder())
    assert report.loaded > len(DOCS)
    assert {str(d) for d in db.value("SELECT VALUE doc FROM seval_doc_chunks")} == {f"documents:{k}" for k in DOCS}
    assert db.value("SELECT VALUE content FROM ONLY seval_doc_chunks:⟨refund#0⟩") == "How to request"
    run = evaluate(db, ks=[5], retrievers=["bm25"], params={"corpus": "seval_doc_chunks"}, per_question=True)
    ranked = {r.question: r.ranked for r in run.per_question}
    assert all(x.startswith("documents:") for ids in ranked.values() for x in ids)  # chunks scored as their documents
    assert "documents:refund" in ranked["seval_question:money"]
    assert table_state(db, "documents") == before
    db.close()


def test_judged_non_relevant_records_of_an_attached_table_are_kept_and_counted_by_judged_at_k():
    db = connect(Settings(url="mem://"))
    langchain_documents(db)
    import_harness(db, HarnessConfig(dimension=4))
    attach_table(db, "documents", content="text", embedding="vector")
    load_golden(db, [Question(id="q", text="refund damaged parcel", embedding=[0.9, 0.1, 0, 0],
                              relevant=["refund"], nonrelevant=["returns", "gift"])], label_table="documents")
    assert [str(r) for r in db.value("SELECT VALUE nonrelevant FROM ONLY seval_question:q")] == ["documents:returns", "documents:gift"]
    report = evaluate(db, ks=[2], retrievers=["vector"], params={"corpus": "documents"}, per_question=True)
    (row,) = [r for r in report.per_question if r.k == 2]
    assert row.ranked == ["documents:refund", "documents:returns"]  # both judged: one relevant, one not
    assert row.scores["judged"] == 1.0 and row.scores["precision"] == 0.5
    with pytest.raises(Rejected):  # a judged record of a table that is no corpus is refused like a label
        db.query("UPDATE seval_question:q SET nonrelevant = [seval_config:x]")


def test_an_attached_tables_lists_are_reused_until_its_own_rows_or_analyzer_change(attached):
    store, _ = attached
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        run = {"ks": [3], "retrievers": ["bm25", "vector"], "params": {"corpus": "documents"}}
        first = evaluate(db, **run)
        assert lists_reused(evaluate(db, **run)) == {"lists": 8, "reused": 8}
        db.query("UPDATE documents:gift SET text = 'Gift cards for a refund of a damaged parcel never expire'")
        assert evaluate(db, **run).retrieval["reused"] == 4  # the vector lists: the text changed, not the vectors
        db.query("DEFINE ANALYZER OVERWRITE app_words TOKENIZERS blank, class FILTERS lowercase; "
                 "REBUILD INDEX documents_text ON documents")
        changed = evaluate(db, **run)
        assert changed.retrieval["reused"] == 4
        fresh = evaluate(db, **run, fresh=True)
        assert rankings(db, changed) == rankings(db, fresh) != rankings(db, first)
    finally:
        db.close()


def test_attach_counts_records_without_text_or_vector_and_reads_nested_fields(tmp_path):
    """langchain-surrealdb keeps titles in metadata; some records of a real table lack text or a vector."""
    store = tmp_path / "store"
    db = connect(Settings(url=f"surrealkv://{store}"))
    db.query("DEFINE TABLE notes SCHEMALESS;")
    for key, (text, vector) in DOCS.items():
        db.query("CREATE type::record('notes', $k) CONTENT { body: $t, vec: $v, metadata: { title: $k, source: { page: 1 } } }",
                 {"k": key, "t": text, "v": vector})
    db.query("CREATE notes:blank SET body = '', vec = [0.1, 0.2, 0.3, 0.4]; CREATE notes:novec SET body = 'refund policy'")
    db.close()
    assert cli(store, "init", "--dimension", "4").exit_code == 0
    result = cli(store, "attach", "notes", "--content", "body", "--embedding", "vec", "--title", "metadata.title", "--index")
    assert result.exit_code == 0, result.output
    assert "of its 10 records, 1 without text in body (BM25 never finds them) and 1 without a vector in vec" in result.stdout
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert db.value("RETURN fn::seval::record_title(notes:refund)") == "refund"
    assert db.value("RETURN fn::seval::corpus_fingerprint('notes')")["documents"] == 10
    db.close()
