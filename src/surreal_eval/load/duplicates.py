"""Ids read twice in one load: refused with the file and both lines, or one of each kept.

    refuse   (default) every repeated id is a problem of the load, named with where it was read
    first    the first line of an id is loaded, later lines with it are dropped and counted
    last     the last line wins: a later line replaces the row staged for its id (the staging table
             is upserted by id, so memory stays one batch), and the problems of the row it replaces
             are forgotten; a later line with no embedding (and no embedder to compute one) keeps
             the embedding of the row it replaces (a sidecar file names each id once)

Python keeps one entry per id (where it was first read) to find the repeats.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, Protocol

from ..errors import ConfigError

__all__ = ["DUPLICATE_IDS", "ON_DUPLICATE", "OnDuplicate", "Duplicates", "where_read"]

OnDuplicate = Literal["refuse", "first", "last"]
ON_DUPLICATE: tuple[str, ...] = ("refuse", "first", "last")
#: The kind of problem a repeated id is, in a refusal.
DUPLICATE_IDS = "duplicate ids"


class _Problems(Protocol):
    def add(self, kind: str, entry: str, key: str | None = None) -> None: ...
    def forget(self, key: str) -> None: ...


def where_read(item: Any) -> tuple[str, int] | None:
    """(file, line) a document or question was read from, if a reader recorded it."""
    return getattr(item, "_origin", None)


def _both(ident: str, first: tuple[str, int] | None, second: tuple[str, int] | None) -> str:
    """An id read twice and where: `28 (corpus.jsonl lines 29 and 31)`, each place in full if the
    files differ, the id alone for rows that were not read from a file."""
    if first is None or second is None:
        return ident
    if first[0] == second[0]:
        return f"{ident} ({first[0]} lines {first[1]} and {second[1]})"
    return f"{ident} ({first[0]}:{first[1]} and {second[0]}:{second[1]})"


class Duplicates:
    """The ids one kind of row of a load has read, and what to do when one comes again."""

    def __init__(self, policy: str, problems: _Problems) -> None:
        if policy not in ON_DUPLICATE:
            raise ConfigError(f"on-duplicate must be one of {', '.join(ON_DUPLICATE)}, got {policy!r}")
        self.policy = policy
        self.problems = problems
        #: each id read, and where it was first read
        self.read: dict[str, tuple[str, int] | None] = {}
        #: rows not loaded because another row had their id
        self.dropped = 0
        #: ids whose staged row a later line replaced (policy last)
        self.replaced: set[str] = set()

    @property
    def replacing(self) -> bool:
        return self.policy == "last"

    def admit(self, item: Any) -> bool:
        """Whether to stage `item`: a new id always; a repeated one as the policy says."""
        where = where_read(item)
        if where is not None:
            where = (sys.intern(where[0]), where[1])  # one copy of a file name, however many rows
        if item.id not in self.read:
            self.read[item.id] = where
            return True
        if self.policy == "refuse":
            self.problems.add(DUPLICATE_IDS, _both(item.id, self.read[item.id], where))
            return False
        self.dropped += 1
        if self.policy == "first":
            return False
        self.replaced.add(item.id)
        self.problems.forget(item.id)
        return True

    def last_of_each(self, batch: list[Any]) -> list[Any]:
        """`batch` with one row per id (policy last: the last of them, where the first stood); a
        row lacking an embedding keeps the one of the row it replaces (a sidecar names an id once)."""
        if not self.replacing:
            return batch
        kept: dict[str, Any] = {}
        for item in batch:
            earlier = kept.get(item.id)
            if earlier is not None and item.embedding is None and earlier.embedding is not None:
                item = item.model_copy(update={"embedding": earlier.embedding})
            kept[item.id] = item
        return list(kept.values())

    def lacking(self, items: list[Any], vectors: dict[str, list[float]]) -> list[str]:
        """The ids among `items` that replace a staged row and have no embedding of their own or in `vectors`."""
        return [i.id for i in items if i.id in self.replaced and i.embedding is None and i.id not in vectors]

    def key(self, ident: str) -> str | None:
        """The key a row's problems are filed under, so that a row replacing it can forget them."""
        return ident if self.replacing else None
