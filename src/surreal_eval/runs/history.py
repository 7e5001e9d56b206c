"""Read the history of evaluation runs."""

from __future__ import annotations

from ..models import RunSummary
from ..store.connection import Database
from .record import run_fields

__all__ = ["history"]


def history(db: Database, *, limit: int | None = None) -> list[RunSummary]:
    """Finished runs, oldest first (the last `limit` of them when given)."""
    rows = db.value("RETURN fn::seval::run_history($limit)", {"limit": limit if limit is not None else 1_000_000})
    return [RunSummary(**run_fields(row)) for row in reversed(rows)]
