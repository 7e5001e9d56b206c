"""Write docs/cli.md, the CLI reference, from the typer app itself: `python scripts/cli_reference.py`.

tests/test_docs.py fails when the committed page differs from what this generates, so the reference
never drifts from the code."""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

INTRO = """\
Generated from the typer app by `python scripts/cli_reference.py`; `tests/test_docs.py` fails when
this page differs from what the code generates. The `console` blocks are usage synopses, not examples
(not run). 0.1's spellings, which still work until 0.3.0, are on [Upgrading from 0.1](upgrading.md).
Connection options (`--url`, `--ns`, `--db`, `--user`, `--pass`, `--access`, `--debug`) go
before or after the command name; exit codes are on [Exit codes and bad input](exit-codes.md).
"""


def reference() -> str:
    """The CLI reference page, as markdown."""
    import click
    import typer
    from typer.cli import get_docs_for_click

    from surreal_eval.present.cli import app

    command = _visible(typer.main.get_command(app))
    text = get_docs_for_click(obj=command, ctx=click.Context(command, info_name="surreal-eval"),
                              name="surreal-eval", title="CLI reference")
    title, rest = text.split("\n", 1)
    return f"{title}\n\n{INTRO}{rest.rstrip()}\n"


def _visible(command):
    """`command` without its hidden commands and options (0.1's spellings, kept for one release: docs/upgrading.md)."""
    command.params = [p for p in command.params if not getattr(p, "hidden", False)]
    if hasattr(command, "commands"):
        command.commands = {name: _visible(sub) for name, sub in command.commands.items() if not getattr(sub, "hidden", False)}
    return command


if __name__ == "__main__":
    PAGE.write_text(reference(), encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE}\n")
