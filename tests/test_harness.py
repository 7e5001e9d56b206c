"""Importing the SurrealQL: fixed order, idempotent, checksummed, literals validated."""

from __future__ import annotations

import pytest

from surreal_eval import ConfigError, HarnessConfig, evaluate, import_harness, import_seed
from surrealdb import RecordID

from surreal_eval.errors import QueryFailed
from surreal_eval.load.bulk import load_corpus
from surreal_eval.load.attach import attach_table
from surreal_eval.models import Article
from surreal_eval.store.schema import HARNESS_SCRIPTS, METRIC_DISPATCH, RESERVED_WORDS, identifier, render

from .conftest import fresh_db, snapshot


def test_importing_twice_changes_nothing(lesson):
    evaluate(lesson, ks=[1, 3])
    before = snapshot(lesson)
    import_harness(lesson, HarnessConfig(dimension=4))
    import_seed(lesson)  # the demo again: the lesson's tables, the attach and the golden attach, all as they were
    assert snapshot(lesson) == before


def test_import_records_a_checksum_per_script(db):
    rows = db.value("SELECT record::id(id) AS name, checksum FROM seval_script")
    assert sorted(r["name"] for r in rows) == sorted([*HARNESS_SCRIPTS, METRIC_DISPATCH])  # the files, and the dispatch generated from them
    assert all(len(r["checksum"]) == 64 for r in rows)
    assert len(db.value("RETURN fn::seval::harness_checksum()")) == 64


def test_a_run_records_the_harness_checksum(seeded):
    report = evaluate(seeded, ks=[1])
    stored = seeded.value("RETURN type::record('seval_run', $id).harness", {"id": report.run.split(":", 1)[1]})
    assert stored == seeded.value("RETURN fn::seval::harness_checksum()")


def test_dimension_is_chosen_at_import():
    db = fresh_db(dimension=7)
    try:
        indexes = db.value("INFO FOR TABLE seval_article")["indexes"]
        assert "DIMENSION 7" in indexes["seval_article_embedding"]
        assert "FULLTEXT" in indexes["seval_article_content"] and "BM25" in indexes["seval_article_content"]
    finally:
        db.close()


def test_changing_the_dimension_of_a_filled_database_is_refused(seeded):
    before = snapshot(seeded)
    with pytest.raises(ConfigError, match="holds 4-d embeddings"):
        import_harness(seeded, HarnessConfig(dimension=384))
    assert snapshot(seeded) == before


def test_seed_needs_dimension_4():
    db = fresh_db(dimension=8)
    try:
        with pytest.raises(ConfigError, match="dimension 4"):
            import_seed(db)
    finally:
        db.close()


@pytest.mark.parametrize("value", ["article; REMOVE TABLE x", "1.5", True, 2.5])
def test_render_refuses_anything_but_integers_and_identifiers(value):
    with pytest.raises(ConfigError):
        render("DEFINE INDEX i ON t FIELDS e HNSW DIMENSION {{dimension}}", {"dimension": value})


@pytest.mark.parametrize("word", sorted(RESERVED_WORDS) + ["Select", "NONE", "Value"])
def test_surrealql_reserved_words_are_refused_as_names(word):
    with pytest.raises(ConfigError, match="is a SurrealQL keyword"):
        identifier(word, what="corpus table")


@pytest.mark.parametrize("word", ["select", "NONE"])
def test_the_engine_refuses_a_reserved_word_as_a_table_name(db, word):
    """Why identifier() refuses the reserved words: the engine cannot parse them where a table name goes."""
    with pytest.raises(QueryFailed):
        db.query(f"DEFINE TABLE {word} SCHEMALESS")


@pytest.mark.parametrize("word", ["content", "type", "user", "index", "order", "from", "access"])
def test_a_users_table_named_by_a_keyword_outside_the_reserved_set_attaches_and_retrieves(db, word):
    db.query(f"DEFINE TABLE {word} SCHEMALESS")  # BM25 needs 3 records: idf is 0 at half
    for key, text in (("a", "parcel refund"), ("b", "refund"), ("c", "invoice")):
        db.query("CREATE type::record($t, $k) CONTENT { body: $b, vec: [1.0, 0.0, 0.0, 0.0] }", {"t": word, "k": key, "b": text})
    attach_table(db, word, content="body", embedding="vec", index=True)
    assert db.value("RETURN fn::seval::bm25_candidates($t, 'parcel', 3).id", {"t": word}) == [RecordID(word, "a")]


@pytest.mark.parametrize("name", ["notes", "chunk_small", "article"])
def test_a_table_the_harness_would_define_without_its_prefix_is_refused_in_one_line(db, name):
    with pytest.raises(ConfigError, match=f"corpus table '{name}': every table the harness defines starts with seval_ "
                                          f"\\(use seval_{name}\\)"):
        load_corpus(db, [Article(id="a", content="x", embedding=[1.0, 0.0, 0.0, 0.0])], table=name)
    assert name not in db.value("INFO FOR DB")["tables"]


def test_render_names_an_unfilled_placeholder():
    with pytest.raises(ConfigError, match="x.surql:2: no value for placeholder"):
        render("line one\n{{missing}}", {}, source="x.surql")


def test_analyzer_stems_lowercases_and_splits_on_punctuation(db):
    tokens = db.value("RETURN search::analyze('seval_english', $t)", {"t": "Requests, RETRY-After; café"})
    assert tokens == ["request", ",", "retri", "-", "after", ";", "cafe"] or "request" in tokens
    assert "retri" in tokens and "after" in tokens and "cafe" in tokens


def test_vector_retriever_refuses_k_deeper_than_its_index(seeded):
    with pytest.raises(Exception, match="deeper than the vector index depth 100"):
        evaluate(seeded, ks=[101])


def test_evaluating_an_empty_golden_set_is_a_clear_error(db):
    with pytest.raises(Exception, match="golden set seval_question is empty"):
        evaluate(db, ks=[1])
    assert db.value("SELECT * FROM seval_run") == []


def test_the_demo_refuses_a_database_that_already_holds_the_lessons_names(tmp_path):
    """A reader's own database has article, question, english and fn::evaluate: init --demo must not redefine them."""
    from typer.testing import CliRunner

    from surreal_eval import import_lesson
    from surreal_eval.present.cli import app
    from surreal_eval.store.opening import connect
    from surreal_eval.store.settings import Settings

    url = f"surrealkv://{tmp_path / 'store'}"
    with connect(Settings(url=url)) as db:
        import_lesson(db)
        db.query("UPDATE question:signin SET text = 'my own wording'")
        before = snapshot(db)
    result = CliRunner().invoke(app, ["--url", url, "init", "--demo"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "the demo builds the lesson's database, and this one already holds" in result.stderr
    assert "table article" in result.stderr and "function fn::evaluate" in result.stderr
    with connect(Settings(url=url)) as db:
        assert snapshot(db) == before
    again = CliRunner().invoke(app, ["--url", f"surrealkv://{tmp_path / 'demo'}", "init", "--demo"])
    assert again.exit_code == 0
    assert CliRunner().invoke(app, ["--url", f"surrealkv://{tmp_path / 'demo'}", "init", "--demo"]).exit_code == 0  # its own: again is harmless
