"""Read the history of evaluation runs."""

from __future__ import annotations

from ..models import RunSummary
from ..store.connection import Database, record_str
from .record import run_fields

__all__ = ["history"]


def history(db: Database, *, limit: int | None = None) -> list[RunSummary]:
    """Finished runs, oldest first (the last `limit` of them when given), each with its tags."""
    rows = db.value("RETURN fn::seval::run_history($limit)", {"limit": limit if limit is not None else 1_000_000})
    tags: dict[str, list[str]] = {}
    for tag in db.value("RETURN fn::seval::tags()"):
        tags.setdefault(record_str(tag["run"]), []).append(tag["name"])
    return [RunSummary(**run_fields(row), tags=tags.get(record_str(row["id"]), [])) for row in reversed(rows)]
