"""Each corpus record's digests (surql/corpus.surql) are what fn::seval::corpus_fingerprint would compute
without them, after any way of writing the record, so reading them changes no fingerprint."""

from __future__ import annotations

import pytest

from surreal_eval.runs.evaluate import evaluate

#: the fingerprint as fn::corpus_fingerprint computes it from the records alone, ignoring the digests
RECOMPUTED = """
LET $rows = SELECT VALUE [id, crypto::sha256(title + '\\u{1f}' + content), crypto::sha256(<string> embedding)]
    FROM seval_article ORDER BY id;
RETURN {
    fingerprint: crypto::sha256(<string> $rows.map(|$r| [$r[0], $r[1]])),
    embeddings: crypto::sha256(<string> $rows.map(|$r| [$r[0], $r[2]]))
};
"""

WRITES = {
    "set": "UPDATE seval_article:refund_request SET content = 'money back within thirty days'",
    "merge": "UPDATE seval_article:refund_request MERGE { embedding: [0.0, 1, 0, 0] }",
    "content": "UPDATE seval_article:refund_request CONTENT { title: 'Refunds', content: 'a new text', embedding: [1, 0, 0, 0] }",
    "patch": "UPDATE seval_article:refund_request PATCH [{ op: 'replace', path: '/title', value: 'patched' }]",
    "upsert_new": "UPSERT seval_article:fresh_one SET content = 'no title given', embedding = [0.5, 0.5, 0, 0]",
    "insert_duplicate": ("INSERT INTO seval_article { id: 'refund_request', content: 'x', embedding: [0, 0, 1, 0] }"
                         " ON DUPLICATE KEY UPDATE content = 'replaced on conflict', embedding = [0, 0, 0, 1]"),
    "create_without_title": "CREATE seval_article:untitled CONTENT { content: 'only content', embedding: [0.1, 0.2, 0.3, 0.4] }",
    "forged": "UPDATE seval_article:refund_request SET text_digest = 'forged', embedding_digest = 'forged'",
}


def fingerprints(db) -> dict:
    found = db.value("RETURN fn::seval::corpus_fingerprint('seval_article')")
    return {"fingerprint": found["fingerprint"], "embeddings": found["embeddings"]}


def test_the_seed_records_carry_digests_that_leave_the_fingerprint_as_computed(seeded):
    assert seeded.value("RETURN count(SELECT id FROM seval_article WHERE text_digest = NONE OR embedding_digest = NONE)") == 0
    assert fingerprints(seeded) == seeded.query(RECOMPUTED)[-1]


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_way_of_writing_a_record_recomputes_its_digests(seeded, write):
    before = fingerprints(seeded)
    seeded.query(WRITES[write])
    after = fingerprints(seeded)
    assert after == seeded.query(RECOMPUTED)[-1]
    if write == "forged":
        assert after == before  # a value given for a digest is ignored
    else:
        assert after != before


def test_a_record_written_before_the_digests_existed_is_hashed_as_before(seeded):
    fingerprint = fingerprints(seeded)
    # an earlier version's store: the fields undefined and the values gone from one record
    seeded.query("REMOVE FIELD text_digest ON seval_article; REMOVE FIELD embedding_digest ON seval_article;"
                 " UPDATE seval_article:refund_request CONTENT (SELECT * OMIT text_digest, embedding_digest FROM ONLY seval_article:refund_request)")
    assert seeded.value("SELECT VALUE text_digest FROM ONLY seval_article:refund_request") is None
    assert fingerprints(seeded) == fingerprint


def test_a_changed_document_is_retrieved_again_through_its_digest(seeded):
    evaluate(seeded, ks=[1, 3])
    seeded.query(WRITES["set"])
    again = evaluate(seeded, ks=[1, 3])
    assert again.retrieval["reused"] < again.retrieval["lists"]
