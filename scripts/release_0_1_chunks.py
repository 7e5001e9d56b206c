"""Make tests/data/release_0_1_chunks.surql: a second small store written by surreal-eval 0.1 (commit a202283),
for what tests/data/release_0_1.surql does not hold. Run it with that release on the path:

    git worktree add /tmp/release-0.1 a202283   # or: git archive a202283 | tar -x -C /tmp/release-0.1
    PYTHONPATH=/tmp/release-0.1/src python scripts/release_0_1_chunks.py > tests/data/release_0_1_chunks.surql

It holds the demo; a chunk table chunk_small cut from article (its own corpus_table row, not recorded
in harness_object); a user table notes attached with `--index`, so 0.1 defined its indexes
harness_notes_body (FULLTEXT, analyzer english) and harness_notes_vec; a user table docs whose own
index uses 0.1's analyzer english_stop; a quote label (passages); a function retriever and a fused
retriever over it; a search endpoint row; a run on the chunk table, one on notes, one made by the
evaluator account ci (created_by evaluator:ci); and the watch left on, with one watched ingest.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from export_store import export  # noqa: E402
from tests.test_chunks import WordHashEmbedder  # noqa: E402 - the tests' deterministic 4-d embedder

from surreal_eval import HarnessConfig, Settings, connect, evaluate, import_harness, import_seed  # noqa: E402
from surreal_eval.load.attach import attach_table  # noqa: E402
from surreal_eval.load.bulk import load_corpus  # noqa: E402
from surreal_eval.load.chunking import chunk_corpus  # noqa: E402
from surreal_eval.models import Article  # noqa: E402
from surreal_eval.runs.watch import set_watch  # noqa: E402
from surreal_eval.store.access import grant_evaluator  # noqa: E402
from surreal_eval.store.user_retrievers import add_function_retriever, add_fused_retriever  # noqa: E402


APP = """
DEFINE TABLE notes SCHEMAFULL PERMISSIONS FULL;
DEFINE FIELD body ON notes TYPE string;
DEFINE FIELD vec ON notes TYPE array<float>;
INSERT INTO notes [
    { id: notes:refunds, body: 'Refunds reach the card within ten days', vec: [0.1, 0.9, 0.1, 0.0] },
    { id: notes:parcels, body: 'Track parcels with the courier number', vec: [0.0, 0.3, 0.9, 0.1] },
    { id: notes:login, body: 'Reset a forgotten password from the login page', vec: [0.9, 0.1, 0.0, 0.1] },
    { id: notes:limits, body: 'The API answers 429 above its rate limit', vec: [0.0, 0.0, 0.1, 0.9] }
];
DEFINE TABLE docs SCHEMAFULL PERMISSIONS FULL;
DEFINE FIELD text ON docs TYPE string;
DEFINE INDEX docs_text ON docs FIELDS text FULLTEXT ANALYZER english_stop BM25;
CREATE docs:one SET text = 'the words of the application';
DEFINE FUNCTION fn::notes_search($text: string, $embedding: option<array<number>>, $k: int) -> array {
    RETURN SELECT id, search::score(1) AS score FROM notes WHERE body @1,OR@ $text ORDER BY score DESC, id LIMIT $k;
};
"""


def main() -> str:
    path = Path(tempfile.mkdtemp()) / "store"
    url = f"surrealkv://{path}"
    db = connect(Settings(url=url))
    import_harness(db, HarnessConfig(dimension=4))
    import_seed(db)
    db.query(APP)
    attach_table(db, "notes", content="body", embedding="vec", index=True, analyzer="english")
    chunk_corpus(db, source="article", target="chunk_small", size=8, overlap=2, embedder=WordHashEmbedder())
    db.query("UPDATE question:rate_limit SET passages = [{ doc: article:api_rate_limits, quote: '429 Too Many Requests' }];"
             "CREATE question:refund_note CONTENT { text: 'refund to my card', embedding: [0.1, 0.9, 0.1, 0.0], relevant: [notes:refunds] };")
    add_function_retriever(db, "noted", function="fn::notes_search", corpus="notes")
    add_fused_retriever(db, "noted_hybrid", fusion="rrf", lists=["noted", "vector"])
    db.query("CREATE retriever_endpoint:api CONTENT { url: 'http://127.0.0.1:8765/search?q={text}&k={k}', ids: 'hits[*].id' }")
    evaluate(db, ks=[1, 3], label="chunks", params={"corpus": "chunk_small"}, retrievers=["bm25", "vector"])
    evaluate(db, ks=[1, 3], label="notes", params={"corpus": "notes"}, retrievers=["bm25", "noted", "noted_hybrid"])
    grant_evaluator(db, "ci", "secret-ci-pass")
    db.close()
    ci = connect(Settings(url=url, access="evaluator", user="ci", password="secret-ci-pass"))
    evaluate(ci, ks=[1, 3], label="by ci", retrievers=["bm25", "hybrid_floor"])
    ci.close()
    db = connect(Settings(url=url))
    set_watch(db, ks=[1], retrievers=["bm25"])
    load_corpus(db, [Article(id="faq_new", title="FAQ", content="shipping times and couriers", embedding=[0.1, 0.7, 0.1, 0.1])],
                source="new.jsonl")
    db.close()
    text = export(url, "surreal_eval", "surreal_eval")
    return ("-- a store made by surreal-eval 0.1 (commit a202283) by scripts/release_0_1_chunks.py: chunks, an attached table "
            "with the harness's indexes, an analyzer of 0.1 under a user's index, a run by an evaluator, the watch on\n" + text)


if __name__ == "__main__":
    sys.stdout.write(main())
    sys.stdout.flush()
    os._exit(0)
