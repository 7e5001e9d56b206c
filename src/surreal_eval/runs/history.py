"""Read the history of evaluation runs."""

from __future__ import annotations

from ..store.connection import Database, record_str
from .record import ordered, run_metrics, run_order
from ..models import MetricRow, RunSummary

__all__ = ["history"]


def history(db: Database, *, limit: int | None = None) -> list[RunSummary]:
    """Finished runs, oldest first (the last `limit` of them when given)."""
    rows = db.value("RETURN fn::run_history($limit)", {"limit": limit if limit is not None else 1_000_000})
    runs = []
    for row in reversed(rows):
        order = run_order(row["retrievers"])
        names = run_metrics(row)
        runs.append(
            RunSummary(
                run=record_str(row["id"]),
                created_at=row["created_at"],
                label=row.get("label"),
                questions=row["questions"],
                ks=row["ks"],
                retrievers=row["retrievers"],
                results=[MetricRow(**m, scores=ordered(m["metrics"], names)) for m in sorted(row["means"], key=order)],
                params=row.get("params") or {},
                golden=row.get("golden"),
                corpus=row.get("corpus"),
                git_commit=row.get("git_commit"),
                trigger=row.get("trigger"),
                tuning=row.get("tuning"),
            )
        )
    return runs
