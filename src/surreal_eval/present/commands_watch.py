"""Evaluate after every ingest: `watch set|remove|drain|follow`, and what a watched load says after its commit."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import ConfigError, IngestEvaluationFailed, on_interrupt
from ..grammar import check_number, parse_ks
from .app import JsonOpt, OptionalKsOpt, app, checked, err, fail, out, plain, state, with_db
from .commands_runs import RetrieversOpt
from .deprecated import LegacyGroup, legacy_group
from .option_sets import RETRIEVAL, SCORING, Retrieval, Scoring, retrieval_params, scoring_params, with_options
from .progress import Progress

if TYPE_CHECKING:
    from ..runs.watch import DrainReport, IngestRun
    from ..store.connection import Database

__all__ = ["after_ingest", "prepare_after_ingest", "watch_set", "watch_remove", "watch_drain", "watch_follow"]

_MODES = {"--off": "remove", "--drain": "drain", "--follow": "follow"}


@legacy_group
class WatchGroup(LegacyGroup):
    """`watch`: 0.1's `watch [settings]`, `watch --off`, `watch --drain` and `watch --follow` still read."""

    spellings = (("watch [settings]", "watch set [settings]"), ("watch --off", "watch remove"), ("watch --drain", "watch drain"),
                 ("watch --follow", "watch follow"))

    def translate(self, args):  # type: ignore[no-untyped-def]
        if not args:  # `watch` alone shows the group's help (0.1 turned watching on with its defaults)
            return None
        modes = [a for a in args if a in _MODES]
        if len(modes) > 1 or (modes and any(a.startswith("--") and a.split("=", 1)[0] not in (*_MODES, "--every", "--json", "--help") for a in args)):
            fail(ConfigError("watch takes settings (--k, --retriever, --full, ...), or one of --off, --drain, --follow"))
        if modes:
            verb = _MODES[modes[0]]
            return [verb, *(a for a in args if a != modes[0])], f"watch {modes[0]}", f"watch {verb}"
        return ["set", *args], "watch [settings]", "watch set [settings]"


watch_app = typer.Typer(cls=WatchGroup, help="Evaluate after every ingest, never inside it: set what to evaluate, remove it, or evaluate what "
                                             "is pending (drain, follow).", no_args_is_help=True)
app.add_typer(watch_app, name="watch")


def _said(done: IngestRun) -> str:
    """One line: what the evaluation after ingests did (its run and how much it recomputed), or why it failed."""
    which = ", ".join(done.ingests)
    head = f"{'ingest' if len(done.ingests) == 1 else 'ingests'} {which} ({done.documents} records into {done.corpus})"
    if done.error is not None:
        return f"the evaluation after {head} failed: {done.error}"
    r = done.retrieval or {}
    how = ("every list retrieved anew" if done.fresh else
           f"{r.get('reused', 0)} lists reused, " + (f"{r['certified']} certified unchanged, " if r.get("certified") else "")
           + f"{r.get('merged', 0)} merged, {r.get('fetched', 0)} fetched"
           + (f", {r['called']} called" if r.get("called") else ""))
    copied = (f"; {r.get('rescored', 0)} questions scored again, {r.get('copied', 0)} as in {done.since['base']}"
              if done.since and done.since.get("base") and not done.fresh else "")
    line = f"the ingest recorded run {done.run} after {head}: {how}{copied}"
    if done.verification:
        v = done.verification
        line += (f"; verified: {v['agreed']} of {v['lists']} kept lists agreed with the lists fetched anew"
                 + (f" ({v['index_own']} of the {v['disagreed']} that did not were the index's own: its list differs from the exact one)"
                    if v["disagreed"] else ""))
    return line


def prepare_after_ingest() -> None:
    """What `after_ingest` needs of Python to evaluate (its modules), made ready while the engine commits a load."""
    from ..runs import evaluate, watch  # noqa: F401


def _prepare_culprits() -> None:
    """What `_show_worse` needs of Python (its modules, its models), made ready while the engine evaluates."""
    from ..analysis.fell import prepare_what_fell
    from . import analysis_tables  # noqa: F401

    prepare_what_fell()


class _ReadAlongside:
    """What `_show_worse` reads of each run of a drain, read while the run's finish is in flight (drain_ingests'
    `alongside_finish`): {run: fn::seval::rescored_results}."""

    def __init__(self, db: Database) -> None:
        self.db, self.read = db, {}

    def __call__(self, run, groups: list[dict]) -> None:
        from ..analysis.fell import read_rescored
        from ..store.connection import record_str

        self.read[record_str(run)] = read_rescored(self.db, run, groups)


def _show_drain(db: Database, report: DrainReport, *, culprits: bool = True, read: dict | None = None) -> None:
    """Each evaluation of the drain in one line, and for a run that got worse than the one it follows, what broke it
    (`read`: what `_ReadAlongside` read of the runs)."""
    for done in report.evaluated:
        plain(out if done.error is None else err, ("warning: " if done.error is not None else "") + _said(done))
        if culprits and done.run and done.since and done.since.get("base"):
            _show_worse(db, done.since["base"], done.run, (read or {}).get(done.run))


def _show_worse(db: Database, base, run: str, read: dict | None = None) -> None:
    """The questions `run` ranked worse than `base` (the run it follows), with the records that broke each (`read`:
    fn::seval::rescored_results of the run, when read already)."""
    from ..analysis.blame import culprits
    from ..analysis.fell import what_fell_after
    from ..store.connection import record_str
    from .analysis_tables import show_culprits

    # what fell and what broke it, on the questions the run scored again, without a comparison's intervals and
    # tests (`compare` gives those)
    fell, before, after = what_fell_after(db, record_str(base), run, read=read)
    if fell:
        broke = culprits(db, before, after, fell)
        worst = sorted(fell, key=lambda r: r.mean_b - r.mean_a)[0]
        plain(out, f"  worse than {record_str(base)}: {len(broke)} question rankings fell "
                   f"(largest: {worst.retriever} {worst.metric} {worst.mean_a:.3f} → {worst.mean_b:.3f})")
        show_culprits(out, broke, limit=5)


def after_ingest(ingest: str | None, db: Database | None = None) -> None:
    """After a load's commit: on an embedded store (whose engine runs no ASYNC event), evaluate what is pending
    when something is watched and say so (exit 6 when that evaluation failed: the load is kept); on a server,
    say that its event evaluates. On the load's connection `db` when given, else on a connection of its own."""
    if not ingest:
        return

    def run(db: Database) -> DrainReport | None:
        from ..runs.watch import drain_ingests

        watched = db.value("SELECT VALUE state FROM ONLY type::record($i)", {"i": ingest}) != "unwatched"
        if not watched:
            return None
        if not db.settings.is_embedded:
            plain(out, f"recorded {ingest}: the server evaluates it after the commit (its ASYNC event); "
                       "`surreal-eval runs list` shows the run, `surreal-eval watch drain` evaluates what is still pending")
            return None
        plain(err, f"evaluating after the ingest {ingest} (surreal-eval watch) ...")
        progress = Progress()
        read = _ReadAlongside(db)
        try:
            report = drain_ingests(db, progress=lambda done, total: progress("evaluating after the ingest", done, total),
                                   meanwhile=_prepare_culprits, alongside_finish=read)
        finally:
            progress.close()
        _show_drain(db, report, read=read.read)
        return report

    report = run(db) if db is not None else with_db(run)
    if report is not None and report.failed:
        fail(IngestEvaluationFailed(f"loaded, but the evaluation after it failed (recorded on {', '.join(report.failed[0].ingests)}; "
                                    f"the records are kept): {report.failed[0].error}"))


@watch_app.command("set")
@with_options(SCORING)
@with_options(RETRIEVAL, into="retrieval")
def watch_set(
    k: OptionalKsOpt = None,
    retriever: RetrieversOpt = None,
    scoring: Scoring = None,
    retrieval: Retrieval = None,
    full: Annotated[bool, typer.Option("--full", help="Retrieve every list anew after each ingest instead of recomputing only what it changed.")] = False,
    verify_every: Annotated[Optional[int], typer.Option("--verify-every", help="Make every Nth after-ingest run retrieve every list anew and record whether "
                                                                               "the kept lists agreed.")] = None,
) -> None:
    """Set what to evaluate after every ingest, never inside it (default k 1,3,5,10): each `load corpus`, or a writer's
    `CREATE seval_ingest`, is then evaluated after its commit: `watch set --k 1,5,10`."""
    from ..runs.watch import set_watch

    ks = checked(lambda: parse_ks(k or "1,3,5,10"))
    with_db(lambda db: set_watch(db, ks=ks, retrievers=retriever, full=full, verify_every=verify_every,
                                 params={**scoring_params(scoring), **retrieval_params(retrieval)}))
    how = "retrieving every list anew" if full else "recomputing only what each ingest changed"
    verified = f", every {verify_every}th run verified against lists fetched anew" if verify_every else ""
    plain(out, f"every ingest now records a run at k = {', '.join(map(str, ks))}, {how}{verified}"
               + ("" if not state.settings.is_embedded else
                  " (this store is embedded: loads evaluate after their commit; other writers' ingests wait for `surreal-eval watch drain`)"))


@watch_app.command("remove")
def watch_remove() -> None:
    """Stop evaluating after ingests (the runs stay in history): `watch remove`."""
    from ..runs.watch import clear_watch

    with_db(clear_watch)
    plain(out, "ingests no longer evaluate")


@watch_app.command("drain")
def watch_drain(as_json: JsonOpt = False) -> None:
    """Evaluate every pending ingest now, in order, then exit (0: all recorded; 6: an evaluation failed, recorded on its
    ingest): `watch drain`."""
    _drain(follow=False, every=0, as_json=as_json)


@watch_app.command("follow")
def watch_follow(
    every: Annotated[float, typer.Option("--every", help="Seconds between two looks for pending ingests.")] = 2.0,
    as_json: JsonOpt = False,
) -> None:
    """Keep evaluating pending ingests as they come, until Ctrl-C (a long-lived worker): `watch follow --every 5`."""
    checked(lambda: check_number("every", every, option="--every"))
    _drain(follow=True, every=every, as_json=as_json)


def _drain(*, follow: bool, every: float, as_json: bool) -> None:
    """`watch drain` / `watch follow`: evaluate what is pending (and, following, what comes), print each, exit 6 on a failure."""
    from ..runs.watch import drain_ingests

    failed: list = []

    def once(db: Database) -> DrainReport:
        progress = Progress()
        read = _ReadAlongside(db)
        try:
            report = drain_ingests(db, progress=lambda done, total: progress("evaluating pending ingests", done, total),
                                   meanwhile=None if as_json else _prepare_culprits, alongside_finish=None if as_json else read)
        finally:
            progress.close()
        if as_json:
            out.print(json.dumps(report.model_dump(mode="json")), markup=False, highlight=False, soft_wrap=True)
        elif not report.watched:
            plain(out, "nothing is watched: `surreal-eval watch set --k 1,5,10` first (pending ingests stay pending)")
        elif report.evaluated or not follow:
            _show_drain(db, report, read=read.read)
            if not report.evaluated:
                plain(out, "no ingest was pending")
        failed.extend(report.failed)
        return report

    def loop(db: Database) -> None:
        import threading

        stop = threading.Event()
        with on_interrupt("following stopped; every ingest it took is settled or pending again"):
            while not stop.is_set():
                once(db)
                stop.wait(every)

    with_db(loop if follow else once)
    if failed:
        fail(IngestEvaluationFailed(f"{len(failed)} evaluation{'s' if len(failed) != 1 else ''} after ingests failed, "
                                    f"each recorded on its ingest: " + "; ".join(f"{', '.join(f.ingests)}: {f.error}" for f in failed)))
