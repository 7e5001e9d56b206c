"""Rankings made outside the database, handed to an evaluation to be scored like retrieved ones.

A Supplied holds, per retriever name, each question's ranking as [{id, score}] best first, ids
RecordIDs of the corpus table; runs/evaluate.py passes each batch's lists to fn::seval::evaluate_questions
(surql/supplied.surql), and the run records `record` and the names in params.supplied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surrealdb import RecordID

from ..errors import InputError
from ..store.connection import Database, record_str
from ..store.schema import corpus_tables

__all__ = ["Supplied", "Hit", "check_corpus", "missing_records"]

#: One ranked record: {"id": RecordID, "score": number}.
Hit = dict[str, Any]


@dataclass
class Supplied:
    """Rankings by retriever name, then by question (`seval_question:id` text), and what the run records of them."""

    rankings: dict[str, dict[str, list[Hit]]]
    record: dict[str, Any] = field(default_factory=dict)

    def for_questions(self, questions: list[RecordID]) -> list[dict[str, list[Hit]]]:
        """One {name: ranking} per question of `questions`, in order; a question with none ranks nothing."""
        return [{name: by_question.get(record_str(q), []) for name, by_question in self.rankings.items()}
                for q in questions]

    def merged(self, other: "Supplied") -> "Supplied":
        """These rankings and `other`'s together (names distinct), their records side by side."""
        return Supplied({**self.rankings, **other.rankings}, {**self.record, **other.record})


#: Ids per existence check.
_CHUNK = 2000


def missing_records(db: Database, ids: list[RecordID]) -> set[str]:
    """`table:id` of every record of `ids` that does not exist."""
    gone: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        found = db.value("RETURN fn::seval::missing_records($ids)", {"ids": ids[start : start + _CHUNK]})
        gone |= {record_str(r) for r in found}
    return gone


def check_corpus(db: Database, corpus: str | None) -> str:
    """The corpus table a supplied ranking names records of (default: fn::seval::default_corpus), refused unless it is one."""
    table = corpus or db.value("RETURN fn::seval::default_corpus()")
    known = corpus_tables(db)
    if table not in known:
        raise InputError(f"--corpus {table!r} is not a corpus table: known tables are {', '.join(known) or 'none'}")
    return table
