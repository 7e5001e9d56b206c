"""Writing lines to stdout or to a file, all or nothing (`runs export`, `golden export --format qrels`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Iterable, Optional

import typer

from ..errors import InputError

__all__ = ["OutputOpt", "command_lines", "write_lines"]

OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")]


def write_lines(lines: Iterable[str], output: Optional[Path]) -> int:
    """Write `lines` to stdout, or to `output` all or nothing: into a temporary file beside it, renamed
    over it once every line is written, and removed if anything fails (no partial file is left)."""
    import os
    import tempfile

    count = 0
    if output is None:
        for line in lines:  # color=True: never strip what looks like ANSI codes, ids may hold them verbatim
            typer.echo(line, color=True)
            count += 1
        return count
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".part", dir=output.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line + "\n")
                count += 1
        os.replace(temporary, output)
        temporary = None
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", source=str(output)) from None
    finally:
        if temporary is not None:
            os.unlink(temporary)
    return count


def command_lines(command: str, width: int, indent: int = 2) -> list[str]:
    """Shell command `command` (as shlex.join writes it) as lines of at most `width` characters where it can be, indented
    `indent`: one line when it fits, else broken between words with a trailing ` \\` (the shell joins them again), each
    line after the first indented two more; a word longer than a line stays whole. Pasted as printed, it runs."""
    import shlex

    words = [shlex.quote(word) for word in shlex.split(command)]
    lines, line = [], " " * indent + words[0]
    for word in words[1:]:
        if len(line) + 1 + len(word) + 2 <= width:  # room for the word and a trailing " \\"
            line += " " + word
        else:
            lines.append(line + " \\")
            line = " " * (indent + 2) + word
    return [*lines, line] if len(" ".join(words)) + indent > width else [" " * indent + " ".join(words)]
