"""0.1's spellings of commands and options, kept for one release as hidden aliases (docs/upgrading.md).

Each old spelling still works and prints one line on stderr naming the new form. `OLD_SPELLINGS` lists
them all, as (old, new): the grammar test requires every hidden command and option to be one of them,
and tests/test_deprecated.py runs each once.
"""

from __future__ import annotations

import functools
import typing
from typing import Annotated, Callable, Optional, TypeVar

import typer
from typer.core import TyperGroup

from ..errors import ConfigError
from .app import err, fail

__all__ = ["REMOVED_IN", "OLD_SPELLINGS", "LabelOpt", "LegacyGroup", "say", "alias_command", "legacy_group", "old_label", "old_option"]

#: the release in which the old spellings stop working
REMOVED_IN = "0.3.0"
#: every old spelling kept, as (old, new), in the order they were registered
OLD_SPELLINGS: list[tuple[str, str]] = []
F = TypeVar("F", bound=Callable[..., object])
#: 0.1's `--label TEXT` of evaluate and score (old_label reads it)
LabelOpt = Annotated[Optional[str], typer.Option("--label", hidden=True, help="0.1: now --tag NAME or --note TEXT.")]


def say(old: str, new: str) -> None:
    """Print the one deprecation line for `old`, now spelled `new`."""
    err.print(f"deprecated: `{old}` is now `{new}` (the old spelling goes in {REMOVED_IN})", markup=False, emoji=False)


def alias_command(parent: typer.Typer, name: str, old: str, new: str, command: F) -> None:
    """Register `command` again as the hidden command `name` of `parent` (spelled `old` in full), which says
    it is now `new` and then runs it."""
    OLD_SPELLINGS.append((old, new))

    @functools.wraps(command)
    def deprecated(*args, **kwargs):  # type: ignore[no-untyped-def]
        say(old, new)
        return command(*args, **kwargs)

    # the annotations resolved where `command` was written (they are strings there, and this module's names differ)
    deprecated.__annotations__ = typing.get_type_hints(command, include_extras=True)
    parent.command(name, hidden=True)(deprecated)


def old_option(command: str, old: str, new: str) -> tuple[str, str]:
    """Record that `command`'s option `old` is now `new` (the command keeps `old` as a hidden option and
    calls `say` when it is given); returns the pair to pass to `say`."""
    pair = (f"{command} {old}", f"{command} {new}")
    OLD_SPELLINGS.append(pair)
    return pair


class LegacyGroup(TyperGroup):
    """A group that still reads 0.1's form of itself, a command with options (`watch --drain`, `tag RUN NAME`):
    `translate` turns such arguments into the group's form, and the group says so before running it."""

    #: (the 0.1 form, the 0.2 form) of each translation, for OLD_SPELLINGS (set by subclasses)
    spellings: tuple[tuple[str, str], ...] = ()

    def translate(self, args: list[str]) -> tuple[list[str], str, str] | None:
        """The group's form of 0.1's `args` with the old and new spelling to say, or None when `args` are already
        the group's (a subcommand first, or a request for help)."""
        raise NotImplementedError

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        if not (args and (args[0] in self.commands or args[0] in ("--help", "-h"))):
            translated = self.translate(list(args))
            if translated is not None:
                args, old, new = translated
                say(old, new)
        return super().parse_args(ctx, args)


def legacy_group(group: type[LegacyGroup]) -> type[LegacyGroup]:
    """Class decorator: list `group`'s translations among OLD_SPELLINGS."""
    OLD_SPELLINGS.extend(group.spellings)
    return group


def old_label(command: str, label: Optional[str], tag: Optional[str], note: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """(tag, note) with 0.1's `--label TEXT` read as the new spellings: a tag when TEXT can be one (the run is then
    named by it) and the note either way; one deprecation line says which."""
    if label is None:
        return tag, note
    from ..runs.tags import can_be_tag

    if tag is not None or note is not None:
        fail(ConfigError("--label is 0.1's spelling of --tag and --note: give those alone"))
    if can_be_tag(label):
        say(f"{command} --label {label}", f"{command} --tag {label} --note {label}")
        return label, label
    say(f"{command} --label TEXT", f"{command} --note TEXT")
    return None, label
