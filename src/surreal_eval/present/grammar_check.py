"""The rules of the command line's grammar (docs/cli-grammar.md), checked on the click command typer builds:
`violations(command)` lists every visible command, option or argument that breaks one (tests/test_grammar.py)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

from .app import KS_HELP, METRIC_HELP, RUN_HELP

__all__ = ["violations", "walk", "RUN_OPTIONS", "UNDO_WORDS"]

#: the only options that take a run: gate's two runs, and a run as the source of something else
RUN_OPTIONS = {"--baseline", "--candidate", "--from-run"}
#: words that undo something but are not `remove`, the one verb for undoing
UNDO_WORDS = {"untag", "detach", "delete", "revoke", "off", "unset", "drop", "unregister", "rm", "del"}
#: options that name a table of the corpus in other words than --corpus (--into names the chunk table chunk creates)
CORPUS_WORDS = {"--table", "--from", "--corpus-table", "--docs", "--documents"}
#: options that would name a run in a second way beside tags
NAME_WORDS = {"--label", "--name", "--run", "--runs"}


def walk(command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """Every visible command under `command` (a click group or command) with its path of names; groups too."""
    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        yield path, command
        for name, sub in subcommands.items():
            if not getattr(sub, "hidden", False):
                yield from walk(sub, (*path, name))
    else:
        yield path, command


def _is_argument(param) -> bool:  # type: ignore[no-untyped-def]
    # typer's own classes (its vendored click's Argument is not the click package's)
    return type(param).__name__ in ("TyperArgument", "Argument")


def _annotation(param):  # type: ignore[no-untyped-def]
    """The Python type an option was declared with (Optional[X] as X)."""
    annotation = param.type_descriptor.annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0] if typing.get_origin(annotation) is typing.Union and len(args) == 1 else annotation


def violations(root) -> list[str]:  # type: ignore[no-untyped-def]
    """What breaks the grammar in the app `root` (the click command of the typer app): one line per violation."""
    found: list[str] = []
    names: dict[tuple[str, ...], set[str]] = {}
    for path, command in walk(root):
        where = " ".join(path) or "surreal-eval"
        if getattr(command, "commands", None) is not None:
            names[path] = {n for n, c in command.commands.items() if not getattr(c, "hidden", False)}
            continue
        if path and f"`{' '.join(path)}" not in (command.help or "") and f"`{path[-1]}" not in (command.help or ""):
            found.append(f"{where}: its help shows no example (`{where} ...`)")
        if path and path[-1] in UNDO_WORDS:
            found.append(f"{where}: undoing is `remove`, not `{path[-1]}`")
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            help_text = getattr(param, "help", None) or ""
            if _is_argument(param):
                if param.name.startswith(("run", "more")) and RUN_HELP not in help_text:
                    found.append(f"{where} {param.name.upper()}: a run argument takes every run reference ({RUN_HELP})")
                continue
            flags = set(param.opts) | set(param.secondary_opts)
            for flag in flags:
                if flag in UNDO_WORDS or flag.lstrip("-") in UNDO_WORDS:
                    found.append(f"{where} {flag}: undoing is the command `remove`, not an option")
                if flag in CORPUS_WORDS:
                    found.append(f"{where} {flag}: the corpus table is always --corpus")
                if flag in NAME_WORDS:
                    found.append(f"{where} {flag}: a run is named by a tag (--tag) and given as an argument, RUN")
                if RUN_HELP in help_text and flag not in RUN_OPTIONS:
                    found.append(f"{where} {flag}: a run is an argument where the command is about a run ({', '.join(sorted(RUN_OPTIONS))} "
                                 "excepted)")
            if "--k" in flags and (_annotation(param) is not str or param.multiple or not help_text.startswith(KS_HELP)):
                found.append(f"{where} --k: cutoffs are always a comma list ({KS_HELP})")
            if "--metric" in flags and not help_text.startswith(METRIC_HELP):
                found.append(f"{where} --metric: a metric is always NAME@K ({METRIC_HELP})")
            if "--corpus" in flags and "corpus table" not in help_text:
                found.append(f"{where} --corpus: the corpus option is the shared one (app.CorpusOpt)")
    for path, children in names.items():
        for name in children:
            if f"{name}s" in children or (name.endswith("s") and name[:-1] in children):
                found.append(f"{' '.join((*path, name))}: one command per noun ({name} and its plural)")
    return found
