"""Run an evaluation inside the database and read a run back."""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
from typing import Any, Callable, Sequence


from ..errors import ConfigError, EngineCheckFailed, on_interrupt
from ..store.connection import Database, record_str
from ..store.record_ids import to_record
from ..store.golden import golden_rows, golden_set
from ..grammar import DEFAULT_KS, check_number, check_params
from ..store.registry import resolve_retrievers
from ..models import RunReport
from ..stats import prepare_intervals
from .record import load_run, prepare_report, report_from_row
from .sources import with_source_means
from .endpoints import endpoint_rankings, split_endpoints
from .rerank import SUFFIX, Rerank, check_rerank, rerank_stage
from .supplied import Supplied, check_corpus
from .tags import check_can_tag, tag_run
from ..golden.labels import who

__all__ = ["CONCURRENCY", "BATCH", "evaluate"]

log = logging.getLogger(__name__)

#: Evaluation statements kept in flight at once (the embedded engine runs them on separate cores).
CONCURRENCY = max(1, min(os.cpu_count() or 2, 8))
#: How old an unfinished run must be to be discarded as dead, on an embedded store and on a server.
STALE_EMBEDDED, STALE_SERVER = "0s", "1d"
#: Questions per evaluation statement: small enough to spread over the cores, large enough to amortise.
BATCH = 4
#: At most this many a statement in a run that follows another (fn::seval::start_run's `follows`: most questions
#: taken from it, a few ms each), while every core still gets four statements: what a statement costs besides its
#: questions is then spread over more of them (after a 20-document ingest, side by side: Debian's 500 questions
#: 6.88 to 6.70 s, CISI's 76 1.60 to 1.55 s)
BATCH_FOLLOWING = 16
#: Statements between two chances for an embedded store to flush (Database.flush_if_full).
GROUP = 256

def evaluate(
    db: Database,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    retrievers: list[str] | None = None,
    label: str | None = None,
    tag: str | None = None,
    params: dict[str, Any] | None = None,
    per_question: bool = False,
    intervals: bool = True,
    trigger: str = "library",
    concurrency: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    fresh: bool = False,
    supplied: Supplied | None = None,
    rerank: Rerank | None = None,
    record: bool = True,
    ingests: Sequence[Any] | None = None,
    keep_lists: bool = True,
    verify: bool = False,
    meanwhile: Callable[[], None] | None = None,
    alongside_finish: Callable[[Any, list[dict]], None] | None = None,
) -> RunReport:
    """Evaluate the golden set in the database (fn::seval::run_evaluation), record the run, return its report.

    `ks` are the cutoffs (default DEFAULT_KS, 1, 3, 5 and 10, as `surreal-eval evaluate`).

    `params` may set corpus, depth, rrf_k, floor, floors, weights, norm, split, ann_check (also
    rank by the exact neighbours, retriever vector_exact, and record the HNSW list's ann_recall@k)
    and bm25_match ('any', the default, or 'all': BM25 keeps only records holding every query word);
    the database fills the defaults, and records bm25_fields, the fields the corpus's BM25 searches.
    Without `floors`, the floor sweep's floors come from the data (params.floors_from 'data'): those of the run
    this one follows (fn::seval::base_run) when there is one and not `fresh`, else 0 and percentiles of the BM25
    scores of the run's candidate lists, read in batches first and ranked from (fn::seval::keep_floors).
    The engine checks run first (EngineCheckFailed: no run). The questions are scored in batches with `concurrency` statements in flight
    (default CONCURRENCY); the run becomes visible in history only when every question is scored,
    and a failure discards it. `progress(done, total)` is called as batches of questions finish; `meanwhile()` once
    the run's start is in flight, in the caller's thread (Python work for after the run, done while the engine starts
    it on one core: the report's models and numpy for the intervals are made ready so too; while the questions are
    evaluated, the engine keeps every core busy). `alongside_finish(run, groups)`
    is called in the caller's thread while the run's finish is in flight on one core, with what it is handed
    (fn::seval::summary_groups): reads for after the run, on the other (what a watched load reads of what fell).
    `supplied` holds rankings made outside the database, scored beside the registry's retrievers
    (only them when `retrievers` is None): its `rankings` give, per retriever name, each question's
    ranked [{id, score}] (a question left out is an empty ranking), and its `record` is stored in the
    run's params.supplied with the names. `rerank` adds a reranking stage over every retriever
    asked for (runs/rerank.py): each one's reranked top N is scored as `<name>+rerank` beside it.
    A question's BM25 and vector lists are read from an earlier run when their inputs are unchanged
    (surql/candidate_cache.surql), and so is an engine check that passed (surql/checks.surql); `fresh`
    queries the indexes for every list (and stores them anew) and asks the engine every check.
    With `record=False` the run is scored, read back (report.recorded False) and discarded: nothing
    enters history, no engine check or provenance is kept; only the candidate lists it fetched are
    kept, which a later run on the same inputs would fetch and store exactly the same.

    After the corpus changed, kept vector lists are brought up to date and only the questions ranked
    otherwise are scored again (surql/incremental.surql; the report's `since` and `retrieval` say how).
    `ingests` names the ingests (seval_ingest ids) the run is made after (runs/watch.py); `keep_lists=False`
    stores no list it fetched (a fresh run beside an incremental chain, leaving the chain's lists as they
    were); `verify` (with `fresh`) compares every kept list with the list fetched (`watch --verify-every`).
    `label` is free text kept with the run (`--note`); `tag` names the run once recorded, moving the tag as
    `tag_run` does (checked before anything is evaluated).

    The report's `by_source` holds each retriever's recall@5 (else recall at the deepest k) per question source with its
    interval, real first, and every other source's gap to real (runs/sources.py); when it is empty `by_source_note` says
    why (one source, nothing judged, not recorded). With `intervals=False` (no bootstrap at all) it is None.
    """
    run: Any = None  # the run, once started (what an interruption says it kept: _interrupted)
    with on_interrupt(lambda: _interrupted(db, run)):
        ks = list(ks)
        for k in ks:
            check_number("k", k, option="every k")
        given = check_params({k: v for k, v in (params or {}).items() if v is not None})
        if tag is not None:
            if not record:
                raise ConfigError("--tag names a recorded run: it cannot go with --no-record")
            check_can_tag(db, tag)
        if rerank:
            check_rerank(rerank, ks)
        retrievers, endpoint_names = split_endpoints(db, retrievers)
        if endpoint_names:  # asked before anything is written: an endpoint that fails leaves no trace
            supplied = _from_endpoints(db, endpoint_names, ks, given).merged(supplied or Supplied({}))
        names = [] if supplied and not retrievers else resolve_retrievers(db, retrievers, given.get("corpus"))
        if rerank:
            ks, given, reranked = rerank_stage(db, rerank, names=names, supplied=supplied, ks=ks, given=given)
            supplied = reranked.merged(supplied or Supplied({}))
        names += [name for name in (supplied.rankings if supplied else {}) if name not in names]
        if rerank:  # each retriever followed by its reranked list
            names = sorted(names, key=lambda n: names.index(n.removesuffix(SUFFIX)) + 0.5 * n.endswith(SUFFIX))
        # the engine version keys the engine checks kept between runs (surql/checks.surql: engine_check)
        given.update(trigger=trigger, git_commit=git_commit(), engine=db.engine_version(), **({"fresh": True} if fresh else {}),
                     **({"ingests": [to_record(i, "seval_ingest") for i in ingests]} if ingests else {}),
                     **({"store_lists": False} if not keep_lists else {}), **({"verify": True} if verify else {}),
                     floor_batches=True)  # the sweep's floors, when taken from the data: read below in batches
        if supplied:
            given["supplied"] = {**supplied.record, "names": list(supplied.rankings)}
        # runs left unfinished by a killed process or a dropped connection are invisible; clear them:
        # one process holds an embedded store, so any unfinished run there is dead; on a server, other
        # evaluators may be running, so only runs unfinished for a day are taken as dead
        # (never the runs this connection is still writing: two threads may evaluate through it at once)
        age = STALE_EMBEDDED if db.settings.is_embedded else STALE_SERVER
        with db.starting:
            db.value("RETURN fn::seval::discard_stale_runs(<duration> $age, $live)", {"age": age, "live": list(db.live_runs)})
            try:
                # what comes after the run is made ready here while the engine starts it, on one core: the report's
                # models, numpy for the intervals, and what the caller asks (`meanwhile`)
                started = db.value("RETURN fn::seval::start_run($ks, $names, $given, $label)",
                                   {"ks": ks, "names": names, "given": given, "label": label}, meanwhile=lambda: _prepare(intervals, meanwhile))
            except EngineCheckFailed as error:  # name the engine that answered wrongly
                raise EngineCheckFailed(f"{error} (engine {db.engine_version()}); no run was recorded") from None
            run, questions = started["run"], started["questions"]
            db.live_runs.add(run)
        parts = _split(questions, _batch_size(len(questions), concurrency, following=bool(started.get("follows"))), concurrency)
        calls = [("RETURN fn::seval::evaluate_questions($run, $ids, $supplied)",
                  {"run": run, "ids": part, "supplied": supplied.for_questions(part) if supplied else None})
                 for part in parts]
        done_after = list(itertools.accumulate(len(part) for part in parts))
        try:
            if started.get("floors"):  # the sweep's floors from the BM25 scores of the run's lists, which it then reads as kept
                scores = _batched(db, [("RETURN fn::seval::floor_scores($run, $ids)", {"run": run, "ids": call["ids"]})
                                       for _, call in calls], concurrency)
                db.value("RETURN fn::seval::keep_floors($run, $scores)", {"run": run, "scores": [s for batch in scores for s in batch]})
            _batched(db, calls, concurrency, (lambda n: progress(done_after[n - 1], len(questions))) if progress else None)
            if not record:
                row = db.value("RETURN fn::seval::unrecorded_run($run)", {"run": run})
                report = report_from_row(db, run, row, per_question=per_question, intervals=intervals)
                db.value("RETURN fn::seval::discard_run($run)", {"run": run})
                report = report.model_copy(update={"recorded": False})
                return with_source_means(db, report) if intervals else report
            _finish(db, run, concurrency, alongside_finish)
            if tag is not None:
                tag_run(db, run, tag, by=who())
        except BaseException:
            try:  # leave nothing of a failed run behind (a killed process leaves it unfinished: invisible)
                db.value("RETURN fn::seval::discard_run($run)", {"run": run})
            except Exception:  # the connection itself may be what failed
                log.debug("could not discard %s", run, exc_info=True)
            raise
        finally:
            db.live_runs.discard(run)
        report = load_run(db, run, per_question=per_question, intervals=intervals)
        return with_source_means(db, report) if intervals else report


def _batch_size(questions: int, concurrency: int | None, *, following: bool) -> int:
    """Questions per evaluation statement: BATCH, or in a run that follows another up to BATCH_FOLLOWING, as many as
    leave four statements a core."""
    if not following:
        return BATCH
    return max(BATCH, min(BATCH_FOLLOWING, -(-questions // (4 * (concurrency or CONCURRENCY)))))


def _split(questions: list[Any], batch: int, concurrency: int | None) -> list[list[Any]]:
    """`questions` in statements of at most `batch`, as many as every core gets alike (a multiple of `concurrency`, once
    there are more than it), of sizes one apart: statements of unequal sizes leave a core idle at the end (CISI's 76
    questions in statements of 10 ended with one of 6 beside one of 10: about 0.1 s of one core)."""
    cores = concurrency or CONCURRENCY
    count = -(-len(questions) // batch)
    if count > cores:
        count = -(-count // cores) * cores
    size, extra = divmod(len(questions), max(1, count))
    bounds = list(itertools.accumulate([0] + [size + (i < extra) for i in range(count)]))
    return [questions[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def _prepare(intervals: bool, meanwhile: Callable[[], None] | None) -> None:
    """What a run's end needs of Python, made ready while the engine starts the run: the report's models (about 7 ms),
    numpy when it has intervals (about 80 ms), and the caller's `meanwhile`."""
    prepare_report()
    if intervals:
        prepare_intervals()
    if meanwhile is not None:
        meanwhile()


def _batched(db: Database, calls: list[tuple[str, dict[str, Any]]], concurrency: int | None,
             progress: Callable[[int], None] | None = None) -> list[Any]:
    """The value of each call, `concurrency` (default CONCURRENCY) in flight, in groups between which an embedded
    store may flush; `progress(calls done)` as they finish."""
    values: list[Any] = []
    for start in range(0, len(calls), GROUP):
        done = db.query_many(calls[start : start + GROUP], concurrency=concurrency or CONCURRENCY,
                             progress=(lambda n, s=start: progress(s + n)) if progress else None)
        values += [result[-1] if result else None for result in done]
        db.flush_if_full()
    return values


def _finish(db: Database, run: Any, concurrency: int | None, alongside: Callable[[Any, list[dict]], None] | None = None) -> None:
    """Finish `run` (fn::seval::finish_run) with its means read a ranking at a time, the rankings in `concurrency`
    parts side by side (fn::seval::summary_groups): the rest of the finish runs on one core, `alongside(run, groups)`
    in this thread meanwhile."""
    configs = db.value("RETURN fn::seval::summary_configs($run)", {"run": run})
    parts = [configs[i :: concurrency or CONCURRENCY] for i in range(concurrency or CONCURRENCY)]
    read = db.query_many([("RETURN fn::seval::summary_groups($run, $configs)", {"run": run, "configs": part}) for part in parts if part],
                         concurrency=concurrency or CONCURRENCY)
    groups = [g for done in read for g in done[-1]]
    db.value("RETURN fn::seval::finish_run_with($run, $groups)", {"run": run, "groups": groups},
             meanwhile=(lambda: alongside(run, groups)) if alongside is not None else None)


def _interrupted(db: Database, run: Any) -> str:
    """What an interrupted evaluation kept: its run, if it was recorded; if not, the candidate lists its
    finished batches fetched (the run itself was discarded, or is unfinished: in no history either way)."""
    if run is not None and db.value("RETURN fn::seval::is_finished_run($run)", {"run": run}):
        return f"run {record_str(run)} was recorded (it had finished)"
    kept = 0 if run is None else db.value("RETURN fn::seval::lists_fetched_by($run)", {"run": run})
    return "no run was recorded (history is as it was)" + (
        f"; the {kept} candidate lists it had fetched stay cached, and the next run on the same inputs reads them" if kept else "")


def _from_endpoints(db: Database, names: list[str], ks: list[int], given: dict[str, Any]) -> Supplied:
    """The rankings of endpoints `names` for the run's questions, at its depth, on its corpus."""
    corpus = check_corpus(db, given.get("corpus"))
    questions = golden_rows(db, golden_set(db, given.get("golden")), split=given.get("split"))
    depth = max(given.get("depth") or 0, *ks)
    return Supplied(endpoint_rankings(db, names, questions=questions, k=depth, corpus=corpus),
                    {"endpoints": {name: db.value("RETURN fn::seval::endpoint_url($n)", {"n": name}).split("?", 1)[0] for name in names}})


def git_commit() -> str | None:
    """The commit checked out in the working directory, if it is a git repository (recorded with a run)."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
