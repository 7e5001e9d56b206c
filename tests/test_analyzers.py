"""--analyzer: english, seval_english_stop (stopwords removed from documents and questions alike) or the
user's own analyzer, used as it is; a run records its corpus's analyzer and compare reports a change."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import HarnessConfig, Settings, connect, import_harness
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.errors import InputError
from surreal_eval.load.attach import attach_table
from surreal_eval.load.bulk import load_corpus
from surreal_eval.models import Article
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.store.schema import define_corpus_indexes, import_harness as reimport

from .conftest import snapshot

runner = CliRunner()

DOCS = [
    Article(id="theory", title="", content="The theory of the cats and the dogs", embedding=[1.0, 0.0, 0.0, 0.0]),
    Article(id="howto", title="", content="How is it done: a guide for those who have to", embedding=[0.0, 1.0, 0.0, 0.0]),
    Article(id="parcel", title="", content="Refund for a damaged parcel", embedding=[0.0, 0.0, 1.0, 0.0]),
]
#: a question made only of stopwords
ONLY_STOPWORDS = "how is the of a for those who have to"
USER_ANALYZER = "DEFINE FUNCTION fn::mine_upper($t: string) -> string { RETURN $t; };\n" \
                "DEFINE ANALYZER mine FUNCTION fn::mine_upper TOKENIZERS blank FILTERS lowercase;"


def bm25(db, text: str, table: str = "seval_article") -> list[str]:
    found = db.value("SELECT VALUE record::id(id) FROM type::table($t) WHERE bm25_text @1,OR@ $q", {"t": table, "q": text})
    return sorted(found)


def content_index(db, table: str = "seval_article") -> str:
    return db.value("INFO FOR TABLE $t", {"t": table})["indexes"][f"{table}_content"]


@pytest.mark.parametrize("analyzer", ["seval_english", "seval_english_stop"])
def test_both_analyzers_index_and_retrieve(db, analyzer):
    load_corpus(db, DOCS, analyzer=analyzer)
    assert f"ANALYZER {analyzer} " in content_index(db)
    assert db.value("RETURN fn::seval::retrieve_bm25('damaged parcels', 3)") == [db.value("RETURN seval_article:parcel")]
    assert bm25(db, "cat theories") == ["theory"]


def test_english_stop_removes_stopwords_from_documents_and_questions_alike(db):
    assert db.value("RETURN search::analyze('seval_english_stop', 'The theory of the Cats, and THE dogs')") == [
        "theori", "cat", ",", "dog"]
    load_corpus(db, DOCS, analyzer="seval_english_stop")
    assert bm25(db, ONLY_STOPWORDS) == []  # the question's stopwords are removed too
    # the document "How is it done..." is indexed without its stopwords: only "done" and "guid" are terms
    assert bm25(db, "done") == ["howto"] and bm25(db, "how to") == []
    load_corpus(db, DOCS, analyzer="seval_english")
    assert bm25(db, ONLY_STOPWORDS) == ["howto", "parcel", "theory"]


def test_new_corpora_take_the_default_and_a_table_keeps_its_analyzer(db):
    load_corpus(db, DOCS)
    assert "ANALYZER seval_english_stop " in content_index(db)
    load_corpus(db, DOCS, analyzer="seval_english")
    load_corpus(db, DOCS[:1])  # no --analyzer: the index keeps the one it has
    assert "ANALYZER seval_english " in content_index(db)
    # init again leaves the indexes be: its checksum matches the analyzer the load chose
    applied = reimport(db, HarnessConfig(dimension=4), skip_unchanged=True)
    assert "corpus_indexes" not in applied and "ANALYZER seval_english " in content_index(db)


def test_user_analyzer_is_used_and_left_untouched():
    db = connect(Settings(url="mem://"))
    try:
        db.query(USER_ANALYZER)
        theirs = {k: db.value("INFO FOR DB")[k] for k in ("analyzers", "functions")}
        mine = {"analyzer": theirs["analyzers"]["mine"], "function": theirs["functions"]["mine_upper"]}
        import_harness(db, HarnessConfig(dimension=4), analyzer="mine")
        assert "ANALYZER mine " in content_index(db)
        load_corpus(db, DOCS, table="seval_notes", analyzer="mine")
        assert "ANALYZER mine " in content_index(db, "seval_notes")
        assert bm25(db, "cats", "seval_notes") == ["theory"]  # blank + lowercase, no stemmer: "cat" is not a term
        assert bm25(db, "cat", "seval_notes") == []
        info = db.value("INFO FOR DB")
        assert {"analyzer": info["analyzers"]["mine"], "function": info["functions"]["mine_upper"]} == mine
        owned = db.value("SELECT VALUE name FROM seval_object WHERE kind IN ['analyzer', 'function']")
        assert "mine" not in owned and "mine_upper" not in owned and {"seval_english", "seval_english_stop", "seval::strip_stopwords"} <= set(owned)
    finally:
        db.close()


@pytest.mark.parametrize("command", [["init", "--dimension", "4"], ["load", "corpus", "DOCS"]])
def test_an_unknown_analyzer_is_refused_in_one_line_and_changes_nothing(tmp_path, command):
    store = f"surrealkv://{tmp_path / 'store'}"
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(d.model_dump_json() + "\n" for d in DOCS))
    assert runner.invoke(app, ["--url", store, "init", "--dimension", "4"]).exit_code == 0
    with connect(Settings(url=store)) as db:
        before = snapshot(db)
    args = [str(docs) if a == "DOCS" else a for a in command]
    result = runner.invoke(app, ["--url", store, *args, "--analyzer", "stemless"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --analyzer 'stemless': this database has no analyzer of that name; use seval_english or seval_english_stop, "
        "or define yours first (DEFINE ANALYZER stemless ...)"]
    with connect(Settings(url=store)) as db:
        assert snapshot(db) == before


def test_attach_index_takes_the_analyzer_and_a_table_with_its_own_index_is_refused(db):
    db.query("DEFINE TABLE notes SCHEMALESS; CREATE notes:1 SET body = 'The theory of cats';")
    report = attach_table(db, "notes", content="body", index=True, analyzer="seval_english")
    assert "ANALYZER seval_english " in db.value("INFO FOR TABLE notes")["indexes"][report.bm25_index]
    assert db.value("RETURN fn::seval::corpus_fingerprint('notes')")["analyzer"] == "seval_english"
    db.query("DEFINE TABLE memo SCHEMALESS; CREATE memo:1 SET body = 'cats'; "
             "DEFINE INDEX memo_body ON memo FIELDS body FULLTEXT ANALYZER seval_english BM25;")
    before = snapshot(db)
    with pytest.raises(InputError, match="memo has its own FULLTEXT index memo_body"):
        attach_table(db, "memo", content="body", analyzer="seval_english_stop")
    assert snapshot(db) == before


def test_a_run_records_its_analyzer_and_compare_reports_the_change(seeded):
    first = evaluate(seeded, ks=[1, 3])
    assert first.corpus["analyzer"] == "seval_english"  # the demo seed keeps the lesson's analyzer
    define_corpus_indexes(seeded, "seval_article", analyzer="seval_english_stop")
    second = evaluate(seeded, ks=[1, 3])
    assert second.corpus["analyzer"] == "seval_english_stop"
    assert second.corpus["fingerprint"] == first.corpus["fingerprint"]
    changes = {c.field: (c.a, c.b) for c in compare_runs(seeded, first.run, second.run).changes}
    assert changes["corpus.analyzer"] == ("seval_english", "seval_english_stop")
    assert changes["corpus.analyzer_checksum"][0] != changes["corpus.analyzer_checksum"][1]


def test_the_analyzer_checksum_covers_its_function(db):
    db.query(USER_ANALYZER)
    load_corpus(db, DOCS, analyzer="mine")
    before = db.value("RETURN fn::seval::corpus_analyzer('seval_article')")
    db.query("DEFINE FUNCTION OVERWRITE fn::mine_upper($t: string) -> string { RETURN string::uppercase($t); };")
    after = db.value("RETURN fn::seval::corpus_analyzer('seval_article')")
    assert before["analyzer"] == after["analyzer"] == "mine"
    assert before["analyzer_checksum"] != after["analyzer_checksum"]
