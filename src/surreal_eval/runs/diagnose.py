"""The lesson's diagnosis step: one question's labels beside each retriever's top k."""

from __future__ import annotations

from typing import Any

from ..store.connection import Database, record_str
from ..store.golden import golden_set, question_id
from ..errors import NotFound
from ..grammar import check_number, check_params
from ..store.registry import resolve_retrievers
from ..models import Diagnosis, RankedHit, RetrieverView

__all__ = ["diagnose"]

def diagnose(
    db: Database,
    question: str,
    *,
    k: int = 5,
    retrievers: list[str] | None = None,
    params: dict[str, Any] | None = None,
) -> Diagnosis:
    """What each retriever returns for `question` at depth `k`, with titles, scores and labels marked."""
    check_number("k", k, option="--k")
    given = check_params({key: v for key, v in (params or {}).items() if v is not None})
    golden = golden_set(db, given.get("golden"))
    rid = question_id(question, golden)
    found = db.value("RETURN fn::seval::diagnose_question($question, $k, $names, $given)",
                     {"question": rid, "k": k, "names": resolve_retrievers(db, retrievers), "given": {**given, "golden": golden.name}})
    if found is None:
        raise NotFound(f"no question {record_str(rid)} in the golden set {golden.name}")
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
