"""Write articles (through the bulk ingest: checked, then written atomically) and delete them (golden-set
questions: golden/files.py add_questions)."""

from __future__ import annotations

from typing import Iterable

from surrealdb import RecordID

from ..store.connection import Database, record_str, to_record
from ..errors import NotFound, Rejected
from .bulk import load_corpus
from ..models import Article

__all__ = ["add_articles", "delete_article"]


def add_articles(db: Database, articles: Iterable[Article]) -> int:
    """Insert or replace articles, all or none; returns how many were written.

    The same as `bulk.load_corpus(db, articles).loaded`: the article indexes are rebuilt after.
    """
    return load_corpus(db, articles).loaded


def delete_article(db: Database, article: str | RecordID) -> None:
    """Delete one article; refused while a question labels it."""
    rid = to_record(article, "seval_article")
    done = db.value("RETURN fn::seval::delete_article($a)", {"a": rid})
    if not done["exists"]:
        raise NotFound(f"no article {record_str(rid)}")
    if done["referrers"]:
        names = ", ".join(record_str(q) for q in done["referrers"])
        raise Rejected(f"{record_str(rid)} is labelled by {names}: remove those labels before deleting it")
