"""An ingest, as a load records it: one seval_ingest row, written after the load's commit in a transaction of its
own, naming the records the load added and changed (surql/watch.surql). Nothing is evaluated here: on a server
the row's ASYNC event evaluates after the commit; on an embedded store runs.watch.drain_ingests does."""

from __future__ import annotations

from typing import Any

from surrealdb import RecordID

from ..store.connection import Database, record_str
from .staging import Load

__all__ = ["NAMED_LIMIT", "existing", "mark_ingest", "record_ingest"]


#: The most records a load names in its ingest row (added, changed): past it, the counts alone.
NAMED_LIMIT = 10_000


def existing(db: Database, table: str, staged: dict[str, Any]) -> set[str]:
    """The ids of `staged` that are records of `table` already (the load changes them, not adds them); none
    looked up past NAMED_LIMIT."""
    if not staged or len(staged) > NAMED_LIMIT:
        return set()
    keys = db.value("SELECT VALUE record::id(id) FROM $ids", {"ids": [RecordID(table, k) for k in staged]})
    return {str(k) for k in keys}


def mark_ingest(load: Load, table: str, staged: list[str], existed: set[str], source: str | None) -> dict[str, Any]:
    """Record the load as one ingest (its own transaction, after the load's commit), naming the records it added
    and changed, and that it removed none, when there are not too many (a run after it then reads only those, not
    every record: fn::seval::rows_after_ingests); the evaluation, if something is watched, comes after (runs/watch.py)."""
    named = len(staged) <= NAMED_LIMIT
    ingest = record_ingest(load.db, corpus=table, documents=len(staged), source=source,
                           added=[RecordID(table, k) for k in staged if k not in existed] if named else None,
                           changed=[RecordID(table, k) for k in staged if k in existed] if named else None,
                           removed=[] if named else None)
    return {"ingest": ingest}


def record_ingest(db: Database, *, corpus: str, documents: int, source: str | None = None,
                  added: list[Any] | None = None, changed: list[Any] | None = None, removed: list[Any] | None = None) -> str:
    """Record one ingest of `documents` records into `corpus` (and, when known, which were added, changed
    and removed): one seval_ingest row, in its own transaction, `pending` when something is watched (else
    `unwatched`). Nothing is evaluated here (surql/watch.surql: on a server its ASYNC event evaluates after the
    commit; on an embedded store runs.watch.drain_ingests does). Returns the ingest's id."""
    row = db.value(
        "RETURN fn::seval::record_ingest($corpus, $documents, $source, $added, $changed, $removed)",
        {"corpus": corpus, "documents": documents, "source": source, "added": added, "changed": changed, "removed": removed},
    )
    return record_str(row)
