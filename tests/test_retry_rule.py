"""A statement text is run again after a write conflict only when it is one transaction: in a text of
several, the transactions before the conflict were applied, and running it again would apply them twice
(an INSERT would add its rows a second time)."""

from __future__ import annotations

import pytest

from surreal_eval.store.statements import one_transaction


@pytest.mark.parametrize(("sql", "once"), [
    ("RETURN fn::seval::evaluate_questions($run, $ids, $supplied)", True),
    ("RETURN 1;", True),
    ("RETURN 1; -- a comment; with a semicolon\n", True),
    ("CREATE t SET a = 'x;y', b = \"p;q\"", True),
    ("DEFINE FUNCTION fn::a() { LET $x = 1; RETURN $x; };", True),
    ("BEGIN TRANSACTION; UPDATE x SET a = 1; DELETE y; COMMIT TRANSACTION;", True),
    ("BEGIN; UPDATE x SET a = 1; COMMIT", True),
    ("UPSERT a:1 CONTENT {}; UPSERT a:2 CONTENT {}", False),
    ("DEFINE TABLE t SCHEMALESS; INSERT INTO t $rows", False),
])
def test_only_a_text_that_is_one_transaction_is_run_again_after_a_write_conflict(sql, once):
    assert one_transaction(sql) is once
