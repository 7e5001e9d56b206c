"""Evaluate after every ingest: what to evaluate (seval_watch:current); the marker is load.bulk.record_ingest.

An ingest (one batch load of a corpus table, not each row) creates one `ingest` row; the
`evaluate_after_ingest` event (surql/evaluate.surql) then records a run inside the database, in
the same transaction, so a drop shows up in history next to the ingest that caused it.
"""

from __future__ import annotations

from typing import Any

from ..store.connection import Database
from ..grammar import check_number, check_params
from ..store.registry import resolve_retrievers

__all__ = ["set_watch", "clear_watch", "get_watch"]


def set_watch(db: Database, *, ks: list[int], retrievers: list[str] | None = None, params: dict[str, Any] | None = None) -> None:
    """Evaluate at cutoffs `ks` with `retrievers` and `params` after every ingest from now on."""
    for k in ks:
        check_number("k", k, option="every k")
    given = check_params({k: v for k, v in (params or {}).items() if v is not None})
    p = db.value("RETURN fn::seval::run_params($ks, $given)", {"ks": ks, "given": given})  # refuses bad values now
    given["golden"] = p["golden"]  # chosen now: an ingest never has to choose among golden sets
    db.query(
        "UPSERT seval_watch:current CONTENT { ks: $ks, retrievers: $names, params: $given } RETURN NONE",
        {"ks": ks, "names": resolve_retrievers(db, retrievers), "given": given},
    )


def clear_watch(db: Database) -> None:
    """Stop evaluating after ingests."""
    db.query("DELETE seval_watch:current")


def get_watch(db: Database) -> dict[str, Any] | None:
    """The watched evaluation settings {ks, retrievers, params}, or None."""
    return db.value("SELECT ks, retrievers, params FROM ONLY seval_watch:current")
