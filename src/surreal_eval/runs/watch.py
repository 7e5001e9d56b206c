"""Evaluate after every ingest, off the writer's path (surql/watch.surql).

    set_watch(db, ks=, ...)    what to evaluate after ingests (seval_watch:current)
    record_ingest(db, ...)     one ingest row, in its own transaction: all an ingest costs (load/bulk.py)
    drain_ingests(db)          evaluate every pending ingest now, one run per corpus table -> DrainReport
    follow_ingests(db, ...)    drain, wait, drain again, until stopped

A writer records an ingest and returns; nothing of the evaluation runs in its transaction, so it can
neither wait for one nor fail because of one. On a server the ASYNC event evaluates after the commit;
on an embedded store (whose engine runs no ASYNC event) the harness's own loads drain after their
commit, and applications holding the store in-process call drain_ingests. A failed evaluation leaves
its ingests `failed` with the one line the command line would print; an interrupted one leaves them
pending again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from ..errors import SurrealEvalError, on_interrupt
from ..grammar import check_number, check_params
from ..model_base import Model
from ..store.access import require_owner
from ..store.connection import Database, record_str
from ..store.record_ids import to_record
from ..store.registry import resolve_retrievers
from .record import plain_ids

__all__ = ["DrainReport", "IngestRun", "clear_watch", "drain_ingests", "follow_ingests", "get_watch", "set_watch"]

log = logging.getLogger(__name__)

#: How long an ingest may stay claimed ('running') before a drain takes it as abandoned: on an embedded
#: store one process holds the store, so any claim left is dead; on a server another drain may be at work.
STALE_EMBEDDED, STALE_SERVER = "0s", "1d"


class IngestRun(Model):
    """The evaluation made after one or more ingests into one corpus table."""

    corpus: str
    ingests: list[str]
    documents: int
    #: the run recorded (None when it failed)
    run: str | None = None
    #: the one line the command line would print for the failure (None when it was recorded)
    error: str | None = None
    #: whether it retrieved every list anew (`watch --full`, or a verifying run)
    fresh: bool = False
    #: for a verifying run (`watch --verify-every`): {lists, agreed, reused, merged, disagreed, index_own}
    verification: dict[str, Any] | None = None
    #: {lists, reused, merged, certified, fetched, called, rescored, copied} (surql/candidate_cache.surql)
    retrieval: dict[str, Any] | None = None
    #: the corpus changes the run was made after, and the run it follows (surql/incremental.surql)
    since: dict[str, Any] | None = None


class DrainReport(Model):
    """What one drain evaluated."""

    watched: bool
    evaluated: list[IngestRun] = []

    @property
    def failed(self) -> list[IngestRun]:
        return [e for e in self.evaluated if e.error is not None]


def set_watch(db: Database, *, ks: list[int], retrievers: list[str] | None = None, params: dict[str, Any] | None = None,
              full: bool = False, verify_every: int | None = None) -> None:
    """Evaluate at cutoffs `ks` with `retrievers` and `params` after every ingest from now on: incrementally
    (surql/incremental.surql) unless `full`; every `verify_every`th run retrieves every list anew and records
    whether the kept lists agreed."""
    require_owner(db, "watch changes what is evaluated after every ingest")
    for k in ks:
        check_number("k", k, option="every k")
    if verify_every is not None:
        check_number("verify_every", verify_every, option="--verify-every")
    given = check_params({k: v for k, v in (params or {}).items() if v is not None})
    p = db.value("RETURN fn::seval::run_params($ks, $given)", {"ks": ks, "given": given})  # refuses bad values now
    given["golden"] = p["golden"]  # chosen now: an ingest never has to choose among golden sets
    db.value("RETURN fn::seval::set_watch($ks, $names, $given, $full, $every)",
             {"ks": ks, "names": resolve_retrievers(db, retrievers, given.get("corpus")), "given": given, "full": full, "every": verify_every})


def clear_watch(db: Database) -> None:
    """Stop evaluating after ingests (ingests recorded from now on are `unwatched`; pending ones stay pending)."""
    require_owner(db, "watch remove changes what is evaluated after every ingest")
    db.value("RETURN fn::seval::clear_watch()")


def get_watch(db: Database) -> dict[str, Any] | None:
    """The watched evaluation settings {ks, retrievers, params, full, verify_every}, or None."""
    return db.value("RETURN fn::seval::watch_settings()")


def drain_ingests(db: Database, *, progress: Callable[[int, int], None] | None = None,
                  on_start: Callable[[str, list[str], bool], None] | None = None,
                  meanwhile: Callable[[], None] | None = None,
                  alongside_finish: Callable[[Any, list[dict]], None] | None = None) -> DrainReport:
    """Evaluate every pending ingest now, oldest first: the ingests pending for one corpus table together
    make one run that names them all. Each ends `done` with its run or `failed` with its error (recorded on
    its row, never raised: the report lists them). Owners only (an evaluator gets PermissionDenied, exit 5).
    `progress(done, total)` follows each run's questions; `on_start(corpus, ingests, fresh)` is called as
    each run starts; `meanwhile()` while each run's start is in flight, and `alongside_finish(run, groups)` while
    its finish is (runs.evaluate). Interrupted (Ctrl-C), the
    ingests not yet settled are pending again."""
    from .evaluate import evaluate

    require_owner(db, "watch drain records the state of each ingest")
    watch = db.value("RETURN fn::seval::current_watch()")
    if watch is None:
        return DrainReport(watched=False)
    stale = STALE_EMBEDDED if db.settings.is_embedded else STALE_SERVER
    claimed = db.value("RETURN fn::seval::claim_ingests(<duration> $stale)", {"stale": stale}) or []
    groups: dict[str, list[dict]] = {}
    for row in sorted(claimed, key=lambda r: r["at"]):
        groups.setdefault(row["corpus"], []).append(row)
    unsettled = [row["id"] for row in claimed]
    report = DrainReport(watched=True)

    def release() -> str | None:
        if not unsettled:
            return None
        db.value("RETURN fn::seval::release_ingests($ids)", {"ids": unsettled})
        one = len(unsettled) == 1
        return (f"{len(unsettled)} ingest{'' if one else 's'} not yet evaluated {'is' if one else 'are'} pending again "
                f"(surreal-eval watch drain takes {'it' if one else 'them'})")

    with on_interrupt(release):
        for corpus, rows in groups.items():
            ids = [row["id"] for row in rows]
            turn = db.value("RETURN fn::seval::watch_turn($w)", {"w": watch})
            names = [record_str(i) for i in ids]
            if on_start:
                on_start(corpus, names, turn["fresh"])
            done = IngestRun(corpus=corpus, ingests=names, documents=sum(r.get("documents") or 0 for r in rows), fresh=turn["fresh"])
            try:
                run = evaluate(db, ks=watch["ks"], retrievers=watch["retrievers"],
                               params={**watch.get("params", {}), "corpus": corpus},
                               label=db.value("RETURN fn::seval::ingest_label($rows, $c)", {"rows": rows, "c": corpus}),
                               trigger="ingest", ingests=ids, fresh=turn["fresh"], verify=turn["verify"],
                               intervals=False, progress=progress, meanwhile=meanwhile, alongside_finish=alongside_finish)
            except SurrealEvalError as error:  # recorded on the ingests: the load that made them stays
                done.error = str(error)
                db.value("RETURN fn::seval::settle_ingests($ids, NONE, $error)", {"ids": ids, "error": done.error})
            else:
                done.run, done.retrieval = run.run, run.retrieval
                row = db.value("RETURN fn::seval::run_origin($r)", {"r": to_record(run.run, "seval_run")}) or {}
                done.since, done.verification = plain_ids(row.get("since")), row.get("verification")
                db.value("RETURN fn::seval::settle_ingests($ids, $run, NONE)", {"ids": ids, "run": to_record(run.run, "seval_run")})
            unsettled[:] = [i for i in unsettled if i not in ids]
            report.evaluated.append(done)
    return report


def follow_ingests(db: Database, *, every: float = 2.0, stop: threading.Event | None = None,
                   on_report: Callable[[DrainReport], None] | None = None, **drain: Any) -> None:
    """Drain (drain_ingests), wait `every` seconds, and again, until `stop` is set (or forever). Each drain
    that evaluated something is passed to `on_report`."""
    stop = stop or threading.Event()
    while not stop.is_set():
        report = drain_ingests(db, **drain)
        if report.evaluated and on_report:
            on_report(report)
        stop.wait(every)
