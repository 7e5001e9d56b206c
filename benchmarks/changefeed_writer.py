"""What the engine's change feed would cost a writer, and what finding an unnamed ingest's records costs without it.

    python benchmarks/changefeed_writer.py [--dataset cisi|debian] [--documents 20] [--rounds 30]

A run after an ingest whose row names nothing reads every record of the corpus to find what changed (about 1 s on
the 20,000-document Debian set, the embeddings decoded with each record). The engine keeps an exact record of every
committed change when a table has a CHANGEFEED: `SHOW CHANGES FOR TABLE t SINCE <versionstamp>` returns each
transaction's writes and deletions under one versionstamp. This measures, on the harness's own corpus table as
`surreal-eval load corpus` leaves it (its digests, its BM25 and HNSW indexes), in one store:

  commit   the writer's own transaction as an application writes it (`BEGIN; INSERT` --documents new documents
           `; CREATE seval_ingest ...; COMMIT`), with the table's change feed on and off, alternating --rounds times
           each (`ALTER TABLE ... CHANGEFEED 7d` / `DROP CHANGEFEED` between them): the ratio of the medians, against
           the issue's goal for the writer, 1.05
  read     what finding the changes costs: every record read as a run reads them when it cannot do better
           (fn::seval::corpus_rows), a key-only count of them, and `SHOW CHANGES` of the last ingest
  written  what the harness does instead (surql/corpus.surql): each record's written_at, set by the engine on every
           write, with an index on it. The writer's commits into two copies of the store, with the field and its
           index and without them, alternating --rounds times each; and the run's read of the records written
           since its state was read (fn::seval::rows_written_since) against every record's

The store is a temporary copy; nothing else is touched.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import watch_scale  # noqa: E402 (benchmarks/ is on the path only from here)
from cost_floor import timed  # noqa: E402


def fastest(db, query: str, times: int = 3) -> tuple[float, object]:
    """The fastest of `times` runs of `query`, in seconds, and its value."""
    return min((timed(lambda: db.value(query)) for _ in range(times)), key=lambda run: run[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["cisi", "debian"], default="cisi")
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    from surreal_eval import HarnessConfig, Settings, connect, import_harness
    from surreal_eval.golden.files import load_golden
    from surreal_eval.load.bulk import load_corpus

    make = watch_scale.cisi_set if args.dataset == "cisi" else watch_scale.debian_set
    docs, questions, batches, embeddings = make(1, args.documents)
    batches = (batches * (2 * args.rounds // max(len(batches), 1) + 2))[: 2 * args.rounds + 1]
    folder = Path(tempfile.mkdtemp(prefix="changefeed_writer_"))
    try:
        db = connect(Settings(url=f"surrealkv://{folder / 'store'}"))
        try:
            import_harness(db, HarnessConfig(dimension=len(docs[0].embedding)))
            load_corpus(db, docs)
            load_golden(db, questions)  # one question: the run that keeps the corpus's state (written)
            times: dict[bool, list[float]] = {True: [], False: []}
            for n, rows in enumerate(batches[:-1]):
                on = n % 2 == 0
                db.query("ALTER TABLE seval_article CHANGEFEED 7d" if on else "ALTER TABLE seval_article DROP CHANGEFEED")
                # new ids each time, as an application's new documents
                rows = [{**row, "id": f"cf{n}_{row['id']}"} for row in rows]
                times[on].append(watch_scale._write(db, rows))
            db.query("ALTER TABLE seval_article CHANGEFEED 7d")
            rows = [{**row, "id": f"cf_last_{row['id']}"} for row in batches[-1]]
            since = max(change["versionstamp"] for change in db.value("SHOW CHANGES FOR TABLE seval_article SINCE 0 LIMIT 100000"))
            watch_scale._write(db, rows)
            stamp = int(since) + 1  # an integer read from the engine: the statement takes no parameter
            show, shown = fastest(db, f"SHOW CHANGES FOR TABLE seval_article SINCE {stamp} LIMIT 1000")
            changed = sum(len(c["changes"]) for c in shown)
            every, _ = fastest(db, "RETURN array::len(fn::seval::corpus_rows('seval_article'))")
            count, counted = fastest(db, "SELECT count() FROM seval_article GROUP ALL")
            records = counted[0]["count"]
            db.query("ALTER TABLE seval_article DROP CHANGEFEED")
        finally:
            db.close()
        written = _written_at(folder, batches, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(f"{args.dataset}: {records} records ({embeddings}), commits of {args.documents} documents, {len(times[True])} each way")
    print(f"commit   change feed on {on * 1000:.1f} ms, off {off * 1000:.1f} ms (medians): on / off = {on / off:.3f} (goal <= 1.05)")
    print(f"read     every record (fn::seval::corpus_rows) {every:.3f} s; count (key-only) {count * 1000:.1f} ms; "
          f"SHOW CHANGES of the last ingest ({changed} changes) {show * 1000:.1f} ms")
    on, off = statistics.median(written["on"]), statistics.median(written["off"])
    print(f"written  commit with written_at and its index {on * 1000:.1f} ms, without {off * 1000:.1f} ms (medians): "
          f"with / without = {on / off:.3f} (goal <= 1.05); the records written since the state's read "
          f"({written['found']} of {records}) {written['since']:.3f} s against every record {every:.3f} s")


def _written_at(folder: Path, batches: list[list[dict]], rounds: int) -> dict:
    """The application's commits into two copies of the store, one with written_at and its index as
    surql/corpus.surql defines them and one without (removed, and nothing written since), alternating (`rounds`
    each, new ids each time); then, in the first, with the state read before the last batch, the time
    fn::seval::rows_written_since takes and how many records it read."""
    from surreal_eval import Settings, connect
    from surreal_eval.runs.evaluate import evaluate

    shutil.copytree(folder / "store", folder / "without")
    stores = {"on": connect(Settings(url=f"surrealkv://{folder / 'store'}")), "off": connect(Settings(url=f"surrealkv://{folder / 'without'}"))}
    try:
        stores["off"].query("REMOVE INDEX seval_article_written ON seval_article; REMOVE FIELD written_at ON seval_article;")
        times: dict[str, list[float]] = {"on": [], "off": []}
        for n, rows in enumerate(batches[:rounds]):
            for side in ("on", "off") if n % 2 == 0 else ("off", "on"):
                times[side].append(watch_scale._write(stores[side], [{**row, "id": f"wa{n}_{row['id']}"} for row in rows]))
        db = stores["on"]
        evaluate(db, ks=[1], retrievers=["bm25"])  # the state: the corpus as read now
        # no margin: the next read finds only the last batch (the store was loaded minutes ago, inside the margin)
        db.query("DEFINE FUNCTION OVERWRITE fn::seval::write_margin() -> duration { RETURN 0s; }")
        watch_scale._write(db, [{**row, "id": f"wa_last_{row['id']}"} for row in batches[-1]])
        since, found = fastest(db, "RETURN fn::seval::rows_written_since('seval_article').written")
    finally:
        for store in stores.values():
            store.close()
    return {**times, "since": since, "found": found}


if __name__ == "__main__":
    main()
