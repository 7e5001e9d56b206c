"""Load time of the CISI collection: surreal-eval's bulk ingest against the naive row-by-row load.

    python benchmarks/load_cisi.py [--engine mem|surrealkv] [--copies 1] [--batch-size 250]

Every load runs in this one process, one after the other, on the same documents (CISI's 1,460,
with the 384-d embeddings of its sidecar; `--copies N` repeats them N times under new ids, with
jittered vectors, to see how each load scales), read into memory first, each into a fresh
database with the harness imported (so `article` starts with its indexes defined):

  bulk ingest   `surreal_eval.load.bulk.load_corpus`: staged in batches, moved 1,000 rows a
                transaction with the BM25 index kept up to date and the HNSW index removed, then
                the HNSW index defined again (built in one pass)
  naive         one `CREATE` per document into `article`, indexes defined first
  naive + graph the naive load, then `REBUILD INDEX` of the HNSW index: the embedded engine never
                builds the graph of rows written after the index was defined (KNN scans instead),
                so this is the naive way to the state the bulk ingest leaves
  batched       one `INSERT` of --batch-size rows at a time into the indexed table
  one INSERT    (with --single-insert) every row in one `INSERT` into the indexed table: the
                memory-hungry case the bulk ingest exists to avoid; it cannot be cut short

A load that is still running after --budget seconds stops at the end of its current statement;
its time for all rows is then extrapolated linearly from the rows it wrote (said in the table: a
lower bound, since each write gets slower as the indexes grow). At the end every database answers
the same KNN query (the time is the mean of 20) and says whether its HNSW graph was built.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from surreal_eval import Article, HarnessConfig, Settings, connect, import_harness
from surreal_eval.store.connection import Database, to_record
from surreal_eval.load.bulk import DEFAULT_BATCH_SIZE, load_corpus
from surreal_eval.load.readers import read_documents



def _cisi() -> Path:
    """The CISI collection shipped with the repository (tests/data/cisi.tar.xz), unpacked on first use."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.datasets import cisi

    return cisi()


CISI = _cisi()


def fresh(url: str) -> Database:
    db = connect(Settings(url=url))
    import_harness(db, HarnessConfig(dimension=384))
    return db


def row(doc: Article) -> dict:
    return doc.model_dump(exclude_none=True, exclude={"id"})


def bulk(db: Database, docs: list[Article], args: argparse.Namespace) -> int:
    return load_corpus(db, docs, batch_size=args.batch_size).loaded


def naive(db: Database, docs: list[Article], args: argparse.Namespace, started: float) -> int:
    for done, doc in enumerate(docs, start=1):
        db.query("CREATE $id CONTENT $row RETURN NONE", {"id": to_record(doc.id, "seval_article"), "row": row(doc)})
        if time.perf_counter() - started > args.budget:
            return done
    return len(docs)


def naive_graph(db: Database, docs: list[Article], args: argparse.Namespace, started: float) -> int:
    done = naive(db, docs, args, started)
    db.query("REBUILD INDEX seval_article_embedding ON seval_article")
    return done


def batched(db: Database, docs: list[Article], args: argparse.Namespace, started: float) -> int:
    done = 0
    for start in range(0, len(docs), args.batch_size):
        rows = [{**row(d), "id": d.id} for d in docs[start : start + args.batch_size]]
        db.query("INSERT INTO seval_article $rows RETURN NONE", {"rows": rows})
        done += len(rows)
        if time.perf_counter() - started > args.budget:
            break
    return done


def single_insert(db: Database, docs: list[Article], args: argparse.Namespace, started: float) -> int:
    db.query("INSERT INTO seval_article $rows RETURN NONE", {"rows": [{**row(d), "id": d.id} for d in docs]})
    return len(docs)


def knn_ms(db: Database, docs: list[Article]) -> float:
    vectors = [d.embedding for d in docs[:20]]
    started = time.perf_counter()
    for vector in vectors:
        db.value("SELECT VALUE id FROM seval_article WHERE embedding <|10,100|> $v", {"v": vector})
    return (time.perf_counter() - started) / len(vectors) * 1000


def copies(docs: list[Article], n: int) -> list[Article]:
    if n == 1:
        return docs
    rng = random.Random(7)
    return [d.model_copy(update={"id": f"{c}_{d.id}", "embedding": [x + rng.gauss(0, 0.01) for x in d.embedding or []]})
            for c in range(n) for d in docs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=CISI, help="a BEIR folder with embeddings/ (default: CISI)")
    parser.add_argument("--engine", choices=("mem", "surrealkv"), default="mem")
    parser.add_argument("--copies", type=int, default=1, help="repeat the documents N times (default 1)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds a load may take before it is cut short")
    parser.add_argument("--single-insert", action="store_true", help="also time one INSERT of every row (slow)")
    args = parser.parse_args()
    if not (args.folder / "corpus.jsonl").is_file():
        print(f"no BEIR folder at {args.folder}", file=sys.stderr)
        return 2

    started = time.perf_counter()
    docs = copies(list(read_documents(args.folder, format="beir")), args.copies)
    read_seconds = time.perf_counter() - started
    loads: list[tuple[str, Callable[..., int]]] = [
        ("bulk ingest (surreal-eval)", lambda db, d, a, s: bulk(db, d, a)),
        ("naive: one CREATE per row, indexes first", naive),
        ("naive, then REBUILD the HNSW index", naive_graph),
        (f"batched: INSERT {args.batch_size} rows at a time, indexes first", batched),
    ]
    if args.single_insert:
        loads.append(("one INSERT of every row, indexes first", single_insert))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, load) in enumerate(loads):
            db = fresh("mem://" if args.engine == "mem" else f"surrealkv://{tmp}/{number}")
            try:
                started = time.perf_counter()
                done = load(db, docs, args, started)
                seconds = time.perf_counter() - started
                graph = db.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]["initial"] > 0
                results.append((name, done, seconds, graph, knn_ms(db, docs)))
            finally:
                db.close()

    total = len(docs)
    bulk_seconds = results[0][2]
    print(f"{args.folder.name}: {total:,} documents ({args.copies} x {total // args.copies:,}), 384-d, "
          f"engine {args.engine}://, read from the files in {read_seconds:.1f} s (not counted)")
    print()
    print("| load | seconds | vs bulk | HNSW graph | KNN query |")
    print("|---|---:|---:|---|---:|")
    for name, done, seconds, graph, knn in results:
        full = seconds * total / done
        cut = "" if done == total else f" (first {done:,} rows in {seconds:.0f} s, extrapolated)"
        print(f"| {name} | {full:.1f}{cut} | {full / bulk_seconds:.2f}x | {'built' if graph else 'not built (scan)'} | {knn:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
