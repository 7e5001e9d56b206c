"""Rankings made outside the database, handed to an evaluation to be scored like retrieved ones.

A Supplied holds, per retriever name, each question's ranking as [{id, score}] best first, ids
RecordIDs of the corpus table; runs/evaluate.py passes each batch's lists to fn::evaluate_questions
(surql/supplied.surql), and the run records `record` and the names in params.supplied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surrealdb import RecordID

from ..store.connection import record_str

__all__ = ["Supplied", "Hit"]

#: One ranked record: {"id": RecordID, "score": number}.
Hit = dict[str, Any]


@dataclass
class Supplied:
    """Rankings by retriever name, then by question (`question:id` text), and what the run records of them."""

    rankings: dict[str, dict[str, list[Hit]]]
    record: dict[str, Any] = field(default_factory=dict)

    def for_questions(self, questions: list[RecordID]) -> list[dict[str, list[Hit]]]:
        """One {name: ranking} per question of `questions`, in order; a question with none ranks nothing."""
        return [{name: by_question.get(record_str(q), []) for name, by_question in self.rankings.items()}
                for q in questions]

    def merged(self, other: "Supplied") -> "Supplied":
        """These rankings and `other`'s together (names distinct), their records side by side."""
        return Supplied({**self.rankings, **other.rankings}, {**self.record, **other.record})
