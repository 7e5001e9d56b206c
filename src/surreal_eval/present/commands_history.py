"""Commands over the history of runs: `runs list|export|remove|prune` and `tag add|remove|list`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from ..grammar import check_number, parse_metric
from .app import JsonOpt, RunArg, RunsArg, app, checked, err, export_app, fail, out, plain, show_rows, with_db
from .deprecated import LegacyGroup, alias_command, legacy_group, old_option, say
from .writing import OutputOpt, write_lines

OLD_BARE_METRIC = old_option("runs list", "--metric NAME", "--metric NAME@K")


@legacy_group
class TagGroup(LegacyGroup):
    """`tag`: 0.1's `tag RUN NAME` and `tag --remove NAME` still read."""

    spellings = (("tag RUN NAME", "tag add RUN NAME"), ("tag --remove NAME", "tag remove NAME"))

    def translate(self, args):  # type: ignore[no-untyped-def]
        if args and args[0].split("=", 1)[0] == "--remove":
            rest = [args[0].split("=", 1)[1]] + args[1:] if "=" in args[0] else args[1:]
            return ["remove", *rest], "tag --remove NAME", "tag remove NAME"
        if args and not args[0].startswith("-"):
            return ["add", *args], "tag RUN NAME", "tag add RUN NAME"
        return None


runs_app = typer.Typer(help="The runs in history: list them, export one as a TREC run file, remove them.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
tag_app = typer.Typer(cls=TagGroup, help="Name runs: a tag is a reference every command that takes a run takes (`gate --baseline main`).",
                      no_args_is_help=True)
app.add_typer(tag_app, name="tag")

IncludeTaggedOpt = Annotated[bool, typer.Option("--include-tagged", help="Also remove tagged runs (and their tags).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="List what would be removed; remove nothing.")]


@runs_app.command("list")
def runs_list(
    metric: Annotated[Optional[str], typer.Option("--metric", help="A metric at a cutoff, NAME@K such as recall@5 (default: recall at each run's "
                                                                   "deepest k).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Show only the last N runs.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the run trend: one line per finished run, with the k of every figure, and in its place each ingest no
    run settled: failed with its error, or pending (--json: entries of kind run, whose `shown` lists the figures
    {retriever, metric, k, value}, and of kind ingest): `runs list --metric ndcg@10 --limit 20`."""
    from ..runs.history import history as read_history
    from ..runs.history import shown, unsettled_ingests
    from . import run_tables as display

    if limit is not None:
        checked(lambda: check_number("limit", limit))
    if metric is not None and "@" not in metric:  # 0.1: a bare name meant that metric at each run's deepest k
        checked(lambda: parse_metric(f"{metric}@1"))
        say(*OLD_BARE_METRIC)
    name, at = (metric or "recall", None) if metric is None or "@" not in metric else tuple(checked(lambda: parse_metric(metric)))
    runs, ingests = with_db(lambda db: (read_history(db, limit=limit), unsettled_ingests(db, limit=limit)))
    if runs and ingests:  # ingests in the span of the runs shown, and any after them
        ingests = [i for i in ingests if i.at >= runs[0].created_at or limit is None]
    if as_json:
        entries = [(r.created_at, {"kind": "run", **r.model_dump(mode="json"), "shown": [f.model_dump() for f in shown(r, name, at)]})
                   for r in runs] + [(i.at, {"kind": "ingest", **i.model_dump(mode="json")}) for i in ingests]
        out.print_json(data=[entry for _, entry in sorted(entries, key=lambda e: e[0])])
        return
    display.show_history(out, runs, name, at, ingests)


@tag_app.command("add")
def tag_add(
    run: RunArg,
    name: Annotated[str, typer.Argument(help="The tag, e.g. main (moved here if it names another run).")],
    as_json: JsonOpt = False,
) -> None:
    """Name a run: `tag add latest main`, then `gate --baseline main`. Tagging again moves the tag."""
    from ..golden.labels import who
    from ..runs.tags import tag_run

    _show_tag(with_db(lambda db: tag_run(db, run, name, by=who())), as_json)


@tag_app.command("remove")
def tag_remove(
    name: Annotated[str, typer.Argument(help="The tag to remove (the run stays).")],
    as_json: JsonOpt = False,
) -> None:
    """Remove a tag; the run it named stays: `tag remove main`."""
    from ..runs.tags import untag as remove_tag

    _show_tag(with_db(lambda db: remove_tag(db, name)), as_json)


@tag_app.command("list")
def tag_list(as_json: JsonOpt = False) -> None:
    """Every tag and the run it names, by name: `tag list`."""
    from ..runs.tags import list_tags

    def show(tags: list) -> None:
        for t in tags:
            plain(out, f"{t.name} -> {t.run} ({f'by {t.by}, ' if t.by else ''}{t.at:%Y-%m-%d %H:%M:%S})")
        plain(out, f"{len(tags)} tag{'s' if len(tags) != 1 else ''}")

    show_rows(list_tags, as_json, show)


def _show_tag(done, as_json: bool) -> None:
    if as_json:
        out.print_json(done.model_dump_json())
    elif done.run is None:
        plain(out, f"removed tag {done.name} from {done.before}")
    elif done.before and done.before != done.run:
        plain(out, f"moved tag {done.name} from {done.before} to {done.run}")
    else:
        plain(out, f"tagged {done.run} {done.name}")


@runs_app.command("remove")
def runs_remove(
    runs: RunsArg,
    include_tagged: IncludeTaggedOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove runs with their rankings and per-question results (owner only; a tagged run only with --include-tagged):
    `runs remove previous`."""
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
    """Delete every finished run but the N newest and the tagged ones (owner only): `runs prune --keep 50 --older-than 30d`."""
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


@runs_app.command("export")
def runs_export(
    run: RunArg,
    fmt: Annotated[str, typer.Option("--format", help="Output format (trec).")] = "trec",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Only these retrievers (default: all in the run).")] = None,
    scores: Annotated[str, typer.Option(help=(
        "rank: strictly decreasing scores that keep this run's order; raw: the retrievers' own scores, a tied one "
        "lowered to the next 32-bit float where trec_eval would break the tie the other way."))] = "rank",
    output: OutputOpt = None,
) -> None:
    """Write a run's rankings as a TREC run file, qid Q0 docid rank score tag (tag = retriever): `runs export latest -o run.trec`."""
    from ..runs.export import trec_run_file

    if fmt != "trec":
        fail(ConfigError(f"unknown --format {fmt!r}: trec is supported"))
    retriever = [n.strip() for r in retriever for n in r.split(",") if n.strip()] if retriever else None  # repeated or a comma list
    exported = with_db(lambda db: trec_run_file(db, run, retrievers=retriever, scores=scores))
    count = checked(lambda: write_lines(exported.lines, output))
    if output is not None:
        plain(err, f"wrote {count} lines to {output}")
    if exported.lowered:
        plain(err, f"lowered {exported.lowered} tied raw score{'s' if exported.lowered != 1 else ''} to the next 32-bit float "
                   "below the score above it: trec_eval reads scores as 32-bit floats and breaks a tie by docid descending, "
                   "so it would have ranked those records differently from this run, and scored it differently")


alias_command(app, "history", "history", "runs list", runs_list)
alias_command(app, "untag", "untag NAME", "tag remove NAME", tag_remove)
alias_command(runs_app, "delete", "runs delete RUN...", "runs remove RUN...", runs_remove)
alias_command(export_app, "run", "export run RUN", "runs export RUN", runs_export)
