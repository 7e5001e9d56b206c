"""Writing lines to stdout or to a file, all or nothing (`runs export`, `golden export --format qrels`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Iterable, Optional

import typer

from ..errors import InputError

__all__ = ["OutputOpt", "write_lines"]

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
