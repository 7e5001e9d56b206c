"""How many questions the run after an ingest certifies unchanged, and whether every one of them is: the
certificate (surql/certificate.surql) measured against a fresh run on the same state.

    python benchmarks/certify_ingest.py [--dataset cisi|debian] [--questions N] [--documents 20]

On the store and ingest of benchmarks/watch_scale.py, the run after a 20-document ingest shows, per question and
before any list is brought up to date, that neither its BM25 nor its vector list can change at the top: such a
question takes its rankings from the run it follows, its lists left unscored. A fresh run (`--fresh`, every list
asked of the indexes, at the floors the incremental run kept) then ranks every question anew. Printed: how many
questions the run certified, how many it copied in all (certified, or brought up to date and found alike), and how
many certified questions a fresh run ranks otherwise under any retriever, or records other scores for (the
certificate is a proof: this must be 0); and, for every question, how many BM25 rankings differ (must be 0) and
vector ones (the index's own: its HNSW list may differ from the exact one the merge keeps).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import watch_scale  # noqa: E402 (benchmarks/ is on the path from here)


def _rankings(db, run) -> dict:
    rows = db.query("SELECT question, retriever, floor, ranked, scores FROM seval_ranking WHERE run = $r", {"r": run})[-1]
    return {(str(r["question"]), r["retriever"], r.get("floor")): (r["ranked"], r["scores"]) for r in rows}


def _alike(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(math.isclose(x, y, rel_tol=1e-6) for x, y in zip(a[1], b[1]))


def measure(dataset: str, questions: int, documents: int) -> dict:
    from surreal_eval.runs.evaluate import evaluate
    from surreal_eval.runs.watch import drain_ingests
    from surreal_eval.store.record_ids import to_record

    with watch_scale.watched_store(dataset, questions, documents, "certify") as (db, batches):
        watch_scale._write(db, batches[0])
        (done,) = drain_ingests(db).evaluated
        assert done.error is None, done.error
        run = db.value("SELECT VALUE id FROM ONLY seval_run ORDER BY created_at DESC LIMIT 1")
        rows = db.query("SELECT question, count() AS n FROM seval_candidate_cache WHERE run = $r AND how = 'certified' GROUP BY question",
                        {"r": run})[-1]
        certified = {str(r["question"]) for r in rows if r["n"] == 2}
        floors = db.value("SELECT VALUE params.floors FROM ONLY $r", {"r": run})
        fresh = evaluate(db, ks=watch_scale.KS, fresh=True, keep_lists=False, intervals=False, params={"floors": floors})
        mine, theirs = _rankings(db, run), _rankings(db, to_record(fresh.run, "seval_run"))
    assert mine.keys() == theirs.keys(), "the fresh run ranked other questions or retrievers"
    differ = {key for key in mine if not _alike(mine[key], theirs[key])}
    return {
        "questions": len({key[0] for key in mine}), "certified": len(certified), "copied": done.retrieval["copied"],
        "certified_differ": len({key[0] for key in differ} & certified),
        "bm25_differ": sum(1 for key in differ if key[1] == "bm25"), "vector_differ": sum(1 for key in differ if key[1] == "vector"),
        "retrieval": done.retrieval,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="cisi", choices=["cisi", "debian"])
    parser.add_argument("--questions", type=int, default=None, help="default: 76 on CISI, 500 on Debian")
    parser.add_argument("--documents", type=int, default=20)
    args = parser.parse_args()
    questions = args.questions or (76 if args.dataset == "cisi" else 500)
    r = measure(args.dataset, questions, args.documents)
    print(f"\n{args.dataset}: {r['questions']} questions, a {args.documents}-document ingest, top {max(watch_scale.KS)}")
    print(f"  questions certified unchanged        {r['certified']:5d}   (copied in all: {r['copied']})")
    print(f"  certified, ranked otherwise fresh    {r['certified_differ']:5d}   (must be 0)")
    print(f"  BM25 rankings unlike a fresh run     {r['bm25_differ']:5d}   (must be 0)")
    print(f"  vector rankings unlike a fresh run   {r['vector_differ']:5d}   (the index's own)")
    print(f"  lists: {r['retrieval']}")
    os._exit(0)  # the embedded engine may abort at interpreter exit (docs/exit-codes.md)


if __name__ == "__main__":
    main()
