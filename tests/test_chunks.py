"""Chunk tables: splitting, document-level scoring of chunks, and quote labels that survive re-chunking."""

from __future__ import annotations

import pytest

from surreal_eval import ConfigError, Rejected, evaluate
from surreal_eval.load.chunking import chunk_documents, split_words
from surreal_eval.store.schema import corpus_tables, define_corpus


@pytest.mark.parametrize(
    ("text", "size", "overlap", "expected"),
    [
        ("a b c d e", 2, 0, ["a b", "c d", "e"]),
        ("a b c d e", 3, 1, ["a b c", "c d e"]),
        ("a b c d e f", 3, 1, ["a b c", "c d e", "e f"]),
        ("a  b\n\tc", 5, 2, ["a b c"]),
        ("", 4, 0, [""]),
        ("a b c d", 2, 1, ["a b", "b c", "c d"]),
    ],
)
def test_split_words_hand_worked(text, size, overlap, expected):
    assert split_words(text, size, overlap) == expected


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (3, 3), (3, -1)])
def test_split_words_refuses_impossible_windows(size, overlap):
    with pytest.raises(ConfigError):
        split_words("a b c", size, overlap)


def make_chunks(db, table, size, overlap=0):
    """A chunk table cut from the demo articles, each chunk embedded with its article's vector."""
    define_corpus(db, table, indexes=False)
    rows = list(chunk_documents(db, "seval_article", size, overlap))
    db.query(
        """
        FOR $c IN $rows {
            LET $doc = type::record($c.doc);
            UPSERT type::record($table, $c.id) CONTENT {
                title: $c.title, content: $c.content, doc: $doc, position: $c.position, embedding: $doc.embedding
            } RETURN NONE;
        };
        """,
        {"rows": rows, "table": table},
    )
    from surreal_eval.store.schema import define_corpus_indexes

    define_corpus_indexes(db, table)
    return rows


@pytest.fixture
def chunked(seeded):
    make_chunks(seeded, "seval_chunk_small", 6)
    make_chunks(seeded, "seval_chunk_large", 14, 4)
    return seeded


def per_question(report, question, retriever):
    (row,) = [r for r in report.per_question if r.question == question and r.retriever == retriever and r.k == max(report.ks)]
    return row


def test_chunk_tables_are_registered_and_tied_to_documents(chunked):
    assert corpus_tables(chunked) == ["seval_article", "seval_chunk_large", "seval_chunk_small"]
    small = chunked.value("SELECT VALUE doc FROM seval_chunk_small WHERE doc = seval_article:api_rate_limits")
    assert len(small) == 5  # 25 words in windows of 6
    assert chunked.value("RETURN count(SELECT * FROM seval_chunk_small WHERE doc = NONE)") == 0


def test_document_labels_score_chunks_at_document_level(chunked):
    report = evaluate(chunked, ks=[1, 3], params={"corpus": "seval_chunk_small"}, per_question=True)
    row = per_question(report, "seval_question:rate_limit", "bm25")
    assert row.ranked[0] == "seval_article:api_rate_limits"  # chunks mapped to their document
    assert len(row.ranked) == len(set(row.ranked))  # each document once, at its best chunk's rank
    assert row.relevant == ["seval_article:api_rate_limits"]


def test_one_quote_labelled_golden_set_scores_two_chunkings(chunked):
    chunked.query(
        "UPDATE seval_question:rate_limit SET passages = [{ doc: seval_article:api_rate_limits, quote: '429 Too  many requests' }]"
    )
    small = evaluate(chunked, ks=[1, 5], params={"corpus": "seval_chunk_small"}, per_question=True)
    large = evaluate(chunked, ks=[1, 5], params={"corpus": "seval_chunk_large"}, per_question=True)
    # words 14-17 of the article: chunk 2 of the 6-word cut (words 12-17), chunk 1 of the 14/4 cut (10-23)
    small_row = per_question(small, "seval_question:rate_limit", "bm25")
    large_row = per_question(large, "seval_question:rate_limit", "bm25")
    assert small_row.relevant == ["seval_chunk_small:api_rate_limits#2"]
    assert large_row.relevant == ["seval_chunk_large:api_rate_limits#1"]
    assert all(r.startswith("seval_chunk_small:") for r in small_row.ranked)
    assert small_row.recall > 0 and large_row.recall == 1.0
    # questions without passages are still scored by document on both tables
    assert per_question(small, "seval_question:signin", "vector").relevant[0].startswith("seval_article:")


def test_a_quote_label_that_matches_nothing_is_reported_not_scored(chunked):
    chunked.query("UPDATE seval_question:money_back SET passages = [{ doc: seval_article:refund_request, quote: 'store credit within a week' }]")
    runs_before = chunked.value("RETURN count(SELECT * FROM seval_run)")
    with pytest.raises(Rejected, match='seval_question:money_back -> seval_article:refund_request "store credit within a week"'):
        evaluate(chunked, ks=[3], params={"corpus": "seval_chunk_small"})
    assert chunked.value("RETURN count(SELECT * FROM seval_run)") == runs_before


def test_quote_labels_resolve_on_the_documents_too(chunked):
    chunked.query("UPDATE seval_question:rate_limit SET passages = [{ doc: seval_article:api_rate_limits, quote: 'Retry-After header' }]")
    report = evaluate(chunked, ks=[1], per_question=True)
    assert per_question(report, "seval_question:rate_limit", "bm25").relevant == ["seval_article:api_rate_limits"]


def test_a_phrase_cut_in_two_by_a_chunking_is_reported_for_that_chunking(chunked):
    chunked.query("UPDATE seval_question:rate_limit SET passages = [{ doc: seval_article:api_rate_limits, quote: '100 requests per minute' }]")
    evaluate(chunked, ks=[1], params={"corpus": "seval_chunk_large"})  # words 4-7: inside chunk 0 (words 0-13)
    with pytest.raises(Rejected, match="quote labels that match nothing in seval_chunk_small"):
        evaluate(chunked, ks=[1], params={"corpus": "seval_chunk_small"})  # cut between chunk 0 (0-5) and 1 (6-11)


def test_evaluating_an_unknown_corpus_table_is_refused(seeded):
    with pytest.raises(Rejected, match="no corpus table seval_chunk_nope"):
        evaluate(seeded, ks=[1], params={"corpus": "seval_chunk_nope"})


class WordHashEmbedder:
    """A deterministic 4-d embedder for tests (hashed words): real vectors, no model to load."""

    name = "test:word-hash"
    dimension = 4

    def embed(self, texts, *, progress=None):
        import hashlib

        vectors = []
        for text in texts:
            v = [0.0, 0.0, 0.0, 0.0]
            for word in text.lower().split():
                v[hashlib.sha256(word.encode()).digest()[0] % 4] += 1.0
            vectors.append(v if any(v) else [1.0, 0.0, 0.0, 0.0])
        return vectors


def test_chunk_corpus_cuts_embeds_and_bulk_loads_a_chunk_table(seeded):
    from surreal_eval.load.chunking import chunk_corpus

    report = chunk_corpus(seeded, source="seval_article", target="seval_chunk_cli", size=8, overlap=2, embedder=WordHashEmbedder())
    expected = sum(len(split_words(c, 8, 2)) for c in seeded.value("SELECT VALUE content FROM seval_article"))
    assert report.loaded == expected == seeded.value("RETURN count(SELECT id FROM seval_chunk_cli)")
    assert seeded.value("RETURN count(SELECT id FROM seval_chunk_cli WHERE doc = NONE OR position = NONE)") == 0
    assert "seval_chunk_cli" in corpus_tables(seeded)
    # the chunk table is searchable: its BM25 and HNSW indexes were built by the bulk load
    assert seeded.value("RETURN fn::seval::retrieve_bm25('429 too many requests', 1, 'seval_chunk_cli')")[0].id.startswith("api_rate_limits#")
    assert len(seeded.value("RETURN fn::seval::retrieve_vec([1, 0, 0, 0], 3, 'seval_chunk_cli')")) == 3
    assert evaluate(seeded, ks=[1, 3], params={"corpus": "seval_chunk_cli"}).questions == 8


def test_chunking_into_the_documents_table_is_refused(seeded):
    from surreal_eval.load.chunking import chunk_corpus

    with pytest.raises(ConfigError, match="would overwrite the documents"):
        chunk_corpus(seeded, target="seval_article", size=8, embedder=WordHashEmbedder())
