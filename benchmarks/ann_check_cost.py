"""What `evaluate --ann-check` and the engine checks cost, on CISI.

    python benchmarks/ann_check_cost.py [--repeats 3] [--knn-ef 100]

CISI (1,460 documents, 384-d embeddings, 76 questions) is loaded once into an embedded `mem://`
store (the HNSW graph built by the bulk ingest). Then, one after the other, in this process:

  default            `evaluate` of the default retrievers (bm25, vector, hybrid, hybrid_floor)
  default + ANN      the same with ann_check (adds vector_exact and ann_recall@k)
  vector             `evaluate` of the vector retriever alone
  vector + ANN       the same with ann_check
  engine checks      fn::seval::engine_checks alone (the BM25 and vector checks fn::seval::start_run makes, asked afresh)

Each is timed --repeats times, the rows interleaved round by round (the median and every time are
printed, wall seconds, k = 1, 5, 10, intervals included). The ann_recall@k of the last ANN run is printed too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from surreal_eval import HarnessConfig, Settings, connect, import_harness
from surreal_eval.golden.files import load_beir
from surreal_eval.runs.evaluate import evaluate


def _cisi() -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.datasets import cisi

    return cisi()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--knn-ef", type=int, default=100)
    args = parser.parse_args()
    db = connect(Settings(url="mem://"))
    import_harness(db, HarnessConfig(dimension=384, knn_ef=args.knn_ef))
    load_beir(db, _cisi())
    ks = [1, 5, 10]

    rows = [
        ("default", lambda: evaluate(db, ks=ks)),
        ("default + ANN", lambda: evaluate(db, ks=ks, params={"ann_check": True})),
        ("vector", lambda: evaluate(db, ks=ks, retrievers=["vector"])),
        ("vector + ANN", lambda: evaluate(db, ks=ks, retrievers=["vector"], params={"ann_check": True})),
        ("engine checks", lambda: db.value(
            "LET $p = fn::seval::run_params([10], {}); RETURN fn::seval::engine_checks(['bm25', 'vector'], $p, "
            "(SELECT count() AS n FROM seval_article GROUP ALL)[0].n, "
            "array::slice(fn::seval::golden_questions(fn::seval::golden_set(NONE), NONE), 0, 3).text, NONE)")),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.repeats):  # interleaved, so a change of load on the machine hits every row alike
        for name, action in rows:
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    print(f"CISI, knn_ef {args.knn_ef}, median of {args.repeats} interleaved rounds, seconds:")
    for name, _ in rows:
        print(f"  {name:<15} {statistics.median(times[name]):7.2f}   (runs: {', '.join(f'{t:.1f}' for t in times[name])})")
    report = evaluate(db, ks=ks, retrievers=["vector"], params={"ann_check": True})
    print("  ann_recall@k: " + ", ".join(f"@{a.k} {a.ann_recall:.3f}" for a in report.ann))
    db.close()


if __name__ == "__main__":
    main()
