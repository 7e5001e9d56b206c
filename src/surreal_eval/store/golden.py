"""Which golden set a command reads, and its questions, through surql/golden.surql: the harness's own
(seval_question, loaded from files) or a table of the user's attached in place (surreal-eval golden
attach), chosen by name or, with none given, the one golden set holding questions."""

from __future__ import annotations

from typing import Any, Optional


from ..model_base import Model
from .connection import Database, RecordID, to_record

__all__ = ["OWN_GOLDEN", "GoldenSet", "golden_set", "golden_rows", "question_id"]

#: The harness's own golden set, loaded from files.
OWN_GOLDEN = "seval_question"


class GoldenSet(Model):
    """A row of the seval_golden registry: the table, whether it is the user's (attached), and the field
    holding each thing the harness reads of a question (None: the table has none)."""

    name: str
    attached: bool
    fields: dict[str, Optional[str]]


def golden_set(db: Database, name: str | None = None) -> GoldenSet:
    """Golden set `name`, or the default one (fn::seval::golden_set); a Rejected error names the choice."""
    return GoldenSet(**db.value("RETURN fn::seval::golden_set($name)", {"name": name}))


def golden_rows(db: Database, golden: GoldenSet, *, split: str | None = None) -> list[dict[str, Any]]:
    """The questions of `golden` in `split` (None: all), in id order, each as {id, text, embedding,
    relevant, grades, nonrelevant, passages, category, language, source, split}."""
    return db.value("RETURN fn::seval::golden_rows($g, $split, NONE)", {"g": golden.model_dump(), "split": split})


def question_id(question: str | RecordID, golden: GoldenSet) -> RecordID:
    """The record a question id names in `golden` (`money_back` or `question:money_back`)."""
    return to_record(question, golden.name)
