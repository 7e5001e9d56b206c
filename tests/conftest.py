"""One fixture family: a fresh embedded SurrealDB 3 (mem://) with the harness imported."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from surreal_eval import Database, HarnessConfig, Settings, connect, import_harness, import_seed

SERVER_URL = os.environ.get("SURREAL_EVAL_TEST_URL")
needs_server = pytest.mark.skipif(
    not SERVER_URL,
    reason="no server: `docker compose up -d` then SURREAL_EVAL_TEST_URL=ws://localhost:8000 "
    "SURREAL_EVAL_TEST_USER=root SURREAL_EVAL_TEST_PASS=... pytest",
)


def fresh_db(dimension: int = 4, **config: int) -> Database:
    db = connect(Settings(url="mem://"))
    import_harness(db, HarnessConfig(dimension=dimension, **config))
    return db


@pytest.fixture
def db() -> Iterator[Database]:
    """A fresh in-memory database with the harness imported (dimension 4)."""
    database = fresh_db()
    yield database
    database.close()


@pytest.fixture
def seeded(db: Database) -> Database:
    """`db` with the lesson's demo seed: ten articles, eight questions."""
    import_seed(db)
    return db


def snapshot(db: Database) -> dict:
    """Everything a test needs to prove the database did not change: schema and every row."""
    info = db.value("INFO FOR DB")
    rows = {table: db.value("SELECT * FROM type::table($t) ORDER BY id", {"t": table}) for table in sorted(info["tables"])}
    return {"info": info, "rows": rows}


def reverse_embeddings(db) -> None:
    """Reverse the axes of every article embedding: a broken embedding model, same texts."""
    db.query("FOR $a IN (SELECT id, embedding FROM seval_article) { UPDATE $a.id SET embedding = array::reverse($a.embedding) };")


def add_question(db, **extra) -> None:
    """One more golden question (a different golden set than the demo's)."""
    db.query(
        "CREATE seval_question:refund_status CONTENT object::extend({text: 'when will my refund arrive', "
        "embedding: [0.1, 0.9, 0.1, 0.0], relevant: [seval_article:refund_request]}, $extra)",
        {"extra": extra},
    )


@pytest.fixture
def regressed(seeded):
    """A good run at k = 1, 3, 5, then a run after the article embeddings were reversed: (db, good, bad)."""
    from surreal_eval.runs.evaluate import evaluate

    base = evaluate(seeded, ks=[1, 3, 5], label="good")
    reverse_embeddings(seeded)
    bad = evaluate(seeded, ks=[1, 3, 5], label="reversed")
    return seeded, base, bad
