"""The fields an attached table's BM25 list searches, written into surql/attached.surql's branches (schema.attached_script)."""

from __future__ import annotations

from .names import field_path

__all__ = ["bm25_fields", "bm25_predicates"]


def bm25_fields(row: dict) -> list[str]:
    """The fields an attached table's BM25 list searches (its seval_corpus row's bm25_fields; one attached before
    they were named: its content field), each checked to be a field path."""
    return [str(field_path(f, what="BM25 field")) for f in (row.get("bm25_fields") or [row["content"]])]


def bm25_predicates(text: str, fields: list[str]) -> str:
    """`text` with {{bm25_any}}, {{bm25_all}} and {{bm25_score}} written for BM25 fields `fields` (validated field
    paths): one full-text predicate per field, numbered from 1 (any word: @N,OR@; every word: @N,AND@), joined by OR,
    and the sum of their scores."""
    def joined(operator: str) -> str:
        return " OR ".join(f"{field_path(f, what='BM25 field')} @{n},{operator}@ $words" for n, f in enumerate(fields, 1))

    score = " + ".join(f"search::score({n})" for n in range(1, len(fields) + 1))
    return (text.replace("{{bm25_any}}", joined("OR")).replace("{{bm25_all}}", joined("AND"))
            .replace("{{bm25_score}}", score if len(fields) == 1 else f"({score})"))
