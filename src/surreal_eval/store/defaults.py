"""Defaults the CLI needs before it parses anything, kept free of heavy imports (startup time)."""

from __future__ import annotations

__all__ = ["DEFAULT_URL"]

#: The store every command uses unless told otherwise: embedded, persistent, in the working directory.
DEFAULT_URL = "surrealkv://surreal-eval.db"
