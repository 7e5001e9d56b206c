"""Engine sanity checks before a run is recorded (surql/checks.surql): BM25 finds a record by its own
words and scores vary, the vector retriever returns a record first for its own embedding. Each
failure is made for real on the engine (an analyzer that yields no terms, a BM25 that ignores term
frequency and length, an HNSW index moved to another field), stops the run with one line naming the
symptom and the engine version, exit 3, and records nothing."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.errors import EngineCheckFailed, Rejected
from surreal_eval.load.attach import attach_table
from surreal_eval.golden.files import load_golden
from surreal_eval.models import Question
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.store.schema import HarnessConfig, define_corpus, import_harness

from .conftest import fresh_db, snapshot

runner = CliRunner()

#: A user's notes: eight records of different lengths, a unique longest word each, 4-d embeddings.
NOTES = {
    "a": ("refunds arrive within days", [0.9, 0.1, 0.0, 0.0]),
    "b": ("couriers deliver parcels quickly abroad", [0.1, 0.9, 0.0, 0.0]),
    "c": ("passwords reset", [0.0, 0.1, 0.9, 0.0]),
    "d": ("invoices list every purchase made", [0.0, 0.0, 0.2, 0.9]),
    "e": ("gift vouchers", [0.3, 0.3, 0.3, 0.3]),
    "f": ("subscriptions renew monthly unless cancelled early", [0.5, 0.5, 0.0, 0.0]),
    "g": ("warranty covers defects", [0.0, 0.5, 0.5, 0.0]),
    "h": ("loyalty points expire", [0.0, 0.0, 0.5, 0.5]),
}
ONE_WORD = [("q1", "refunds", "a"), ("q2", "passwords", "c"), ("q3", "warranty", "g"), ("q4", "loyalty", "h")]


def notes_db(analyzer: str = "TOKENIZERS blank FILTERS lowercase", bm25: str = "BM25", path=None):
    """A database holding the user's table `notes` (FULLTEXT index with `analyzer` and `bm25`, HNSW on
    `vec`), attached, with one-word questions labelled in it."""
    if path is None:
        db = fresh_db()
    else:
        db = connect(Settings(url=f"surrealkv://{path}"))
        import_harness(db, HarnessConfig(dimension=4))
    db.query(f"DEFINE TABLE notes SCHEMALESS; DEFINE ANALYZER notes_words {analyzer};")
    for key, (text, vector) in NOTES.items():
        db.query("CREATE type::record('notes', $k) CONTENT { body: $b, vec: $v, other: array::reverse($v) }",
                 {"k": key, "b": text, "v": vector})
    db.query(f"DEFINE INDEX notes_body ON notes FIELDS body FULLTEXT ANALYZER notes_words {bm25}; "
             "DEFINE INDEX notes_vec ON notes FIELDS vec HNSW DIMENSION 4 DIST COSINE;")
    attach_table(db, "notes", content="body", embedding="vec")
    load_golden(db, [Question(id=q, text=text, embedding=NOTES[label][1], relevant=[label]) for q, text, label in ONE_WORD],
                label_table="notes")
    return db


def refused(db, symptom: str, **options) -> str:
    """The one-line EngineCheckFailed of evaluating `db`, checked to name `symptom` and the engine, with nothing recorded."""
    before = snapshot(db)
    with pytest.raises(EngineCheckFailed) as caught:
        evaluate(db, ks=[1, 3], params={"corpus": "notes"}, **options)
    message = str(caught.value)
    assert message.startswith("engine check failed: ") and symptom in message
    assert "(engine surrealdb-3." in message and message.endswith("no run was recorded")
    assert "\n" not in message
    assert snapshot(db) == before
    return message


def test_a_run_records_each_check_and_says_why_one_was_skipped(seeded):
    report = evaluate(seeded, ks=[3])
    assert [(c.check, c.status) for c in report.checks] == [("bm25", "passed"), ("vector", "passed")]
    assert "3 records found by their own words" in report.checks[0].note
    assert "3 records each returned first for their own embedding" in report.checks[1].note
    only_vector = evaluate(seeded, ks=[3], retrievers=["vector"])
    assert [(c.status, c.note) for c in only_vector.checks][0] == ("skipped", "no retriever of the run reads BM25")
    only_bm25 = evaluate(seeded, ks=[3], retrievers=["bm25"])
    assert (only_bm25.checks[1].status, only_bm25.checks[1].note) == ("skipped", "no retriever of the run reads the vector index")


def test_an_empty_corpus_skips_both_checks(seeded):
    define_corpus(seeded, "chunk_empty")
    report = evaluate(seeded, ks=[1], params={"corpus": "chunk_empty"})
    assert {(c.check, c.status, c.note) for c in report.checks} == {
        ("bm25", "skipped", "the corpus is empty"), ("vector", "skipped", "the corpus is empty")}


def test_records_without_embeddings_skip_the_vector_check():
    db = notes_db()
    db.query("UPDATE notes UNSET vec")
    report = evaluate(db, ks=[1], params={"corpus": "notes"})
    assert (report.checks[1].status, report.checks[1].note) == ("skipped", "no record has an embedding in vec")
    assert report.checks[0].status == "passed"
    db.close()


def test_the_users_healthy_table_passes_both_checks():
    db = notes_db()
    report = evaluate(db, ks=[1, 3], params={"corpus": "notes"})
    assert [c.status for c in report.checks] == ["passed", "passed"]
    db.close()


def test_an_analyzer_that_yields_no_terms_stops_the_run():
    # ngram(50, 60) keeps no term of any word shorter than 50 letters: the index holds nothing
    db = notes_db(analyzer="TOKENIZERS blank FILTERS lowercase, ngram(50, 60)")
    assert db.value("RETURN search::analyze('notes_words', 'refunds arrive')") == []
    message = refused(db, "is not found by its own word")
    assert "the FULLTEXT index on notes.body yields no terms for it, or @1,OR@ is broken" in message
    db.close()


def test_a_bm25_that_gives_every_match_the_same_score_stops_the_run():
    # BM25(0, 0): k1 = 0 drops term frequency and b = 0 length, so one word scores its idf everywhere
    db = notes_db(bm25="BM25(0, 0)")
    refused(db, "search::score does not vary with the words matched or the record length")
    db.close()


def test_an_hnsw_index_moved_to_another_field_stops_the_run():
    db = notes_db()
    # after attaching, the user re-points the index at another field: a KNN on `vec` then has no
    # index, and the engine returns every record, unordered, with no distance
    db.query("REMOVE INDEX notes_vec ON notes; DEFINE INDEX notes_vec ON notes FIELDS other HNSW DIMENSION 4 DIST COSINE;")
    message = refused(db, "the vector retriever returns")
    assert "at distance none first, not the record itself at distance 0: is the HNSW index of notes on field vec?" in message
    db.close()


def test_a_passed_check_is_reused_until_what_it_depends_on_changes():
    db = notes_db()
    kept = " UTC, unchanged since"  # "...; checked 2026-12-04 15:50:54 UTC, unchanged since": to the second, no nanoseconds
    first = evaluate(db, ks=[1, 3], params={"corpus": "notes"})
    assert [c.status for c in first.checks] == ["passed", "passed"] and not any(kept in c.note for c in first.checks)
    second = evaluate(db, ks=[1, 3], params={"corpus": "notes"})
    assert [c.status for c in second.checks] == ["passed", "passed"] and all(kept in c.note for c in second.checks)
    assert all(re.search(r"; checked \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, unchanged since$", c.note) for c in second.checks)
    # --fresh asks again (and keeps what it found)
    before = db.value("SELECT VALUE checked_at FROM seval_engine_check ORDER BY id")
    assert not any(kept in c.note for c in evaluate(db, ks=[1], params={"corpus": "notes"}, fresh=True).checks)
    assert db.value("SELECT VALUE checked_at FROM seval_engine_check ORDER BY id") > before
    # a new document changes the content: a run that brings its kept lists up to date reuses the checks passed on the
    # corpus before the change, and says so; the next run reuses them under the new content; --fresh asks again
    db.query("CREATE notes:i CONTENT { body: 'receipts printed', vec: [0.2, 0.2, 0.2, 0.4], other: [0.4, 0.2, 0.2, 0.2] }")
    before_change = " UTC before the ingest, indexes unchanged"
    after = evaluate(db, ks=[1], params={"corpus": "notes"})
    assert after.since and all(c.status == "passed" and before_change in c.note for c in after.checks)
    assert all(kept in c.note for c in evaluate(db, ks=[1], params={"corpus": "notes"}).checks)
    db.query("CREATE notes:j CONTENT { body: 'receipts lost', vec: [0.2, 0.4, 0.2, 0.2], other: [0.2, 0.2, 0.4, 0.2] }")
    assert not any(kept in c.note or before_change in c.note
                   for c in evaluate(db, ks=[1], params={"corpus": "notes"}, fresh=True).checks)
    # the index re-pointed after checks passed: the vector check is asked again and now fails
    db.query("REMOVE INDEX notes_vec ON notes; DEFINE INDEX notes_vec ON notes FIELDS other HNSW DIMENSION 4 DIST COSINE;")
    refused(db, "the vector retriever returns")
    # the keys hold the engine's version: another engine asks again
    keys = [db.value("RETURN fn::seval::engine_check_keys({ bm25: 'b', vector: 'v' }, [], 'h', { engine: $e })", {"e": e})
            for e in ("surrealdb-3.0.0", "surrealdb-3.0.1")]
    assert keys[0]["bm25"] != keys[1]["bm25"] and keys[0]["vector"] != keys[1]["vector"]
    assert db.value("RETURN fn::seval::engine_check_keys({ bm25: 'b', vector: 'v' }, [], 'h', { engine: 'x', fresh: true })").get("fresh") is True
    assert db.value("RETURN fn::seval::engine_check_keys({ bm25: 'b', vector: 'v' }, [], 'h', {})") is None
    db.close()


def test_a_run_that_fails_after_its_checks_keeps_none_of_them():
    db = notes_db()
    before = snapshot(db)
    with pytest.raises(Rejected):  # k deeper than the vector index: refused once the checks have passed
        evaluate(db, ks=[101], params={"corpus": "notes"})
    assert snapshot(db) == before and db.value("SELECT * FROM seval_engine_check") == []
    db.close()


def test_a_failed_check_exits_3_with_one_line(tmp_path, monkeypatch):
    notes_db(analyzer="TOKENIZERS blank FILTERS lowercase, ngram(50, 60)", path=tmp_path / "store").close()
    monkeypatch.setenv("SURREAL_EVAL_URL", f"surrealkv://{tmp_path / 'store'}")
    done = runner.invoke(app, ["evaluate", "--corpus", "notes", "--k", "1"])
    assert done.exit_code == 3
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: engine check failed: ")
    assert "(engine surrealdb-3." in lines[0]


@pytest.mark.parametrize(("scores", "documents", "fails"), [
    ([1.2, 0.0], 10, True),           # 2 of 10 records match: every word has idf > 0, a 0 is wrong
    ([1.2, None], 10, True),          # no score at all is as wrong
    ([1.2, 0.4], 10, False),
    ([0.0] * 4, 9, True),             # 4 of 9: fewer than half
    ([0.0] * 5, 10, False),           # half the corpus matches: idf may be 0, nothing to conclude
])
def test_a_zero_score_is_refused_only_where_bm25_cannot_give_it(db, scores, documents, fails):
    matches = [{"id": f"seval_article:{i}", "score": s} for i, s in enumerate(scores)]
    call = "RETURN fn::seval::check_scores_positive($m, 'word', $n)"
    if fails:
        with pytest.raises(EngineCheckFailed, match=r"engine check failed: search::score gave no positive score to seval_article:\d, which matches 'word'"):
            db.value(call, {"m": matches, "n": documents})
    else:
        assert db.value(call, {"m": matches, "n": documents}) is None
