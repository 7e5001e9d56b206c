"""The same harness on a real SurrealDB 3 server (docker compose up); skipped without one."""

from __future__ import annotations

import os
import uuid

import pytest

from surreal_eval import (
    AuthenticationFailed,
    HarnessConfig,
    Settings,
    connect,
    evaluate,
    import_harness,
    import_seed,
)

from .conftest import SERVER_URL, needs_server

pytestmark = needs_server


def server_settings(**overrides) -> Settings:
    return Settings(
        url=SERVER_URL or "",
        namespace="surreal_eval_test",
        database=f"t_{uuid.uuid4().hex[:12]}",
        user=os.environ.get("SURREAL_EVAL_TEST_USER", "root"),
        password=os.environ.get("SURREAL_EVAL_TEST_PASS", "root"),
        **overrides,
    )


def test_harness_runs_the_lesson_on_a_server():
    settings = server_settings()
    db = connect(settings)
    try:
        import_harness(db, HarnessConfig(dimension=4))
        import_seed(db)
        report = evaluate(db, ks=[1, 3, 5])
        recall3 = {r.retriever: r.recall for r in report.results if r.k == 3}
        assert recall3["hybrid_floor"] > max(recall3["bm25"], recall3["vector"], recall3["hybrid"])
    finally:
        db.close()


def test_wrong_password_on_a_server_is_refused_clearly():
    with pytest.raises(AuthenticationFailed, match="refused the credentials"):
        connect(server_settings(password="certainly-not-the-password"))
