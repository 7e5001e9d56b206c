"""The `surreal-eval` command: the app with every command registered, in the order `--help` lists them,
and the entry point that turns every ending into a documented exit code."""

from __future__ import annotations

import re
import sys
import traceback
from contextlib import contextmanager
from typing import Iterator, NoReturn, Sequence

import typer
from typer.main import get_command_name
from typer._click import ClickException  # typer vendors click: its usage errors are these
from typer._click.exceptions import NoSuchOption

from ..errors import SurrealEvalError
from . import (  # noqa: F401 - registering is importing
    commands_analysis,
    commands_generate,
    commands_golden,
    commands_golden_log,
    commands_golden_promote,
    commands_history,
    commands_judge,
    commands_load,
    commands_retrievers,
    commands_runs,
    commands_supplied,
    commands_watch,
)
from .app import app, err, split_global_options, state

__all__ = ["app", "main", "run_cli", "EXIT_CODES"]

#: The order `surreal-eval --help` lists the top-level verbs in (the groups follow; 0.1's hidden spellings come last).
ORDER = ("demo", "init", "migrate", "evaluate", "score", "compare", "gate", "report", "slices", "diagnose", "tune", "split", "attach", "chunk")
app.registered_commands.sort(key=lambda info: ORDER.index(info.name or info.callback.__name__) if not info.hidden else len(ORDER))

#: Every code the process exits with (the table in docs/exit-codes.md).
EXIT_CODES = {
    0: "done",
    1: "the gate regressed, or golden dangling listed labels",
    2: "bad input: an option, argument, file, row or id",
    3: "connection or store: unreachable, refused credentials, busy store, a failed query",
    4: "an embedder, search endpoint, reranker or chat model failed",
    5: "permission denied: the signed-in user may not do this",
    6: "an evaluation after an ingest failed (the ingest is kept; its row records the error)",
    70: "internal error (a bug: the traceback is printed)",
    130: "interrupted (Ctrl-C)",
}
INTERNAL = 70
#: What an interruption says when the work it stopped said nothing of itself (errors.on_interrupt).
INTERRUPTED = ("stopped before it finished; what it had finished is kept: history shows a run only once it is finished, "
               "and a load is kept whole or not at all (one left unfinished is undone by the next load, or the next open of an embedded store)")


def _close_connections() -> None:
    connection = sys.modules.get("surreal_eval.store.connection")
    if connection is not None:
        connection._close_open_databases()


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default sys.argv[1:]); its exit code, always one of EXIT_CODES.
    Every connection is closed before it returns."""
    state.interrupted = None
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        try:
            with only_invoked(args):
                code = app(args=args, prog_name="surreal-eval", standalone_mode=False)
        finally:
            _close_connections()
    except SurrealEvalError as error:  # re-raised by --debug: the traceback, then the same code as without it
        traceback.print_exc()
        err.print(f"error: {error}", markup=False)
        return error.exit_code
    except typer.Abort:  # a prompt met the end of its input
        err.print("error: aborted: no input where a prompt needed one", markup=False)
        return 2
    except ClickException as error:  # usage errors (an unknown option, a missing argument): one line, like every error
        if type(error).__name__ != "NoArgsIsHelpError":  # that one has printed the help, which is all it says
            err.print(f"error: {usage_line(error)}", markup=False, emoji=False)
        return 2
    except SystemExit as error:  # typer's broken-pipe handling (`| head`) exits 1: the reader closed it
        return 0 if error.code in (None, 0, 1) else (error.code if error.code in EXIT_CODES else INTERNAL)
    except KeyboardInterrupt as interrupt:
        return _interrupted(interrupt)
    except BaseException:  # noqa: BLE001 - a bug: show it, and exit with its own code
        traceback.print_exc()
        return INTERNAL
    if code == 130:  # typer's exit for a KeyboardInterrupt in the command (kept by app.GlobalOptionsGroup.invoke)
        return _interrupted(state.interrupted)
    if code is None or code is True:
        return 0
    return code if isinstance(code, int) and code in EXIT_CODES else INTERNAL


def invoked_name(args: Sequence[str]) -> str | None:
    """The top-level command or group a command line invokes: its first word once the global options (and their
    values) are set aside; None when something else comes first (`--help`, `--version`, an unknown option) or nothing."""
    rest = split_global_options(list(args))[1]
    return rest[0] if rest and not rest[0].startswith("-") else None


@contextmanager
def only_invoked(args: Sequence[str]) -> Iterator[None]:
    """While a command line runs, the app holds only the command or group it invokes: typer builds every command it
    holds before it parses (57 of them, about 30 ms of every command), and this one needs only its own. A line that
    invokes none of them (`--help`, a misspelt name, which is then told the names near it) finds them all."""
    name = invoked_name(args)
    commands = [info for info in app.registered_commands if (info.name or get_command_name(info.callback.__name__)) == name]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        yield
        return
    kept = app.registered_commands, app.registered_groups
    app.registered_commands, app.registered_groups = commands, groups
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = kept


def usage_line(error: ClickException) -> str:
    """A usage error (click's, which typer shows as a box of five lines) as one line: what is wrong, the option probably
    meant, and the command whose --help lists the rest: `no such option --kk (did you mean --k?); see surreal-eval
    evaluate --help`."""
    from ..errors import one_line

    if isinstance(error, NoSuchOption):
        meant = sorted(error.possibilities or ())
        text = f"no such option {error.option_name}" + (f" (did you mean {' or '.join(meant)}?)" if meant else "")
    else:
        text = " ".join(error.format_message().split()).rstrip(".")
        text = re.sub(r"\. Did you mean (.+)\?$", r" (did you mean \1?)", text)
        text = text[:1].lower() + text[1:]
    ctx = getattr(error, "ctx", None)
    see = f"; see {ctx.command_path} --help" if ctx is not None and ctx.command_path else ""
    return one_line(f"{text}{see}")


def _interrupted(interrupt: BaseException | None) -> int:
    """Say in one line what the interrupted work kept and what it discarded (its notes, the outermost
    first: errors.on_interrupt), and return the interruption's exit code."""
    notes = getattr(interrupt, "__notes__", None) or [INTERRUPTED]
    err.print(f"interrupted: {'; '.join(reversed(notes))}", markup=False, emoji=False)
    return 130


def main() -> NoReturn:
    """The console script: run the command, flush, and end the process with `os._exit`.

    The embedded SurrealDB engine can abort the interpreter while it finalizes (exit 134, a tokio
    panic; `scripts/sdk_exit_panic.py` shows it without this package), so once the command is done
    and every connection closed, the process ends without finalizing. Once its imports are done, it collects
    garbage rarely (store.process.collect_rarely).
    """
    from ..store.process import collect_rarely
    from ..store.shutdown import end_process

    collect_rarely()
    end_process(run_cli())
