"""Opening a store: the connection, and for an embedded store the undoing of a load a kill left unfinished.

This sits above `connection` and `journal` (the journal's recovery needs a connection), so that
neither imports the other's layer upward.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .connection import Database, open_database
from .journal import recover_loads, staging_among
from .previous import refuse_previous_release
from .settings import Settings

__all__ = ["connect", "connected"]


def connect(settings: Settings, *, previous_release: bool = False) -> Database:
    """Open the database that `settings` names, sign in if a user is given, and select ns/db.

    A database holding surreal-eval 0.1's harness is refused in one line naming `surreal-eval
    migrate` (store/previous.py), unless `previous_release` (the migration's own connection); a
    record user's connection is not asked (INFO is closed to it). An embedded store is first put
    right if a killed load left a move unfinished in it (undone): one process holds an embedded
    store, so a load left unfinished there was killed. When that put nothing right, the tables read for it are kept as
    `db.opened_tables`, for a caller whose first statement needs them (the CLI's load: INFO FOR DB costs about 20 ms).
    """
    db = open_database(settings)
    if not settings.access:
        try:
            # one read of the tables for both (INFO FOR DB costs the engine about 10 ms)
            tables = list(db.value("INFO FOR DB")["tables"]) if settings.is_embedded or not previous_release else None
            if not previous_release:
                refuse_previous_release(db, tables)
            if settings.is_embedded and not recover_loads(db, tables=tables) and not staging_among(tables):
                db.opened_tables = tables  # nothing put right, no staging table removed: the tables are still these
        except BaseException:
            db.close()
            raise
    return db


@contextmanager
def connected(settings: Settings, *, previous_release: bool = False) -> Iterator[Database]:
    """`connect` as a context manager that always closes (`previous_release`: see connect)."""
    db = connect(settings, previous_release=previous_release)
    try:
        yield db
    finally:
        db.close()
