"""The lesson's diagnosis step: one question's labels beside each retriever's top k."""

from __future__ import annotations

import shlex
from typing import Any


from ..model_base import Model
from ..store.connection import Database, record_str
from ..store.golden import golden_set, question_id
from ..errors import ConfigError, NotFound, Rejected
from ..grammar import check_number, check_params
from ..store.registry import resolve_retrievers


class RankedHit(Model):
    """One record a retriever returned: its rank, score, title and whether it is labelled."""

    rank: int
    id: str
    title: str
    score: float
    relevant: bool
    #: the question has a judgment of it, relevant or not (False: nobody judged it); a chunk's is its document's
    judged: bool = True
    #: on a chunk table: the document the chunk belongs to (what a label names)
    doc: str | None = None
    #: the start of its text (fn::seval::doc_texts), whitespace folded, at most SNIPPET characters: what the record says
    snippet: str = ""


class RetrieverView(Model):
    retriever: str
    hits: list[RankedHit]


class Diagnosis(Model):
    """One question beside what each retriever returned for it (the lesson's diagnosis step)."""

    question: str
    text: str
    k: int
    #: {id, title, grade, dangling: the labelled record no longer exists (counted a miss, or the run refused), snippet}
    labels: list[dict[str, Any]]
    retrievers: list[RetrieverView]
    #: each document of some retriever's top k that nobody judged, first seen first: the `golden label` command that labels it
    label_commands: dict[str, str] = {}


__all__ = ["Diagnosis", "RankedHit", "RetrieverView", "SNIPPET", "default_golden", "diagnose", "label_command"]

#: How much of a record's text diagnose shows beside its title (the whole of it in neither text nor JSON).
SNIPPET = 80


def _snippets(db: Database, records: list[Any]) -> dict[str, str]:
    """The start of the text of each of `records` (SNIPPET characters, whitespace folded, … when cut), by record_str."""
    if not records:
        return {}
    rows = db.value("RETURN fn::seval::doc_texts($docs)", {"docs": records})
    found = {}
    for row in rows:
        text = " ".join(str(row.get("text") or "").split())
        found[record_str(row["doc"])] = text if len(text) <= SNIPPET else text[: SNIPPET - 1].rstrip() + "…"
    return found


def default_golden(db: Database) -> str | None:
    """The golden set a command uses when none is named; None when there is no single one (--golden is needed)."""
    try:
        return golden_set(db, None).name
    except (ConfigError, NotFound, Rejected):
        return None


def label_command(question: str, doc: str, golden: str | None = None) -> str:
    """The `surreal-eval golden label QUESTION DOC` command that labels `doc` relevant for `question` (of golden
    set `golden`; None: the default one), quoted for a POSIX shell so it can be pasted as it is."""
    return shlex.join(["surreal-eval", "golden", "label", question, doc, *(["--golden", golden] if golden else [])])


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
                     {"question": rid, "k": k, "names": resolve_retrievers(db, retrievers, given.get("corpus")),
                      "given": {**given, "golden": golden.name}})
    if found is None:
        raise NotFound(f"no question {record_str(rid)} in the golden set {golden.name}")
    # what the question is scored against on this corpus: on a chunk table its passages' chunks, or its
    # documents, which a chunk stands for (a label names a document: the chunk's document is judged)
    target = found.get("target") or {}
    relevant = {record_str(r) for r in [*found["question"]["relevant"], *target.get("relevant", [])]}
    judged = relevant | {record_str(r) for r in found["question"].get("nonrelevant") or []}
    default = default_golden(db)

    def stands_for(hit: dict) -> str:  # the record a label of this hit names: a chunk's document, else itself
        return record_str(hit["doc"]) if hit.get("doc") and target.get("level") != "passage" else record_str(hit["id"])

    unjudged = [stands_for(h) for view in found["rankings"] for h in view["hits"] if stands_for(h) not in judged]
    question_name = record_str(found["question"]["id"])
    # a label whose record no longer exists (golden dangling lists them): shown as such, never as a live record
    gone = {record_str(row["label"]) for row in db.value("RETURN fn::seval::dangling_labels($rows)", {"rows": [found["question"]]})}
    snippets = _snippets(db, [lab["id"] for lab in found["labels"]] + [h["id"] for view in found["rankings"] for h in view["hits"]])
    return Diagnosis(
        question=question_name,
        text=found["question"]["text"],
        k=k,
        labels=[{**lab, "id": record_str(lab["id"]), "title": lab["title"] or "", "dangling": record_str(lab["id"]) in gone,
                 "snippet": snippets.get(record_str(lab["id"]), "")} for lab in found["labels"]],
        retrievers=[
            RetrieverView(
                retriever=view["retriever"],
                hits=[
                    RankedHit(
                        rank=i + 1,
                        id=record_str(h["id"]),
                        title=h.get("title") or "",
                        score=h["score"],
                        relevant=record_str(h["id"]) in relevant or stands_for(h) in relevant,
                        judged=record_str(h["id"]) in judged or stands_for(h) in judged,
                        doc=record_str(h["doc"]) if h.get("doc") else None,
                        snippet=snippets.get(record_str(h["id"]), ""),
                    )
                    for i, h in enumerate(view["hits"])
                ],
            )
            for view in found["rankings"]
        ],
        label_commands={doc: label_command(question_name, doc, None if golden.name == default else golden.name)
                        for doc in dict.fromkeys(unjudged)},
    )
