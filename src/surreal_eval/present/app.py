"""The CLI's core: the typer app and its groups, the global options, and how library errors become
one line on stderr and an exit code (`checked`). The commands live in the commands_* modules beside it."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Callable, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from typer.core import TyperGroup

from ..errors import SurrealEvalError
from ..store.defaults import DEFAULT_ANALYZER, DEFAULT_URL

if TYPE_CHECKING:
    from ..store.connection import Database
    from ..store.settings import Settings

#: The global options that take a value, and the one flag: accepted before or after the command name.
GLOBAL_VALUED = ("--url", "--ns", "--db", "--user", "--pass", "--access")
GLOBAL_FLAGS = ("--debug",)


def hoist_global_options(args: list[str]) -> list[str]:
    """`args` with the global options (wherever they stand, up to a `--`) moved before the command."""
    hoisted, rest = split_global_options(args)
    return hoisted + rest


def split_global_options(args: list[str]) -> tuple[list[str], list[str]]:
    """`args` as (the global options with their values, wherever they stand up to a `--`; everything else, in order)."""
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        name = arg.split("=", 1)[0]
        if arg in GLOBAL_FLAGS:
            hoisted.append(arg)
        elif name in GLOBAL_VALUED and "=" in arg:
            hoisted.append(arg)
        elif arg in GLOBAL_VALUED and i + 1 < len(args):
            hoisted.extend(args[i:i + 2])
            i += 1
        else:
            rest.append(arg)
        i += 1
    return hoisted, rest


class GlobalOptionsGroup(TyperGroup):
    """The top-level group: the connection flags and --debug may follow the command name too."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        return super().parse_args(ctx, hoist_global_options(list(args)))

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:  # typer turns it into a bare exit 130: keep it for its notes (cli.run_cli)
            state.interrupted = interrupt
            raise


app = typer.Typer(
    cls=GlobalOptionsGroup,
    help="Retrieval evaluation that lives inside SurrealDB.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
load_app = typer.Typer(help="Load a corpus or a golden set from a file.", no_args_is_help=True)
app.add_typer(load_app, name="load")
export_app = typer.Typer(help="0.1's export commands: now `runs export` and `golden export --format qrels`.", no_args_is_help=True)
app.add_typer(export_app, name="export", hidden=True)

#: the width tables and text are fitted to when neither a terminal nor COLUMNS says (piped, redirected)
PIPED_WIDTH = 120


def output_width(environ: Mapping[str, str], terminal: bool) -> Optional[int]:
    """The width output is fitted to: COLUMNS when it is set to a positive number, else the terminal's (None: rich
    asks the terminal), else PIPED_WIDTH."""
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if terminal else PIPED_WIDTH


# emoji=False: an id such as `x:smile:y` from the data is printed as written, never as an emoji
out = Console(highlight=False, emoji=False, width=output_width(os.environ, sys.stdout.isatty()))
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)
T = TypeVar("T")


class State:
    settings: Settings
    debug: bool = False
    #: the interruption (Ctrl-C) that ended the command, with the notes of what it kept (errors.on_interrupt)
    interrupted: Optional[KeyboardInterrupt] = None


state = State()


def plain(console: Console, *objects: object, **options: object) -> None:
    """Print text that carries data (ids, paths, labels) literally: no markup, no emoji."""
    console.print(*objects, markup=False, emoji=False, **options)  # type: ignore[arg-type]


def fail(error: SurrealEvalError) -> NoReturn:
    """Print `error` as one line on stderr and exit with its code (re-raise it with --debug: the
    entry point prints the traceback and exits with the same code)."""
    if state.debug:
        raise error
    err.print(f"error: {error}", markup=False, emoji=False)
    raise typer.Exit(error.exit_code)


def checked(action: Callable[[], T]) -> T:
    """`action()`, a library call, with our errors turned into one line on stderr and their exit code."""
    try:
        return action()
    except SurrealEvalError as error:
        fail(error)


def table_name(name: Optional[str], what: str) -> Optional[str]:
    """A table name given on the command line, refused unless it is an identifier (None passes)."""
    from ..store.schema import identifier

    return None if name is None else checked(lambda: identifier(name, what=what))


def with_db(action: Callable[[Database], T]) -> T:
    from ..store.opening import connect

    def call() -> T:
        db = connect(state.settings)
        try:
            return action(db)
        except SurrealEvalError:  # refused: a store this command made (init, load on a new path) is not left behind
            db.close()
            if db.new_store is not None:
                db.new_store.remove()
            raise
        finally:
            db.close()

    return checked(call)


def show_rows(read: Callable[[Database], T], as_json: bool, show: Callable[[T], None], *,
              rows: Callable[[T], list] = lambda read: read) -> None:  # type: ignore[assignment,return-value]
    """Read from the store and print it: with --json the rows (pydantic models: what `read` returned, or `rows` of it)
    as JSON, else through `show`."""
    result = with_db(read)
    if as_json:
        out.print_json(data=[row.model_dump(mode="json") for row in rows(result)])
    else:
        show(result)


def _print_version(asked: bool) -> None:
    """`--version`: print the package's version and end the process with 0, before any command or connection."""
    if asked:
        from .. import __version__

        out.print(f"surreal-eval {__version__}", markup=False)
        raise typer.Exit(0)


#: The commands that may make a new store on disk (they import the harness into it); every other command refuses
#: a store path that does not exist or an empty folder, in one line, and makes nothing (store.local_store).
CREATING = frozenset({"init", "load"})


@app.callback()
def main(
    ctx: typer.Context,
    url: Annotated[str, typer.Option(envvar="SURREAL_EVAL_URL", help="mem://, surrealkv://PATH, ws://HOST:PORT or http://HOST:PORT.")] = DEFAULT_URL,
    ns: Annotated[str, typer.Option("--ns", envvar="SURREAL_EVAL_NS", help="Namespace.")] = "surreal_eval",
    db: Annotated[str, typer.Option("--db", envvar="SURREAL_EVAL_DB", help="Database.")] = "surreal_eval",
    user: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_USER", help="User to sign in as (servers).")] = None,
    password: Annotated[Optional[str], typer.Option("--pass", envvar="SURREAL_EVAL_PASS", help="Password; prefer the SURREAL_EVAL_PASS "
                                                                                               "variable.", show_default=False)] = None,
    access: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_ACCESS", help="Sign in through this record access (evaluator) as --user.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logging.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, expose_value=False,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Retrieval evaluation that lives inside SurrealDB. These options may also follow the command name."""
    from pydantic import SecretStr

    from ..store.settings import Settings

    state.settings = Settings(
        url=url, namespace=ns, database=db, user=user or None,
        password=SecretStr(password) if password else None, access=access or None,
        create=ctx.invoked_subcommand in CREATING,
    )
    state.debug = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
AnalyzerOpt = Annotated[Optional[str], typer.Option(
    "--analyzer", help=f"Analyzer of the BM25 index: seval_english, seval_english_stop (stopwords removed) or one you defined"
                       f" (default: the index's own, {DEFAULT_ANALYZER} for a new one).")]
GoldenOpt = Annotated[Optional[str], typer.Option(
    "--golden", help="The golden set: seval_question (loaded from files) or a table attached with `golden attach` "
                     "(default: the one holding questions).")]
DanglingOpt = Annotated[Optional[str], typer.Option(
    "--dangling-labels", help="A label whose record is gone: stop (the default: the run is refused, naming it) or miss "
                              "(count it as a miss; the run records how many).")]
LevelOpt = Annotated[Optional[int], typer.Option(
    "--relevance-level", help="Binary metrics count a label as relevant only from this grade (trec_eval -l); nDCG keeps the grades.")]
JudgmentsOpt = Annotated[Optional[str], typer.Option(
    "--judgments", help="Score on human judgments only (human, the default) or on human plus the model's from `golden judge` "
                        "(human+model; the run records which, and its golden fingerprint differs).")]

# The shared options and arguments of the grammar (docs/cli-grammar.md): one definition each, which
# tests/test_grammar.py requires every command to use.
KS_HELP = "Cutoffs, a comma list such as 1,3,5,10"
KsOpt = Annotated[str, typer.Option("--k", help=f"{KS_HELP}.")]
OptionalKsOpt = Annotated[Optional[str], typer.Option("--k", help=f"{KS_HELP}.")]
DeepestKOpt = Annotated[str, typer.Option("--k", help=f"{KS_HELP}; the deepest is the one used.")]
METRIC_HELP = "A metric at a cutoff, NAME@K such as recall@5"
MetricOpt = Annotated[Optional[str], typer.Option("--metric", help=f"{METRIC_HELP}.")]
MetricsOpt = Annotated[Optional[list[str]], typer.Option("--metric", help=f"{METRIC_HELP} (repeatable).")]
CorpusOpt = Annotated[Optional[str], typer.Option(
    "--corpus", help="The corpus table (default: the one holding records; seval_article for a new one).")]
RUN_HELP = "seval_run:ID, ID, latest (the newest finished run), previous (the one before it) or a tag"
RunArg = Annotated[str, typer.Argument(help=f"The run: {RUN_HELP}.", show_default=True)]
RunsArg = Annotated[list[str], typer.Argument(help=f"Runs: {RUN_HELP}.")]
OptionalRunsArg = Annotated[Optional[list[str]], typer.Argument(help=f"Runs: {RUN_HELP}.", show_default=False)]
TagOpt = Annotated[Optional[str], typer.Option(
    "--tag", help="Name the new run: tag it NAME (moved from the run it named), a reference every command that takes a run takes.")]
NoteOpt = Annotated[Optional[str], typer.Option("--note", help="Free text kept with the run in history (not a reference: --tag names a run).")]
NoRecordOpt = Annotated[bool, typer.Option("--no-record", help="Score and print, but record no run (history stays as it was).")]
