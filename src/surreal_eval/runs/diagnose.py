"""The lesson's diagnosis step: one question's labels beside each retriever's top k."""

from __future__ import annotations

from typing import Any

from ..store.connection import Database, record_str, to_record
from ..errors import NotFound
from ..store.registry import resolve_retrievers
from ..models import Diagnosis, RankedHit, RetrieverView

__all__ = ["diagnose"]

_QUERY = """
LET $q = (SELECT id, text, embedding, relevant, grades FROM ONLY $question);
LET $p = fn::run_params([$k], $given);
RETURN {
    question: $q,
    labels: $q.relevant.map(|$r, $i| { id: $r, title: fn::record_title($r), grade: $q.grades[$i] }),
    rankings: fn::question_rankings($q, $p, $names)[WHERE retriever != 'floor_sweep'].map(|$e| {
        retriever: $e.retriever,
        hits: $e.list.map(|$h| { id: $h.id, score: $h.score, title: fn::record_title($h.id) })
    })
};
"""


def diagnose(
    db: Database,
    question: str,
    *,
    k: int = 5,
    retrievers: list[str] | None = None,
    params: dict[str, Any] | None = None,
) -> Diagnosis:
    """What each retriever returns for `question` at depth `k`, with titles, scores and labels marked."""
    given = {key: v for key, v in (params or {}).items() if v is not None}
    rid = to_record(question, "question")
    if not db.value("RETURN record::exists($q)", {"q": rid}):
        raise NotFound(f"no question {record_str(rid)} in the golden set")
    found = db.value(_QUERY, {"question": rid, "k": k, "names": resolve_retrievers(db, retrievers), "given": given})
    relevant = {record_str(r) for r in found["question"]["relevant"]}
    return Diagnosis(
        question=record_str(found["question"]["id"]),
        text=found["question"]["text"],
        k=k,
        labels=[{**lab, "id": record_str(lab["id"]), "title": lab["title"] or ""} for lab in found["labels"]],
        retrievers=[
            RetrieverView(
                retriever=view["retriever"],
                hits=[
                    RankedHit(
                        rank=i + 1,
                        id=record_str(h["id"]),
                        title=h.get("title") or "",
                        score=h["score"],
                        relevant=record_str(h["id"]) in relevant,
                    )
                    for i, h in enumerate(view["hits"])
                ],
            )
            for view in found["rankings"]
        ],
    )
