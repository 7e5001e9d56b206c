"""Write articles and golden-set questions (through the bulk ingest: checked, then written atomically)
and delete articles."""

from __future__ import annotations

from typing import Iterable

from surrealdb import RecordID

from ..store.connection import Database, record_str, to_record
from ..errors import NotFound, Rejected
from .bulk import load_corpus, load_golden
from ..models import Article, Question

__all__ = ["add_articles", "add_questions", "delete_article"]


def add_articles(db: Database, articles: Iterable[Article]) -> int:
    """Insert or replace articles, all or none; returns how many were written.

    The same as `bulk.load_corpus(db, articles).loaded`: the article indexes are rebuilt after.
    """
    return load_corpus(db, articles).loaded


def add_questions(db: Database, questions: Iterable[Question]) -> int:
    """Insert or replace golden-set questions, all or none; returns how many were written.

    Refused with the question's id: no labels, a label twice, a grade count that differs from the
    label count, a wrong embedding dimension, or a label naming an article that does not exist
    (see `ingest.load_golden`).
    """
    return load_golden(db, questions).loaded


def delete_article(db: Database, article: str | RecordID) -> None:
    """Delete one article; refused while a question labels it."""
    rid = to_record(article, "seval_article")
    if not db.value("RETURN record::exists($a)", {"a": rid}):
        raise NotFound(f"no article {record_str(rid)}")
    referrers = db.value("SELECT VALUE id FROM seval_question WHERE $a IN relevant", {"a": rid})
    if referrers:
        names = ", ".join(record_str(q) for q in referrers)
        raise Rejected(f"{record_str(rid)} is labelled by {names}: remove those labels before deleting it")
    db.query("DELETE $a", {"a": rid})
