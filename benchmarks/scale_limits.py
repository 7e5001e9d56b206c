"""Scale limits: a large corpus and golden set loaded from files and evaluated on a persistent store.

    python benchmarks/scale_limits.py [--docs 30000] [--questions 30000] [--sample 1000] [--dir DIR]

(At 100,000 documents a move in one transaction stopped making progress on the embedded surrealkv
engine; loads now move MOVE_PART rows per transaction under a journal: see docs/reliability.md.)

Each step runs in its own child process, so each peak memory is that step's own, on one embedded
`surrealkv://` store (the persistent default):

  write     the synthetic corpus and golden set (benchmarks/synthetic.py, 384-d) written to JSONL;
            the first --sample questions are in split `dev`, the rest in `test` (not measured)
  corpus    `load_corpus(db, read_documents(file))`: the file is read as a stream and staged in
            batches, then moved in parts (all-or-nothing under a journal) and indexed (BM25, HNSW)
  golden    `load_golden(db, read_questions(file))`, the same way
  vector    `evaluate(db, ks=[1,3,5,10], retrievers=["vector"])` over every question: a real run,
            rankings and per-question results written to history, means with bootstrap intervals
  full      `evaluate(...)` with bm25, vector, hybrid, hybrid_floor and the five-floor sweep on the
            `dev` split (--sample questions): what a full run costs per question at this size

For each step: seconds, the child's peak resident memory (ru_maxrss: the engine and Python) and
the peak of Python's own allocations (tracemalloc, which also slows Python down a little), and
what the step made. `--json FILE` writes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

KS = [1, 3, 5, 10]
FULL = ["bm25", "vector", "hybrid", "hybrid_floor"]
FLOORS = [1.0, 2.0, 3.0, 4.0, 5.0]
STEPS = ("write", "corpus", "golden", "vector", "full")


def write_files(folder: Path, docs: int, questions: int, sample: int, vocabulary: int) -> dict:
    from synthetic import generate

    corpus = generate(docs=docs, questions=questions, dimension=384, seed=7, vocabulary=vocabulary)
    with (folder / "docs.jsonl").open("w", encoding="utf-8") as out:
        for article in corpus.articles:
            out.write(article.model_dump_json(exclude_none=True) + "\n")
    with (folder / "golden.jsonl").open("w", encoding="utf-8") as out:
        for i, question in enumerate(corpus.questions):
            row = question.model_copy(update={"split": "dev" if i < sample else "test"})
            out.write(row.model_dump_json(exclude_none=True) + "\n")
    return {"docs.jsonl MB": round((folder / "docs.jsonl").stat().st_size / 1e6),
            "golden.jsonl MB": round((folder / "golden.jsonl").stat().st_size / 1e6)}


def run_step(step: str, folder: Path, sample: int) -> dict:
    """One step in this process; returns what it made."""
    if step == "write":
        raise ValueError("write runs in the parent")
    from surreal_eval import Settings, connect, evaluate
    from surreal_eval.load.bulk import load_corpus
    from surreal_eval.golden.files import load_golden
    from surreal_eval.load.readers import read_documents, read_questions

    db = connect(Settings(url=f"surrealkv://{folder / 'store'}"))
    try:
        if step == "corpus":
            report = load_corpus(db, read_documents(folder / "docs.jsonl"), create_harness=True)
            return {"documents": report.loaded}
        if step == "golden":
            return {"questions": load_golden(db, read_questions(folder / "golden.jsonl")).loaded}
        if step == "vector":
            report = evaluate(db, ks=KS, retrievers=["vector"])
        else:
            report = evaluate(db, ks=KS, retrievers=FULL, params={"floors": FLOORS, "split": "dev"})
        best = max(report.results, key=lambda r: r.k)
        return {"questions": report.questions, "run": report.run,
                f"{best.retriever} recall@{best.k}": round(best.recall, 4)}
    finally:
        db.close()


def child(step: str, folder: Path, sample: int) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    made = run_step(step, folder, sample)
    seconds = time.perf_counter() - started
    python_peak = tracemalloc.get_traced_memory()[1] / 1e6
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"step": step, "seconds": seconds, "peak_rss_mb": rss, "python_peak_mb": python_peak, "made": made}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--questions", type=int, default=30_000)
    parser.add_argument("--sample", type=int, default=1_000, help="questions of the full evaluation (split dev)")
    parser.add_argument("--vocabulary", type=int, default=10_000,
                        help="distinct words of the synthetic text (default 10000; generating is linear in it per document)")
    parser.add_argument("--dir", type=Path, help="folder for the files and the store (default: a temporary one)")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"steps to run (default {','.join(STEPS)})")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="surreal-eval-scale-"))
    if args.child:
        child(args.child, folder, args.sample)
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"# Scale limits: {args.docs:,} documents, {args.questions:,} questions, 384-d, vocabulary {args.vocabulary:,},"
          f" surrealkv:// in {folder} ({os.cpu_count()} cores)\n", flush=True)
    print("| step | seconds | peak RSS MB | Python peak MB | made |\n|---|---:|---:|---:|---|", flush=True)
    for step in args.steps.split(","):
        if step == "write":
            started = time.perf_counter()
            made = write_files(folder, args.docs, args.questions, args.sample, args.vocabulary)
            row = {"step": step, "seconds": time.perf_counter() - started, "peak_rss_mb": None, "python_peak_mb": None, "made": made}
        else:
            done = subprocess.run([sys.executable, __file__, "--child", step, "--dir", str(folder), "--sample", str(args.sample)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"| {step} | failed | | | {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode} |", flush=True)
                break
            row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        rss = f"{row['peak_rss_mb']:,.0f}" if row["peak_rss_mb"] else ""
        python = f"{row['python_peak_mb']:,.0f}" if row["python_peak_mb"] else ""
        made = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in row["made"].items())
        print(f"| {step} | {row['seconds']:,.0f} | {rss} | {python} | {made} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
