"""A store written by surreal-eval 0.1: its harness named everything without the prefix seval_
(eval_run, question, article, english, fn::evaluate, ...). It is recognised by the tables where 0.1
recorded its import (`harness_script`, `harness_config`); every command but `migrate` refuses it in
one line naming `surreal-eval migrate` (store/migrate_prefix.py), and changes nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .connection import Database
from ..errors import ConfigError

__all__ = ["PREVIOUS_TABLES", "is_previous_release", "refuse_previous_release", "migrating"]

#: The tables surreal-eval 0.1's import recorded itself in (its script checksums and its settings).
PREVIOUS_TABLES = ("harness_script", "harness_config")
#: Connections a migration is running on: the harness it imports there must not refuse the store.
_MIGRATING: "weakref.WeakSet[Database]" = weakref.WeakSet()


def is_previous_release(tables: Iterable[str]) -> bool:
    """Whether a database holding `tables` (INFO FOR DB) holds surreal-eval 0.1's harness."""
    held = set(tables)
    return all(t in held for t in PREVIOUS_TABLES)


def refuse_previous_release(db: Database, tables: Iterable[str] | None = None) -> None:
    """A ConfigError (exit 2) naming `surreal-eval migrate` when `db` holds surreal-eval 0.1's
    harness (its tables `tables`, if already read), unless a migration is running on `db`."""
    if db in _MIGRATING:
        return
    held = set(db.value("INFO FOR DB")["tables"] if tables is None else tables)
    if is_previous_release(held):
        unfinished = ", and a migration that did not finish" if "seval_object" in held else ""
        raise ConfigError(f"this database holds surreal-eval 0.1's harness and history under unprefixed names (eval_run, "
                          f"question, article, ...){unfinished}: run `surreal-eval migrate` to move them to the seval_ "
                          f"names (nothing was changed)")


@contextmanager
def migrating(db: Database) -> Iterator[Database]:
    """While inside, the harness functions called on `db` do not refuse its 0.1 tables."""
    _MIGRATING.add(db)
    try:
        yield db
    finally:
        _MIGRATING.discard(db)
