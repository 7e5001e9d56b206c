"""Write articles and golden-set questions: checked first for a clear message, then written atomically."""

from __future__ import annotations

from typing import Iterable

from surrealdb import RecordID

from .connection import Database, record_str, to_record
from .errors import ConfigError, InputError, NotFound, Rejected
from .harness import harness_config
from .models import Article, Question

__all__ = ["add_articles", "add_questions", "delete_article"]

_UPSERT_ALL = """
BEGIN TRANSACTION;
FOR $row IN $rows { UPSERT $row.id CONTENT $row RETURN NONE; };
COMMIT TRANSACTION;
"""


def _dimension(db: Database) -> int:
    config = harness_config(db)
    if config is None:
        raise ConfigError("the harness is not imported here: run `surreal-eval init` first")
    return config.dimension


def _check_embedding(kind: str, item_id: str, embedding: list[float], dimension: int) -> None:
    if len(embedding) != dimension:
        raise InputError(f"{kind} {item_id!r}: embedding has {len(embedding)} values, the index expects {dimension}")


def add_articles(db: Database, articles: Iterable[Article]) -> int:
    """Insert or replace articles, all or none; returns how many were written."""
    dimension = _dimension(db)
    rows = []
    for article in articles:
        _check_embedding("article", article.id, article.embedding, dimension)
        row = article.model_dump(exclude_none=True)
        row["id"] = to_record(article.id, "article")
        if article.doc is not None:
            row["doc"] = to_record(article.doc, "article")
        rows.append(row)
    if rows:
        db.query(_UPSERT_ALL, {"rows": rows})
    return len(rows)


def add_questions(db: Database, questions: Iterable[Question]) -> int:
    """Insert or replace golden-set questions, all or none; returns how many were written.

    Refused with the question's id: no labels, a label twice, a grade count that differs from the
    label count, a wrong embedding dimension, or a label naming an article that does not exist.
    """
    dimension = _dimension(db)
    rows = []
    for question in questions:
        qid = question.id
        if not question.text.strip():
            raise InputError(f"question {qid!r}: the text is empty")
        if not question.relevant:
            raise InputError(f"question {qid!r}: no labels; every question needs at least one relevant article")
        labels = [to_record(r, "article") for r in question.relevant]
        if len(set(map(record_str, labels))) != len(labels):
            raise InputError(f"question {qid!r}: the same article is labelled twice")
        if question.grades is not None and len(question.grades) != len(labels):
            raise InputError(f"question {qid!r}: {len(question.grades)} grades for {len(labels)} labels")
        if question.grades is not None and any(g <= 0 for g in question.grades):
            raise InputError(f"question {qid!r}: every grade must be above 0")
        _check_embedding("question", qid, question.embedding, dimension)
        row = question.model_dump(exclude_none=True)
        row.update(id=to_record(qid, "question"), relevant=labels)
        if question.passages:
            docs = set(map(record_str, labels))
            for passage in question.passages:
                if record_str(to_record(passage.doc, "article")) not in docs:
                    raise InputError(f"question {qid!r}: passage of {passage.doc} quotes a document that is not among its labels")
            row["passages"] = [{**p.model_dump(), "doc": to_record(p.doc, "article")} for p in question.passages]
        rows.append(row)
    if not rows:
        return 0
    missing = db.value(
        "RETURN array::distinct(array::flatten($rows.relevant)).filter(|$r| !record::exists($r))",
        {"rows": rows},
    )
    if missing:
        owner = {record_str(r): record_str(row["id"]) for row in rows for r in row["relevant"]}
        first = record_str(missing[0])
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InputError(f"question {owner[first]!r}: label {first} does not exist in the corpus{more}")
    db.query(_UPSERT_ALL, {"rows": rows})
    return len(rows)


def delete_article(db: Database, article: str | RecordID) -> None:
    """Delete one article; refused while a question labels it."""
    rid = to_record(article, "article")
    referrers = db.value("RETURN IF record::exists($a) { $a<~question } ELSE { NONE }", {"a": rid})
    if referrers is None:
        raise NotFound(f"no article {record_str(rid)}")
    if referrers:
        names = ", ".join(record_str(q) for q in referrers)
        raise Rejected(f"{record_str(rid)} is labelled by {names}: remove those labels before deleting it")
    db.query("DELETE $a", {"a": rid})
