"""Opening a store: the connection, and for an embedded store the undoing of a load a kill left unfinished.

This sits above `connection` and `journal` (the journal's recovery needs a connection), so that
neither imports the other's layer upward.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .connection import Database, open_database
from .journal import recover_loads
from .settings import Settings

__all__ = ["connect", "connected"]


def connect(settings: Settings) -> Database:
    """Open the database that `settings` names, sign in if a user is given, and select ns/db.

    An embedded store is first put right if a killed load left a move unfinished in it (undone):
    one process holds an embedded store, so a load left unfinished there was killed.
    """
    db = open_database(settings)
    if settings.is_embedded and not settings.access:
        try:
            recover_loads(db)
        except BaseException:
            db.close()
            raise
    return db


@contextmanager
def connected(settings: Settings) -> Iterator[Database]:
    """`connect` as a context manager that always closes."""
    db = connect(settings)
    try:
        yield db
    finally:
        db.close()
