"""Ending a process that used the embedded engine with the exit code it chose.

The embedded SurrealDB engine can abort the interpreter while it finalizes (exit 134, a tokio panic;
`scripts/sdk_exit_panic.py` shows it without this package), so the console script and the pytest plugin
close every connection, flush, and end the process without finalizing.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

from .connection import _close_open_databases

__all__ = ["end_process"]


def end_process(code: int) -> NoReturn:
    """Close every open store, flush the logs and the standard streams, and end the process with `code`."""
    _close_open_databases()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)
