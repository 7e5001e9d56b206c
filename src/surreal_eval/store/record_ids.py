"""Record ids as text: the `table:id` form the harness writes in JSON and files, and the forms a user
writes (a bare key, `table:key`, or the key in angle brackets or backticks as SurrealDB prints it)."""

from __future__ import annotations

from typing import Any

from surrealdb import RecordID

from ..grammar import quoted_key

__all__ = ["record_str", "to_record"]


def record_str(value: Any) -> str:
    """A record id as a plain `table:id` string (the form used in JSON output and files)."""
    if isinstance(value, RecordID):
        return f"{value.table_name}:{value.id}"
    return str(value)


def to_record(value: str | RecordID, table: str) -> RecordID:
    """`table:id` or a bare id as a RecordID of `table`; a prefix naming another table is kept as id text.
    A key written as SurrealDB and its SDK write one that is not a plain word (`documents:⟨1⟩`,
    `llama_chunks:`llama_chunks:0``) is read without its brackets or backticks."""
    if isinstance(value, RecordID):
        return value
    prefix, sep, rest = value.partition(":")
    if sep and prefix == table:
        value = rest
    inside = quoted_key(value)
    return RecordID(table, value if inside is None else inside)
