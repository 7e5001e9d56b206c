"""The watched ingest at hundreds of questions: a 20-document `load corpus` under `surreal-eval watch`,
run through the CLI, beside the same load unwatched and the same evaluation called directly.

    python benchmarks/watch_scale.py [--questions 200,500] [--documents 20] [--rounds 1] [--json FILE]

CISI (tests/data/cisi.tar.xz: 1,460 documents, 384-d embeddings, 76 queries with a relevant
judgment) is loaded with `load beir` into a persistent store (surrealkv://) per size. CISI has only
76 judged queries, so to watch 200 or 500 questions they are repeated in order under new ids
(`<id>_copy2`, `<id>_copy3`, ...: the same text, embedding and judgments) until there are
--questions of them. Every measured command then runs as its own `python -m surreal_eval` process,
as a user runs it, on its own copy of that store: its wall time, its CPU time (user + system, all
threads) and its peak resident memory (the process's own ru_maxrss, from os.wait4: the engine and
Python, from start to exit). On a shared machine the wall times grow with the other processes' load
(printed with the table), the CPU times much less.

  watched    `watch --k 1,3,5,10` (the registry's default retrievers and depth), then `load corpus` of
             --documents new documents (copies of CISI documents under new ids, with their
             embeddings): the load, then the evaluation the ingest triggers inside the database, in
             the ingest's one statement
  unwatched  the same `load corpus` on a copy with no watch: what the load alone costs
  direct     `evaluate --k 1,3,5,10` on the unwatched copy after its load: what `watch` saves a user from
             typing, the same questions, corpus, retrievers and k evaluated as `surreal-eval evaluate`
             does (batches of questions, several statements in flight). Neither run can read a
             candidate list from an earlier one (no run came before it on its copy, and the new
             documents changed the corpus); the table shows how many each read

The evaluation inside the ingest is the watched load's time (wall, and CPU) less the unwatched load's.
Each run's own time, from its creation to its end as it recorded them, is shown too: the direct
`evaluate` process also starts Python, asks the engine checks and, once the run is recorded, reads its
report back (means with bootstrap intervals) and the means per question source, which the watched
load does not. With
`--rounds N` the three are measured in turn (watched, unwatched, direct, watched, ...) and the
medians reported. `--json FILE` also writes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KS = "1,3,5,10"


def _cisi() -> Path:
    """The CISI collection shipped with the repository (tests/data/cisi.tar.xz), unpacked on first use."""
    from tests.datasets import cisi

    return cisi()


@dataclass
class Process:
    seconds: float
    #: user + system CPU seconds of the process (all its threads: the engine runs statements on every core)
    cpu_seconds: float
    peak_rss_mb: float
    stdout: str


@dataclass
class Size:
    questions: int
    documents: int
    #: per round: the watched load, the unwatched load, the direct evaluation
    watched: list[Process] = field(default_factory=list)
    unwatched: list[Process] = field(default_factory=list)
    direct: list[Process] = field(default_factory=list)
    #: per round, what the watched and the direct run recorded (newest_run)
    watched_runs: list[dict] = field(default_factory=list)
    direct_runs: list[dict] = field(default_factory=list)

    def median(self, name: str, attribute: str = "seconds") -> float:
        return statistics.median(getattr(p, attribute) for p in getattr(self, name))

    def run_median(self, name: str) -> float:
        """The median of the run's own time, created to finished, of the watched or the direct runs."""
        return statistics.median(run["created to finished s"] for run in getattr(self, f"{name}_runs"))


def cli(url: str, *args: str) -> Process:
    """Run `surreal-eval --url URL ARGS` in its own process: its wall time and peak resident memory."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "surreal_eval", "--url", url, *args], stdout=stdout, stderr=stderr,
                                 text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (Popen.wait would not give it)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        printed, failed = stdout.read(), stderr.read()
    if child.returncode != 0:
        raise SystemExit(f"surreal-eval {' '.join(args)} exited {child.returncode}: {failed[-2000:]}")
    return Process(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, printed)  # KiB on Linux


def write_collection(cisi: Path, folder: Path, questions: int) -> None:
    """A BEIR folder: CISI's corpus, and its judged queries repeated under new ids up to `questions` of them."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "embeddings").mkdir()
    shutil.copy(cisi / "corpus.jsonl", folder / "corpus.jsonl")
    shutil.copy(cisi / "embeddings" / "corpus.jsonl", folder / "embeddings" / "corpus.jsonl")
    qrels: dict[str, list[str]] = {}
    lines = (cisi / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, []).append(f"{doc}\t{score}")
    texts = {row["_id"]: row for row in map(json.loads, (cisi / "queries.jsonl").read_text(encoding="utf-8").splitlines())}
    vectors = {row["_id"]: row for row in map(json.loads, (cisi / "embeddings" / "queries.jsonl").read_text(encoding="utf-8").splitlines())}
    judged = [qid for qid in texts if qid in qrels]
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as q, \
            (folder / "embeddings" / "queries.jsonl").open("w", encoding="utf-8") as e, \
            (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        for n in range(questions):
            qid = judged[n % len(judged)]
            copy = n // len(judged) + 1
            new = qid if copy == 1 else f"{qid}_copy{copy}"
            q.write(json.dumps({**texts[qid], "_id": new}) + "\n")
            e.write(json.dumps({**vectors[qid], "_id": new}) + "\n")
            r.writelines(f"{new}\t{judgment}\n" for judgment in qrels[qid])


def write_documents(cisi: Path, path: Path, documents: int) -> None:
    """`documents` new documents: CISI's first ones under new ids, with their embeddings (JSONL for `load corpus`)."""
    rows = (cisi / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:documents]
    vectors = (cisi / "embeddings" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:documents]
    with path.open("w", encoding="utf-8") as out:
        for row, vector in zip(map(json.loads, rows), map(json.loads, vectors)):
            assert row["_id"] == vector["_id"]
            out.write(json.dumps({"id": f"new_{row['_id']}", "title": row.get("title", ""), "content": row["text"],
                                  "embedding": vector["embedding"]}) + "\n")


def newest_run(store: Path) -> dict:
    """What the newest run in `store` recorded of its candidate lists, its trigger and its own duration."""
    from surreal_eval import Settings, connect

    with connect(Settings(url=f"surrealkv://{store}")) as db:
        rows = db.value("SELECT trigger, retrieval, questions, created_at, finished_at FROM seval_run WHERE finished_at != NONE "
                        "ORDER BY created_at DESC LIMIT 1")
    row = rows[0]
    return {"trigger": row.get("trigger"), "questions": row.get("questions"), "retrieval": row.get("retrieval"),
            "created to finished s": round((row["finished_at"] - row["created_at"]).total_seconds(), 2)}


def _line(p: Process) -> str:
    return f"{p.seconds:6.1f} s  CPU {p.cpu_seconds:6.1f} s  {p.peak_rss_mb:6.0f} MB  (load average {os.getloadavg()[0]:.1f})"


def measure(cisi: Path, folder: Path, questions: int, documents: int, rounds: int, say) -> Size:
    collection, base = folder / f"cisi-{questions}", folder / f"base-{questions}"
    write_collection(cisi, collection, questions)
    new = folder / f"new-{documents}.jsonl"
    if not new.exists():
        write_documents(cisi, new, documents)
    loaded = cli(f"surrealkv://{base}", "load", "beir", str(collection))
    say(f"{questions} questions: {loaded.stdout.splitlines()[0]}")
    size = Size(questions, documents)
    for round_ in range(rounds):
        watched, unwatched = folder / f"watched-{questions}-{round_}", folder / f"unwatched-{questions}-{round_}"
        shutil.copytree(base, watched)
        shutil.copytree(base, unwatched)
        cli(f"surrealkv://{watched}", "watch", "--k", KS)
        size.watched.append(cli(f"surrealkv://{watched}", "load", "corpus", str(new)))
        if "the ingest recorded run" not in size.watched[-1].stdout:
            raise SystemExit(f"the watched load recorded no run: {size.watched[-1].stdout}")
        say(f"  watched load   {_line(size.watched[-1])}")
        size.unwatched.append(cli(f"surrealkv://{unwatched}", "load", "corpus", str(new)))
        say(f"  unwatched load {_line(size.unwatched[-1])}")
        size.direct.append(cli(f"surrealkv://{unwatched}", "evaluate", "--k", KS))
        say(f"  direct         {_line(size.direct[-1])}")
        size.watched_runs.append(newest_run(watched))
        size.direct_runs.append(newest_run(unwatched))
        shutil.rmtree(watched)
        shutil.rmtree(unwatched)
    shutil.rmtree(base)
    return size


def format_sizes(sizes: list[Size], rounds: int) -> str:
    note = f"medians of {rounds} rounds" if rounds > 1 else "one round"
    lines = [f"### A watched {sizes[0].documents}-document `load corpus` against the same evaluation called directly "
             f"(CISI, watch --k {KS}, default retrievers and depth; {note}; wall s / CPU s)", "",
             "| questions watched | watched load | peak RSS MB | unwatched load | evaluation inside the ingest | its run, created to finished "
             "| direct `evaluate` | peak RSS MB | its run, created to finished | inside / direct, wall | runs, inside / direct |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in sizes:
        wall = {name: s.median(name) for name in ("watched", "unwatched", "direct")}
        cpu = {name: s.median(name, "cpu_seconds") for name in ("watched", "unwatched", "direct")}
        inside, inside_cpu = wall["watched"] - wall["unwatched"], cpu["watched"] - cpu["unwatched"]
        runs = {name: s.run_median(name) for name in ("watched", "direct")}
        lines.append(f"| {s.questions:,} | {wall['watched']:.1f} / {cpu['watched']:.1f} | {s.median('watched', 'peak_rss_mb'):,.0f} "
                     f"| {wall['unwatched']:.1f} / {cpu['unwatched']:.1f} | {inside:.1f} / {inside_cpu:.1f} | {runs['watched']:.1f} "
                     f"| {wall['direct']:.1f} / {cpu['direct']:.1f} | {s.median('direct', 'peak_rss_mb'):,.0f} | {runs['direct']:.1f} "
                     f"| {inside / wall['direct']:.2f} | {runs['watched'] / runs['direct']:.2f} |")
    lines.append("")
    for s in sizes:
        lines.append(f"- {s.questions} questions, round by round: watched runs {json.dumps(s.watched_runs)}; "
                     f"direct runs {json.dumps(s.direct_runs)}")
    return "\n".join(lines)


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parent)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default="200,500", help="watched questions, comma-separated (default 200,500)")
    parser.add_argument("--documents", type=int, default=20, help="documents of the watched load (default 20)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="folder for the collections and stores (default: a temporary one, removed)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    cisi = _cisi()
    started, load = time.perf_counter(), os.getloadavg()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="surreal-eval-watch-") as temporary:
        folder = args.dir or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        sizes = [measure(cisi, folder, int(n), args.documents, args.rounds, say) for n in args.questions.split(",")]
    print(f"# The watched ingest, measured at {commit()} on {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}, in {time.perf_counter() - started:.0f} s (load average at the start "
          f"{load[0]:.1f}, at the end {os.getloadavg()[0]:.1f}: other processes share the cores when above 0)\n")
    print(format_sizes(sizes, args.rounds))
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in sizes], indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
