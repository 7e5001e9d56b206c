"""The `surreal-eval` command: the app with every command registered, in the order `--help` lists them."""

from __future__ import annotations

from . import commands_analysis, commands_load, commands_runs  # noqa: F401 - registering is importing
from .app import app

__all__ = ["app"]

#: The order `surreal-eval --help` lists the commands in (the groups, load and export, follow).
ORDER = ("demo", "init", "evaluate", "history", "retrievers", "diagnose", "chunk", "attach", "watch", "split", "tune", "grant",
         "compare", "gate", "report", "slices")
app.registered_commands.sort(key=lambda info: ORDER.index(info.callback.__name__))
