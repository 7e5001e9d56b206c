"""Stand-in for the database a reader of the SurrealDB lesson has built: creates it in STORE exactly as
the lesson does (the project's surql/lesson.surql: table article with analyzer english, FULLTEXT and
HNSW indexes; the typed golden set question; fn::retrieve_bm25, fn::retrieve_vec, fn::retrieve_hybrid,
fn::retrieve_hybrid_floor, fn::recall_at, fn::precision_at, fn::rr, fn::evaluate; two rows in eval_run).

    python setup.py [STORE]     (default surrealkv://lesson.db)

Skip it when you have the database already: point SURREAL_EVAL_URL, --ns and --db at yours instead.
"""

import os
import sys
from pathlib import Path

from surrealdb import Surreal

LESSON = Path(__file__).resolve().parents[2] / "surql" / "lesson.surql"


def main(url: str) -> None:
    db = Surreal(url)
    db.use("surreal_eval", "surreal_eval")  # the harness's default namespace and database
    db.query(LESSON.read_text(encoding="utf-8")).execute()
    db.close()
    print(f"built the lesson's database in {url}: article (10), question (8), eval_run (2), analyzer english, "
          f"fn::retrieve_bm25, fn::retrieve_vec, fn::retrieve_hybrid, fn::retrieve_hybrid_floor, fn::evaluate")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "surrealkv://lesson.db")
    sys.stdout.flush()
    os._exit(0)  # the embedded SDK can abort at interpreter exit (README, Exit codes)
