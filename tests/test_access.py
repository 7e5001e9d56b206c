"""Least privilege: an evaluator reads the corpus and golden set and writes runs, and nothing else."""

from __future__ import annotations

import pytest

from surreal_eval import AuthenticationFailed, HarnessConfig, Settings, connect, evaluate, history, import_harness
from surreal_eval.store.access import grant_evaluator
from surreal_eval.store.record_ids import to_record

from .conftest import SERVER_URL, needs_server, seed_own, lists_reused

PASSWORD = "correct horse battery"


@pytest.fixture
def store(tmp_path):
    """A persistent store with the demo and an evaluator account `ci`, closed again (one process at a time)."""
    url = f"surrealkv://{tmp_path / 'store'}"
    owner = connect(Settings(url=url))
    import_harness(owner, HarnessConfig(dimension=4))
    seed_own(owner)
    grant_evaluator(owner, "ci", PASSWORD)
    owner.close()
    return url


def as_evaluator(url, password=PASSWORD):
    return connect(Settings(url=url, access="seval_evaluator", user="ci", password=password))


def protected(db):
    """What an evaluator can see of the corpus and golden set."""
    return {
        "articles": db.value("SELECT * FROM seval_article ORDER BY id"),
        "questions": db.value("SELECT * FROM seval_question ORDER BY id"),
        "unfinished loads": db.value("SELECT * FROM seval_ingest_journal"),
        "retrievers": db.value("SELECT * FROM seval_retriever ORDER BY id"),
        "corpus tables": db.value("SELECT * FROM seval_corpus ORDER BY id"),
    }


def test_an_evaluator_can_evaluate_and_read_history(store):
    db = as_evaluator(store)
    try:
        report = evaluate(db, ks=[1, 3])
        assert report.questions == 8
        assert [r.run for r in history(db)] == [report.run]
    finally:
        db.close()


def test_an_evaluator_reads_the_registry_and_fn_evaluate_leaves_no_run(store):
    db = as_evaluator(store)
    try:
        assert db.value("RETURN fn::seval::default_retrievers()") == ["bm25", "vector", "hybrid", "hybrid_floor"]
        got = db.value("RETURN fn::seval::evaluate(3)")
        assert {m["retriever"] for m in got["means"]} == {"bm25", "vector", "hybrid", "hybrid_floor"}
        assert [db.value(f"RETURN count(SELECT id FROM {t})") for t in ("seval_run", "seval_ranking")] == [0, 0]
    finally:
        db.close()


@pytest.mark.parametrize("statement", [
    "UPDATE seval_article:refund_request SET content = 'changed'",
    "DELETE seval_article:contact_support",
    "CREATE seval_article:new CONTENT { title: 'x', content: 'y', embedding: [1, 0, 0, 0] }",
    "UPDATE seval_question:money_back SET relevant = [seval_article:track_order]",
    "DELETE seval_question:signin",
    "CREATE seval_question:new CONTENT { text: 'x', embedding: [1, 0, 0, 0], relevant: [seval_article:track_order] }",
    "UPDATE seval_config:current SET dimension = 8",
    # when the HNSW graph was built, which decides compare's note on a rebuilt index (analysis.rebuilt)
    "UPDATE seval_corpus:seval_article SET vector_built = time::now()",
    "DELETE seval_run",
    "UPDATE seval_retriever:hybrid SET params = { rrf_k: 1 }",
    "DELETE seval_retriever:bm25",
    "CREATE seval_retriever:mine CONTENT { position: 99, lists: ['bm25'], fusion: 'none' }",
    "CREATE seval_ingest_journal:article CONTENT { undo: 'seval_undo_seval_article', existed: true, corpus: true, position: 0, "
    "state: 'moving', started: time::now(), updated: time::now() }",
])
def test_an_evaluator_cannot_change_the_corpus_golden_set_or_history(store, statement):
    db = as_evaluator(store)
    try:
        evaluate(db, ks=[1])
        before = protected(db)
        runs = history(db)
        try:
            db.query(statement)
        except Exception:
            pass  # refused loudly is fine too; what matters is that nothing changed
        assert protected(db) == before
        assert history(db) == runs
    finally:
        db.close()


@pytest.mark.parametrize("call", [
    "fn::seval::move_staged('seval_stage_seval_article', 'seval_article', 'seval_undo_seval_article', [])",
    "fn::seval::undo_moved('seval_article', 'seval_corpus', 0)",
])
def test_only_a_system_user_may_call_the_load_functions(store, call):
    owner = connect(Settings(url=store))
    try:
        assert owner.value(f"RETURN {call}") == 0  # the call itself is harmless here
    finally:
        owner.close()
    db = as_evaluator(store)
    try:
        with pytest.raises(Exception, match="(?i)not allowed|permission"):
            db.value(f"RETURN {call}")
    finally:
        db.close()


@pytest.mark.parametrize("statement", [
    "REMOVE TABLE seval_article",
    "DEFINE TABLE OVERWRITE seval_question SCHEMALESS",
    "RETURN fn::seval::grant_evaluator('mallory', 'long enough password')",
    "DEFINE USER mallory ON DATABASE PASSWORD 'x' ROLES OWNER",
])
def test_an_evaluator_cannot_change_the_schema_or_grant_accounts(store, statement):
    db = as_evaluator(store)
    try:
        with pytest.raises(Exception):
            db.query(statement)
        assert db.value("SELECT * FROM seval_evaluator") == []  # cannot even read the accounts
    finally:
        db.close()
    owner = connect(Settings(url=store))
    try:
        assert owner.value("SELECT VALUE name FROM seval_evaluator") == ["ci"]
        assert "seval_article" in owner.value("INFO FOR DB")["tables"]
    finally:
        owner.close()


def test_a_wrong_evaluator_password_is_refused(store):
    with pytest.raises(AuthenticationFailed):
        as_evaluator(store, password="wrong password!")


def test_the_password_is_stored_hashed(store):
    owner = connect(Settings(url=store))
    try:
        stored = owner.value("SELECT VALUE pass FROM seval_evaluator:ci")[0]
        assert stored.startswith("$argon2") and PASSWORD not in stored
    finally:
        owner.close()


@needs_server
def test_an_evaluator_on_a_server_evaluates_but_cannot_delete_articles():
    import os
    import uuid

    base = dict(url=SERVER_URL, namespace="surreal_eval_test", database=f"acc_{uuid.uuid4().hex[:10]}")
    owner = connect(Settings(**base, user=os.environ.get("SURREAL_EVAL_TEST_USER", "root"),
                             password=os.environ.get("SURREAL_EVAL_TEST_PASS", "root")))
    import_harness(owner, HarnessConfig(dimension=4))
    seed_own(owner)
    grant_evaluator(owner, "ci", PASSWORD)
    owner.close()
    db = connect(Settings(**base, access="seval_evaluator", user="ci", password=PASSWORD))
    try:
        evaluate(db, ks=[1])
        db.query("DELETE seval_article:contact_support")
        assert db.value("RETURN record::exists(seval_article:contact_support)") is True
    finally:
        db.close()


FINISHED = "(SELECT VALUE id FROM seval_run WHERE finished_at != NONE LIMIT 1)[0]"
RUN_CONTENT = "questions: 1, ks: [1], retrievers: ['bm25'], params: {}"
#: What an evaluator tried in issue 16, and its variants on every harness table: each must change nothing.
ATTACKS = [
    # rewriting history: un-finish then delete, edit a finished run, forge a finished one
    "UPDATE seval_run SET finished_at = NONE WHERE finished_at != NONE RETURN NONE; "
    "DELETE seval_ranking; DELETE seval_run",
    "UPDATE seval_run SET finished_at = NONE",
    "UPDATE seval_run MERGE { finished_at: NONE }",
    "UPDATE seval_run SET label = 'forged', means = []",
    f"UPDATE {FINISHED} SET label = 'forged'",
    "UPDATE seval_run SET created_by = NONE",
    f"UPDATE seval_run CONTENT {{ {RUN_CONTENT} }}",
    "UPSERT seval_run SET label = 'forged'",
    "DELETE seval_run",
    "DELETE seval_ranking",
    f"CREATE seval_run:fake CONTENT {{ {RUN_CONTENT}, finished_at: time::now() }}",
    f"INSERT INTO seval_run {{ id: seval_run:fake, {RUN_CONTENT}, finished_at: time::now() }}",
    f"UPSERT seval_run:fake CONTENT {{ {RUN_CONTENT}, finished_at: time::now() }}",
    f"BEGIN; CREATE seval_run:fake CONTENT {{ {RUN_CONTENT} }}; "
    "UPDATE seval_run:fake SET finished_at = time::now(), means = [{ retriever: 'bm25', k: 1, recall: 1.0 }]; COMMIT",
    f"BEGIN; CREATE seval_run:fake CONTENT {{ {RUN_CONTENT} }}; UPDATE seval_run:fake SET finished_at = time::now(); COMMIT",
    f"BEGIN; CREATE seval_run:fake CONTENT {{ {RUN_CONTENT} }}; UPDATE seval_run:fake SET finished_at = time::now(), "
    "questions = 0; COMMIT",
    # extra results and rankings for a finished run, and edits to the stored ones
    "INSERT INTO seval_ranking (SELECT * OMIT id FROM seval_ranking)",
    f"CREATE seval_ranking CONTENT {{ run: {FINISHED}, question: seval_question:signin, retriever: 'bm25', ranked: [], "
    "scores: [], relevant: [], grades: [] }",
    "UPDATE seval_ranking SET results = []",
    "UPDATE seval_ranking SET results[0].metrics.recall = 1.0",
    "UPDATE seval_ranking SET ranked = []",
    # the labels a run scored each question against, kept once per question
    "DELETE seval_run_label",
    "UPDATE seval_run_label SET relevant = []",
    "INSERT INTO seval_run_label (SELECT * OMIT id FROM seval_run_label)",
    f"CREATE seval_run_label CONTENT {{ run: {FINISHED}, question: seval_question:signin, relevant: [], grades: [] }}",
    f"CREATE type::record('seval_run_label', [{FINISHED}, seval_question:forged]) CONTENT {{ run: {FINISHED}, "
    "question: seval_question:forged, relevant: [], grades: [] }",
    # the judgments' digests a system user's runs find stale labels by: never emptied, forged or dropped
    "UPDATE seval_label_pairs SET pairs = []",
    "UPSERT seval_label_pairs:seval_question CONTENT { pairs: [] }",
    "DELETE seval_label_pairs",
    # the other harness tables
    "UPDATE seval_script SET checksum = 'forged'",
    "DELETE seval_script",
    "CREATE seval_script:forged SET checksum = 'x', applied_at = time::now()",
    "UPSERT seval_watch:current CONTENT { ks: [1], retrievers: ['bm25'] }",
    "CREATE seval_ingest SET corpus = 'seval_article', documents = 1",
    "DELETE seval_ingest",
    "UPDATE seval_config:current SET dimension = 8",
    # when the HNSW graph was built, which decides compare's note on a rebuilt index (analysis.rebuilt)
    "UPDATE seval_corpus:seval_article SET vector_built = time::now()",
    "DELETE seval_config",
    "CREATE seval_corpus:forged SET x = 1",
    "DELETE seval_corpus",
    "DELETE seval_ingest_journal",
    # the candidate lists a system user's runs read: never poisoned, dropped or added to
    "UPDATE seval_candidate_cache SET hits = []",
    "DELETE seval_candidate_cache",
    "UPSERT type::record('seval_candidate_cache', [seval_question:signin, 'bm25', 'seval_article', 7]) CONTENT { key: 'x', "
    "question: seval_question:signin, list: 'bm25', corpus: 'seval_article', version: 'x', depth: 100, hits: [] }",
    # the engine checks a system user's runs reuse: never forged or dropped
    "UPSERT seval_engine_check:['vector', 'x'] CONTENT { check: 'vector', note: 'forged', checked_at: time::now() }",
    "DELETE seval_engine_check",
    "UPSERT seval_evaluator:mallory SET name = 'mallory', pass = 'x'",
    # defining things: tables by writing to a new name, and every DEFINE and REMOVE
    "CREATE chunk_small:1 SET x = 1",
    "INSERT INTO chunk_b { x: 1 }",
    "UPSERT chunk_c:1 SET x = 1",
    "RELATE seval_article:refund_request->cites->seval_article:track_order",
    "DEFINE TABLE chunk_d",
    "DEFINE FIELD x ON seval_run TYPE any",
    "DEFINE INDEX forged ON seval_run FIELDS label",
    "DEFINE EVENT forged ON seval_run THEN { RETURN 1 }",
    "DEFINE FUNCTION fn::forged() { RETURN 1 }",
    "DEFINE PARAM $forged VALUE 1",
    "DEFINE ANALYZER forged TOKENIZERS blank",
    "DEFINE ACCESS forged ON DATABASE TYPE RECORD",
    "DEFINE USER mallory ON DATABASE PASSWORD 'x' ROLES OWNER",
    "DEFINE DATABASE OVERWRITE surreal_eval",
    "REMOVE EVENT seval_run_finished_is_final ON seval_run",
    "REMOVE FUNCTION fn::seval::finish_run",
    "REMOVE TABLE seval_run",
]
HARNESS_TABLES = ["seval_run", "seval_ranking", "seval_run_label", "seval_label_pairs", "seval_script", "seval_config", "seval_watch",
                  "seval_ingest", "seval_corpus", "seval_ingest_journal", "seval_article", "seval_question", "seval_candidate_cache",
                  "seval_engine_check"]


def everything(db):
    """Every row of every harness table an evaluator can read."""
    return {table: db.value(f"SELECT * FROM {table} ORDER BY id") for table in HARNESS_TABLES}


def test_an_evaluator_can_never_rewrite_history_define_or_grant(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    owner = connect(Settings(url=url))
    import_harness(owner, HarnessConfig(dimension=4))
    seed_own(owner)
    evaluate(owner, ks=[1])  # a system user's run, and below the evaluator's own
    grant_evaluator(owner, "ci", PASSWORD)
    schema = owner.value("INFO FOR DB")
    owner.close()
    db = as_evaluator(url)
    try:
        evaluate(db, ks=[1, 3])
        runs = history(db)
        assert len(runs) == 2
        before = everything(db)
        changed = []
        for statement in ATTACKS:
            try:
                db.query(statement)
            except Exception:
                pass  # refused loudly or silently: what matters is that nothing changed
            if everything(db) != before or history(db) != runs:
                changed.append(statement)
        assert changed == []
    finally:
        db.close()
    owner = connect(Settings(url=url))
    try:
        assert owner.value("INFO FOR DB") == schema
        assert [r.run for r in history(owner)] == [r.run for r in runs]
    finally:
        owner.close()


def test_an_evaluator_neither_reads_nor_writes_the_corpus_changes_a_run_keeps_apart(store):
    owner = connect(Settings(url=store))
    try:
        run = to_record(evaluate(owner, ks=[1]).run, "seval_run")
        row = {"run": run, "changes": {"from": {"bm25": "x", "vector": "y"}}}
        owner.query("CREATE type::record('seval_run_changes', [$r]) CONTENT $row", {"r": run, "row": row})
        kept = owner.value("SELECT * FROM seval_run_changes")
    finally:
        owner.close()
    db = as_evaluator(store)
    try:
        assert db.value("SELECT * FROM seval_run_changes") == []
        for statement in ("CREATE seval_run_changes CONTENT { run: $r, changes: {} }", "UPDATE seval_run_changes SET changes = {}",
                          "DELETE seval_run_changes", "UPSERT type::record('seval_run_changes', [$r]) CONTENT { run: $r, changes: {} }"):
            try:
                db.query(statement, {"r": run})
            except Exception:
                pass  # refused loudly or silently: what matters is that nothing changed
    finally:
        db.close()
    owner = connect(Settings(url=store))
    try:
        assert owner.value("SELECT * FROM seval_run_changes") == kept and len(kept) == 1
    finally:
        owner.close()


def test_an_evaluators_run_neither_reads_nor_writes_the_candidate_lists_kept_for_reuse(store):
    owner = connect(Settings(url=store))
    try:
        evaluate(owner, ks=[1, 3])
        kept = owner.value("SELECT * FROM seval_candidate_cache ORDER BY id")
    finally:
        owner.close()
    db = as_evaluator(store)
    try:
        assert len(kept) == 16
        assert lists_reused(evaluate(db, ks=[1, 3])) == {"lists": 16, "reused": 0}
        assert db.value("SELECT * FROM seval_candidate_cache ORDER BY id") == kept
    finally:
        db.close()


def test_an_evaluator_may_discard_its_own_unfinished_run_but_not_the_owners(store):
    owner = connect(Settings(url=store))
    try:
        theirs = owner.value(f"CREATE ONLY seval_run CONTENT {{ {RUN_CONTENT} }}")["id"]
    finally:
        owner.close()
    db = as_evaluator(store)
    try:
        mine = db.value(f"CREATE ONLY seval_run CONTENT {{ {RUN_CONTENT} }}")["id"]
        db.query("RETURN fn::seval::discard_run($run)", {"run": mine})
        db.query("RETURN fn::seval::discard_run($run)", {"run": theirs})
        assert db.value("SELECT VALUE id FROM seval_run") == [theirs]
    finally:
        db.close()
