"""Commands over the history of runs: history, tag, untag, and `runs delete` / `runs prune`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..grammar import check_number, parse_metric
from .app import JsonOpt, app, checked, out, plain, with_db

runs_app = typer.Typer(help="Remove runs from history: delete named runs, or prune all but the newest.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

IncludeTaggedOpt = Annotated[bool, typer.Option("--include-tagged", help="Also remove tagged runs (and their tags).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="List what would be removed; remove nothing.")]


@app.command()
def history(
    metric: Annotated[str, typer.Option(help="Metric to show per retriever, e.g. recall@5 (default: recall at each run's deepest k).")] = "recall",
    limit: Annotated[Optional[int], typer.Option(help="Show only the last N runs.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the run trend: one line per finished run, with the k of every figure, and in its place each ingest no
    run settled: failed with its error, or pending (--json: entries of kind run, whose `shown` lists the figures
    {retriever, metric, k, value}, and of kind ingest)."""
    from . import run_tables as display
    from ..runs.history import history as read_history, shown, unsettled_ingests

    if limit is not None:
        checked(lambda: check_number("limit", limit))
    name, at = (metric, None) if "@" not in metric else tuple(checked(lambda: parse_metric(metric)))
    if "@" not in metric:
        checked(lambda: parse_metric(f"{metric}@1"))
    runs, ingests = with_db(lambda db: (read_history(db, limit=limit), unsettled_ingests(db, limit=limit)))
    if runs and ingests:  # ingests in the span of the runs shown, and any after them
        ingests = [i for i in ingests if i.at >= runs[0].created_at or limit is None]
    if as_json:
        entries = [(r.created_at, {"kind": "run", **r.model_dump(mode="json"), "shown": [f.model_dump() for f in shown(r, name, at)]})
                   for r in runs] + [(i.at, {"kind": "ingest", **i.model_dump(mode="json")}) for i in ingests]
        out.print_json(data=[entry for _, entry in sorted(entries, key=lambda e: e[0])])
        return
    display.show_history(out, runs, name, at, ingests)


@app.command()
def tag(
    run: Annotated[Optional[str], typer.Argument(help="The run: seval_run:ID, ID, latest, previous or a tag.")] = None,
    name: Annotated[Optional[str], typer.Argument(help="The tag, e.g. main (moved here if it names another run).")] = None,
    remove: Annotated[Optional[str], typer.Option("--remove", help="Remove this tag instead.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Name a run (`tag latest main`) so every command that takes a run takes the name: `gate --baseline main`."""
    from ..errors import ConfigError
    from ..runs.tags import tag_run, untag as remove_tag
    from ..load.labels import who
    from .app import fail

    if remove is not None:
        if run is not None:
            fail(ConfigError("tag --remove NAME takes no run"))
        done = with_db(lambda db: remove_tag(db, remove))
    elif run is None or name is None:
        fail(ConfigError("tag needs a run and a name: surreal-eval tag RUN NAME (or tag --remove NAME)"))
    else:
        done = with_db(lambda db: tag_run(db, run, name, by=who()))
    _show_tag(done, as_json)


@app.command()
def untag(
    name: Annotated[str, typer.Argument(help="The tag to remove.")],
    as_json: JsonOpt = False,
) -> None:
    """Remove a tag (the run stays)."""
    from ..runs.tags import untag as remove_tag

    _show_tag(with_db(lambda db: remove_tag(db, name)), as_json)


def _show_tag(done, as_json: bool) -> None:
    if as_json:
        out.print_json(done.model_dump_json())
    elif done.run is None:
        plain(out, f"removed tag {done.name} from {done.before}")
    elif done.before and done.before != done.run:
        plain(out, f"moved tag {done.name} from {done.before} to {done.run}")
    else:
        plain(out, f"tagged {done.run} {done.name}")


@runs_app.command("delete")
def runs_delete(
    runs: Annotated[list[str], typer.Argument(help="Runs to delete: seval_run:ID, ID, latest, previous or a tag.")],
    include_tagged: IncludeTaggedOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete runs with their rankings and per-question results (owner only; a tagged run only with --include-tagged)."""
    from ..runs.tags import delete_runs

    _show_removed(with_db(lambda db: delete_runs(db, runs, include_tagged=include_tagged, dry_run=dry_run)), dry_run, as_json)


@runs_app.command("prune")
def runs_prune(
    keep: Annotated[int, typer.Option("--keep", help="Keep this many of the newest finished runs (all golden sets together).")],
    older_than: Annotated[Optional[str], typer.Option("--older-than", help="Only remove runs older than this: 30d, 12h, 2w.")] = None,
    include_tagged: IncludeTaggedOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete every finished run but the N newest and the tagged ones (owner only)."""
    from ..runs.tags import prune_runs

    _show_removed(with_db(lambda db: prune_runs(db, keep=keep, older_than=older_than, include_tagged=include_tagged,
                                                 dry_run=dry_run)), dry_run, as_json)


def _show_removed(removed, dry_run: bool, as_json: bool) -> None:
    if as_json:
        out.print_json(data=[r.model_dump(mode="json") for r in removed])
        return
    verb = "would remove" if dry_run else "removed"
    for r in removed:
        what = f" with {r.rankings} rankings" if r.rankings is not None else ""
        extra = (f" ({r.label})" if r.label else "") + (f", tags {', '.join(r.tags)}" if r.tags else "")
        plain(out, f"{verb} {r.run} of {r.created_at:%Y-%m-%d %H:%M:%S}{extra}{what}")
    plain(out, f"{verb} {len(removed)} run{'s' if len(removed) != 1 else ''}")
