"""Evaluate after every ingest, measured at scale: what a watched ingest costs its writer, and what the
evaluation after it costs against a fresh full evaluation, on CISI and on the 20,000-document Debian set.

    python benchmarks/watch_scale.py [--dataset cisi,debian] [--questions 76,500] [--documents 20] [--rounds 3] [--json FILE]

Each set is loaded once into a persistent store (surrealkv://) with `surreal-eval watch --k 1,3,5,10` on
(the registry's default retrievers) and one evaluation made, as a watched corpus has. CISI (1,460
documents, 76 judged queries) ships with the repository; the Debian set is benchmarks/debian_corpus.py's
(20,000 package descriptions, 500 known-item questions; MiniLM embeddings when the local model can run,
else hashed ones, and the output says which). The ingest is --documents new documents (CISI: copies of
its documents under new ids, with their embeddings; Debian: packages outside the corpus that no question
labels). Every measured thing runs in a process of its own, on its own copy of that store, as a user runs
it (the package's bytecode compiled first, as an installed package has it): its wall time, CPU time (user +
system, all threads) and peak resident memory (ru_maxrss, from os.wait4 in a small launcher process: the engine
and Python, start to exit).

  (a) commit     the writer's own transaction, as an application writes it: `BEGIN; INSERT` the documents
                 `; CREATE seval_ingest ...; COMMIT`, with watch on and off, alternating 40 times each in one
                 process (a new batch of ids each time): the ratio of the medians (goal <= 1.05)
  (b) after      `drain_ingests` (what `surreal-eval watch drain` runs) after that ingest: the incremental run (vector lists merged, BM25
                 lists rescored at the new statistics where certain, else fetched, questions ranked alike copied
                 from the run it follows; the ingest names nothing, so the run reads the records written since the
                 state was read, with the margin fn::seval::write_margin made 0 s in the base store, loaded seconds
                 before: see base_store), against
      fresh      a fresh full evaluation on the same state, what `surreal-eval evaluate --k 1,3,5,10 --fresh` runs
                 without its bootstrap intervals and its printing (the library's `evaluate(fresh=True,
                 intervals=False)` in a process of its own): every list fetched, every question scored (goal on
                 Debian: after / fresh <= 0.1)
  next           (b) after the ingest that follows it (another --documents new documents), on the same store: the
                 run an ingest in a watched chain costs once the lists have been certified or brought up to date
                 since they were fetched (what the first run after a fresh one reads once: each BM25 list's
                 statistics and its terms' counts), against `fresh`
  named          (b) after the same ingest, its row naming the records it added (`added: [...], changed: [],
                 removed: []`): the run reads those and the corpus's state, not every record
  load+after     `surreal-eval load corpus` of the same documents on a watched store (the load, then the
                 evaluation after its commit, and its report of what fell and what broke it), against `fresh`: the
                 issue's "watched load and its evaluation"; each round's ratio, and the ratio of their CPU times
  unchanged      an evaluation with nothing changed since the run it follows (no ingest): every list reused and
                 every question copied, the least any run costs in the harness's present design, against `fresh`
  (c) memory     the peak resident memory of the after and fresh processes

With --rounds N, (b) and load+after are measured N times in turn and the medians reported. `--json FILE`
writes every number.
"""

from __future__ import annotations

import argparse
import contextlib
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

KS = [1, 3, 5, 10]


@dataclass
class Process:
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    said: dict = field(default_factory=dict)


@dataclass
class Result:
    dataset: str
    documents: int
    questions: int
    ingest: int
    embeddings: str
    commit_on: list[float] = field(default_factory=list)
    commit_off: list[float] = field(default_factory=list)
    after: list[Process] = field(default_factory=list)
    fresh: list[Process] = field(default_factory=list)
    load_after: list[Process] = field(default_factory=list)
    named: list[Process] = field(default_factory=list)
    next: list[Process] = field(default_factory=list)
    unchanged: list[Process] = field(default_factory=list)

    def median(self, name: str, attribute: str = "seconds") -> float:
        return statistics.median(getattr(p, attribute) for p in getattr(self, name))


# ------------------------------------------------------------------------------------- children


def child(mode: str, url: str, arg: str) -> dict:
    """What one measured process does; its JSON goes to stdout."""
    from surreal_eval import Settings, connect

    db = connect(Settings(url=url))
    try:
        if mode == "commit":
            on, off = _commits(db, json.loads(Path(arg).read_text()))
            return {"on": on, "off": off}
        if mode == "after":
            from surreal_eval.runs.watch import drain_ingests

            started = time.perf_counter()
            (done,) = drain_ingests(db).evaluated
            assert done.error is None, done.error
            return {"seconds": time.perf_counter() - started, "retrieval": done.retrieval, "since": str(done.since)}
        if mode in ("fresh", "unchanged"):
            from surreal_eval.runs.evaluate import evaluate

            started = time.perf_counter()
            report = evaluate(db, ks=KS, fresh=mode == "fresh", intervals=False)
            return {"seconds": time.perf_counter() - started, "retrieval": report.retrieval}
        if mode in ("app-ingest", "app-ingest-named"):  # one application-style ingest, not measured: the state (b) starts from
            rows = json.loads(Path(arg).read_text())[0]
            _write(db, rows, named=mode == "app-ingest-named")
            return {}
        raise SystemExit(f"unknown child mode {mode}")
    finally:
        db.close()


def _write(db, rows: list[dict], named: bool = False) -> float:
    """The application's own transaction: its documents and the ingest row, committed together; its seconds. With
    `named`, the row names the records added (and that none was changed or removed)."""
    started = time.perf_counter()
    lists = (", added: $rows.map(|$r| type::record('seval_article', $r.id)), changed: [], removed: []" if named else "")
    db.query("BEGIN; INSERT INTO seval_article $rows RETURN NONE; CREATE seval_ingest CONTENT { corpus: 'seval_article', "
             f"documents: $n{lists} }} RETURN NONE; COMMIT;", {"rows": rows, "n": len(rows)})
    return time.perf_counter() - started


def _commits(db, batches: list[list[dict]]) -> tuple[list[float], list[float]]:
    """Half the batches (the first left for the other measurements) written with watch on and half with it off,
    alternating; the seconds of each side."""
    from surreal_eval.runs.watch import clear_watch, get_watch, set_watch

    watch = get_watch(db)
    times: dict[bool, list[float]] = {True: [], False: []}
    for i, rows in enumerate(batches[1:]):
        on = i % 2 == 0
        if on:
            set_watch(db, ks=watch["ks"], retrievers=watch["retrievers"], params=watch["params"])
        else:
            clear_watch(db)
        times[on].append(_write(db, rows))
    set_watch(db, ks=watch["ks"], retrievers=watch["retrievers"], params=watch["params"])
    return times[True], times[False]


def run_child(*args: str) -> Process:
    """`python benchmarks/watch_scale.py --child ARGS` (or `surreal-eval ARGS` when the first is `cli`) in a process
    of its own: wall, CPU and peak memory, and what it printed. It is started by a small launcher (`--launch`):
    Linux counts in a process's peak memory that of the process it was forked from (at exec, the old image's high
    water mark is kept), so a child forked straight from this one, which holds the set, would report this one's."""
    command = ([sys.executable, "-m", "surreal_eval", *args[1:]] if args[0] == "cli"
               else [sys.executable, __file__, "--child", *args])
    launched = subprocess.run([sys.executable, __file__, "--launch", *command], capture_output=True, text=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if launched.returncode != 0:
        raise SystemExit(f"launcher failed: {launched.stderr[-3000:]}")
    got = json.loads(launched.stdout)
    if got["code"] != 0:
        raise SystemExit(f"{' '.join(args)} exited {got['code']}: {got['stderr'][-3000:]}")
    said = json.loads(got["stdout"].strip().splitlines()[-1]) if args[0] != "cli" else {"stdout": got["stdout"][-2000:]}
    return Process(got["seconds"], got["cpu_seconds"], got["peak_rss_kb"] / 1024, said)


def launch(command: list[str]) -> None:
    """Runs `command` and prints, as JSON, its exit code, wall and CPU seconds, peak resident memory (ru_maxrss, KiB,
    from os.wait4) and what it printed."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must know it ended
        stdout.seek(0)
        stderr.seek(0)
        print(json.dumps({"code": process.returncode, "seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                          "peak_rss_kb": usage.ru_maxrss, "stdout": stdout.read(), "stderr": stderr.read()[-5000:]}))


# ------------------------------------------------------------------------------------- the sets


def cisi_set(questions: int, documents: int) -> tuple[list, list, list[list[dict]], str]:
    """CISI's documents and judged queries (repeated under new ids up to `questions`), and batches of new documents."""
    from surreal_eval import Question
    from surreal_eval.load.readers import read_beir
    from tests.datasets import cisi

    docs, asked = read_beir(cisi())
    docs, asked = list(docs), list(asked)
    judged = [q for q in asked if q.relevant]
    wanted = [judged[n % len(judged)].model_copy(update={"id": judged[n % len(judged)].id + (f"_copy{n // len(judged) + 1}" if n >= len(judged) else "")})
              for n in range(questions)]
    return docs, [Question(**q.model_dump()) for q in wanted], _batches(docs, documents), "MiniLM (shipped)"


def debian_set(questions: int, documents: int) -> tuple[list, list, list[list[dict]], str]:
    """The Debian set, and batches of packages outside it that no question labels."""
    from debian_corpus import build, minilm_available

    kind = "minilm" if minilm_available() else "hashed"
    corpus = build(docs=20_000 + 21 * documents, questions=questions, embeddings=kind)  # the set built once (cached)
    labelled = {str(label) for q in corpus.questions for label in q.relevant}
    spare = [a for a in corpus.articles if a.id not in labelled][-21 * documents:]
    spared = {a.id for a in spare}
    keep = [a for a in corpus.articles if a.id not in spared]
    return keep, corpus.questions, _batches(spare, documents), "MiniLM" if kind == "minilm" else "hashed bag of words"


#: Batches of new documents: the first for (b) and load+after, the others for (a), half with watch on.
BATCHES = 81


def _batches(source: list, documents: int) -> list[list[dict]]:
    """BATCHES batches of `documents` new documents each: the documents of `source` in turn, under new ids."""
    return [[{"id": f"new{b}_{d.id}", "title": d.title or "", "content": d.content, "embedding": d.embedding}
             for d in (source[(b * documents + i) % len(source)] for i in range(documents))] for b in range(BATCHES)]


def base_store(folder: Path, docs: list, questions: list) -> str:
    """A store with the set loaded, watch on at k 1, 3, 5, 10, and one evaluation made."""
    from surreal_eval import HarnessConfig, Settings, connect, import_harness
    from surreal_eval.load.bulk import load_corpus
    from surreal_eval.golden.files import load_golden
    from surreal_eval.runs.evaluate import evaluate
    from surreal_eval.runs.watch import set_watch

    url = f"surrealkv://{folder / 'base'}"
    db = connect(Settings(url=url))
    try:
        import_harness(db, HarnessConfig(dimension=len(docs[0].embedding)))
        load_corpus(db, docs)
        load_golden(db, questions)
        db.query("DELETE seval_ingest")
        set_watch(db, ks=KS)
        evaluate(db, ks=KS, intervals=False)
        # loaded seconds ago, every record is within the ten minutes before the state's read that a run after an
        # ingest naming nothing reads again (fn::seval::write_margin, fn::seval::rows_written_since): past the merge
        # limit, it would read every record. A corpus loaded more than ten minutes before its ingests has only the
        # records written since read; the margin is made 0 s here to measure that without waiting ten minutes.
        db.query("DEFINE FUNCTION OVERWRITE fn::seval::write_margin() -> duration { RETURN 0s; }")
    finally:
        db.close()
    return url


@contextlib.contextmanager
def watched_store(dataset: str, questions: int, documents: int, name: str):
    """The set's store as base_store makes it, in a temporary folder, copied to `name` and opened, with the
    batches of new documents: (db, batches); closed and removed on leaving."""
    from surreal_eval import Settings, connect

    docs, asked, batches, embeddings = (cisi_set if dataset == "cisi" else debian_set)(questions, documents)
    with tempfile.TemporaryDirectory(prefix=f"{name}-{dataset}-") as tmp:
        folder = Path(tmp)
        print(f"{dataset}: loading {len(docs):,} documents and {len(asked)} questions ({embeddings} embeddings) ...", flush=True)
        base_store(folder, docs, asked)
        db = connect(Settings(url=copy(folder, name)))
        try:
            yield db, batches
        finally:
            db.close()


def copy(folder: Path, name: str) -> str:
    target = folder / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(folder / "base", target)
    return f"surrealkv://{target}"


def measure(dataset: str, questions: int, documents: int, rounds: int, folder: Path) -> Result:
    docs, asked, batches, embeddings = (cisi_set if dataset == "cisi" else debian_set)(questions, documents)
    print(f"{dataset}: loading {len(docs):,} documents and {len(asked)} questions ...", flush=True)
    base_store(folder, docs, asked)
    result = Result(dataset, len(docs), len(asked), documents, embeddings)
    batch_file = folder / "batches.json"
    batch_file.write_text(json.dumps(batches))
    commits = run_child("commit", copy(folder, "commit"), str(batch_file)).said
    result.commit_on, result.commit_off = commits["on"], commits["off"]
    first = folder / "first.json"
    first.write_text(json.dumps([batches[0]]))
    second = folder / "second.json"
    second.write_text(json.dumps([batches[1]]))
    load_file = folder / "load.jsonl"
    load_file.write_text("".join(json.dumps(row) + "\n" for row in batches[0]))
    for round_ in range(rounds):
        for name in ("after", "fresh"):
            url = copy(folder, name)
            run_child("app-ingest", url, str(first))
            if name == "after":
                result.after.append(run_child("after", url, ""))
                run_child("app-ingest", url, str(second))
                result.next.append(run_child("after", url, ""))
            else:
                result.fresh.append(run_child("fresh", url, ""))
        url = copy(folder, "named")
        run_child("app-ingest-named", url, str(first))
        result.named.append(run_child("after", url, ""))
        url = copy(folder, "load")
        result.load_after.append(run_child("cli", "--url", url, "load", "corpus", str(load_file)))
        result.unchanged.append(run_child("unchanged", copy(folder, "unchanged"), ""))
        print(f"  round {round_ + 1}: after {result.after[-1].seconds:.1f} s (next {result.next[-1].seconds:.1f} s, "
              f"named {result.named[-1].seconds:.1f} s), "
              f"fresh {result.fresh[-1].seconds:.1f} s, load+after {result.load_after[-1].seconds:.1f} s", flush=True)
    return result


def show(result: Result) -> None:
    on, off = statistics.median(result.commit_on), statistics.median(result.commit_off)
    after, fresh = result.median("after"), result.median("fresh")
    own_after = statistics.median(p.said["seconds"] for p in result.after)
    own_fresh = statistics.median(p.said["seconds"] for p in result.fresh)
    print(f"\n{result.dataset}: {result.documents:,} documents, {result.questions} questions, an ingest of {result.ingest} "
          f"({result.embeddings} embeddings), medians of {len(result.after)} rounds")
    print(f"  (a) the writer's commit, watch on / off: {on * 1000:.1f} / {off * 1000:.1f} ms = {on / off:.3f} "
          f"({len(result.commit_on)} each; goal <= 1.05)")
    print(f"  (b) the evaluation after the ingest / a fresh full evaluation: {own_after:.2f} / {own_fresh:.2f} s = "
          f"{own_after / own_fresh:.3f} (as processes: {after:.2f} / {fresh:.2f} s = {after / fresh:.3f})")
    print(f"      the run after the ingest: {result.after[-1].said['retrieval']}")
    own_next = statistics.median(p.said["seconds"] for p in result.next)
    print(f"      after the next ingest (its lists certified or brought up to date once already) / fresh: {own_next:.2f} / "
          f"{own_fresh:.2f} s = {own_next / own_fresh:.3f} (as processes: {result.median('next'):.2f} / {fresh:.2f} s = "
          f"{result.median('next') / fresh:.3f}); its run: {result.next[-1].said['retrieval']}")
    own_named = statistics.median(p.said["seconds"] for p in result.named)
    print(f"      after an ingest whose row names its records (the run reads those, not every record) / fresh: "
          f"{own_named:.2f} / {own_fresh:.2f} s = {own_named / own_fresh:.3f} (as processes: {result.median('named'):.2f} / "
          f"{fresh:.2f} s = {result.median('named') / fresh:.3f})")
    rounds = ", ".join(f"{a.seconds / f.seconds:.3f}" for a, f in zip(result.load_after, result.fresh))
    load_cpu, fresh_cpu = result.median("load_after", "cpu_seconds"), result.median("fresh", "cpu_seconds")
    print(f"      the watched load and its evaluation (`load corpus`, one process) / fresh: "
          f"{result.median('load_after'):.2f} / {fresh:.2f} s = {result.median('load_after') / fresh:.3f} (each round's: {rounds}); "
          f"its CPU time (user + system): {load_cpu:.1f} / {fresh_cpu:.1f} s = {load_cpu / fresh_cpu:.3f}")
    own_same = statistics.median(p.said["seconds"] for p in result.unchanged)
    print(f"      an evaluation with nothing changed (every list reused, every question copied) / fresh: {own_same:.2f} / "
          f"{own_fresh:.2f} s = {own_same / own_fresh:.3f}")
    print(f"  (c) peak resident memory, after / fresh: {result.median('after', 'peak_rss_mb'):.0f} / "
          f"{result.median('fresh', 'peak_rss_mb'):.0f} MB; CPU after / fresh: {result.median('after', 'cpu_seconds'):.1f} / "
          f"{result.median('fresh', 'cpu_seconds'):.1f} s")


#: questions per set unless --questions says otherwise: CISI's judged queries, the Debian set's 500
QUESTIONS = {"cisi": 76, "debian": 500}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--launch", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--dataset", default="cisi,debian")
    parser.add_argument("--questions", help="questions per set, in --dataset order (default: cisi 76, debian 500)")
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    datasets = args.dataset.split(",")
    if args.questions is None:  # each set's default, whichever sets are asked for
        args.questions = ",".join(str(QUESTIONS.get(d, 0)) for d in datasets)
    if len(args.questions.split(",")) != len(datasets):  # said before anything is measured, not after the first set
        parser.error("--questions takes one number per --dataset")
    if args.launch:
        launch(args.launch)
        return
    if args.child:
        from surreal_eval.store.process import collect_rarely

        collect_rarely()  # as the console script's commands collect garbage
        said = child(*args.child)
        print(json.dumps(said), flush=True)
        os._exit(0)  # the embedded engine may abort at interpreter exit (docs/exit-codes.md)
    # the package's bytecode cached, as an installed package has it (pip compiles it; an editable install writes it on
    # first import), even where PYTHONDONTWRITEBYTECODE is set: else every measured process compiles it (~0.09 s)
    import compileall

    import surreal_eval

    compileall.compile_dir(Path(surreal_eval.__file__).parent, quiet=1)
    results = []
    for dataset, questions in zip(datasets, map(int, args.questions.split(",")), strict=True):
        with tempfile.TemporaryDirectory(prefix=f"watch-{dataset}-") as tmp:
            results.append(measure(dataset, questions, args.documents, args.rounds, Path(tmp)))
        show(results[-1])
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    os._exit(0)


if __name__ == "__main__":
    main()
