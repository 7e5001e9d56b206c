"""Defaults the CLI needs before it parses anything, kept free of heavy imports (startup time)."""

from __future__ import annotations

__all__ = ["DEFAULT_ANALYZER", "DEFAULT_URL"]

#: The store every command uses unless told otherwise: embedded, persistent, in the working directory.
DEFAULT_URL = "surrealkv://surreal-eval.db"
#: The analyzer of a new corpus table's BM25 index (store/analyzers.py). english_stop: on CISI its BM25
#: floor is cheaper than english's at no loss of quality (docs/own-database.md, "Analyzers"; benchmarks/cost_floor.py).
DEFAULT_ANALYZER = "seval_english_stop"
