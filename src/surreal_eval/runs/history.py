"""Read the history of evaluation runs, and the one figure per retriever that `history` shows of each.

    history(db, limit=)         finished runs, oldest first -> [RunSummary]
    unsettled_ingests(db)       ingests no run settled (pending, running, failed), oldest first -> [IngestEntry]
    shown(run, metric, k=None)  metric@k per retriever of one run, each with its k -> [ShownFigure]
"""

from __future__ import annotations

from datetime import datetime


from ..model_base import Model
from ..models import RunSummary
from ..store.connection import Database, record_str
from .record import run_fields

__all__ = ["IngestEntry", "ShownFigure", "history", "shown", "unsettled_ingests"]


class ShownFigure(Model):
    """One retriever's mean of `metric`@`k` in one run (None: the run did not measure it)."""

    retriever: str
    metric: str
    k: int
    value: float | None


def history(db: Database, *, limit: int | None = None) -> list[RunSummary]:
    """Finished runs, oldest first (the last `limit` of them when given), each with its tags."""
    rows = db.value("RETURN fn::seval::run_history($limit)", {"limit": limit if limit is not None else 1_000_000})
    tags: dict[str, list[str]] = {}
    for tag in db.value("RETURN fn::seval::tags()"):
        tags.setdefault(record_str(tag["run"]), []).append(tag["name"])
    return [RunSummary(**run_fields(row), tags=tags.get(record_str(row["id"]), [])) for row in reversed(rows)]


def shown(run: RunSummary, metric: str, k: int | None = None) -> list[ShownFigure]:
    """`metric`@`k` of each retriever of `run`, in report order; without `k`, at the run's deepest k (runs
    measured at different depths give figures at different k: each figure names its own)."""
    at = k if k is not None else max(run.ks)
    return [ShownFigure(retriever=name, metric=metric, k=at, value=run.mean(name, metric, at)) for name in run.retrievers]


class IngestEntry(Model):
    """An ingest no run settled: `pending` (its evaluation has not run: `surreal-eval watch drain`), `running`, or
    `failed` with `error`, the one line the command line printed (surql/watch.surql)."""

    ingest: str
    at: datetime
    corpus: str
    documents: int
    source: str | None = None
    state: str
    error: str | None = None


def unsettled_ingests(db: Database, *, limit: int | None = None) -> list[IngestEntry]:
    """The ingests no run settled (pending, running or failed), oldest first (the last `limit` of them when given)."""
    rows = db.value("RETURN fn::seval::unsettled_ingests($limit)", {"limit": limit if limit is not None else 1_000_000})
    return [IngestEntry(ingest=record_str(r["id"]), **{k: v for k, v in r.items() if k != "id" and v is not None}) for r in reversed(rows)]
