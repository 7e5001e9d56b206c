"""A reranking stage over the retrievers of a run: each retriever's top N (the rerank depth) for
every question, with the text of each record, reordered by a reranker, and scored in the same run
as `<retriever>+rerank` beside the first stage (whose metrics at N the run holds too).

Rerankers: an HTTP `/rerank` endpoint over httpx (runs/http_calls.py), Cohere-style (also Jina,
vLLM and other OpenAI-style servers: POST {query, documents, top_n, model} answering
{results: [{index, relevance_score}]}) or TEI-style (POST {query, texts} answering [{index, score}]);
or `local:MODEL`, a sentence-transformers CrossEncoder (the `local` extra), imported only when used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from surrealdb import RecordID

from ..errors import ConfigError, EndpointFailed
from ..grammar import check_number
from ..store.connection import Database, record_str
from ..store.golden import golden_rows, golden_set
from .http_calls import Call, Service, call_all
from .supplied import Hit, Supplied

__all__ = ["Rerank", "SUFFIX", "APIS", "check_rerank", "rerank_stage"]

#: What a reranked retriever is called in a run: its first stage's name and this.
SUFFIX = "+rerank"
APIS = ("cohere", "tei")
LOCAL = "local:"
#: Questions per first-stage statement.
_BATCH = 8


@dataclass(frozen=True)
class Rerank:
    """How to rerank: `target` a URL or local:MODEL, the top `depth` of each retriever, the API's shape."""

    target: str
    depth: int = 20
    api: str = "cohere"
    model: str | None = None
    timeout: float = 30.0
    concurrency: int = 4
    retries: int = 3


def check_rerank(rerank: Rerank, ks: list[int]) -> Rerank:
    """`rerank` if its target, depth and API make sense for cutoffs `ks`, else a ConfigError naming the option."""
    if not (rerank.target.startswith(("http://", "https://")) or
            (rerank.target.startswith(LOCAL) and len(rerank.target) > len(LOCAL))):
        raise ConfigError(f"--rerank {rerank.target!r} must be an http:// or https:// URL or local:MODEL")
    check_number("depth", rerank.depth, option="--rerank-depth")
    if rerank.depth < max(ks):
        raise ConfigError(f"--rerank-depth {rerank.depth} is shallower than the deepest k = {max(ks)}: "
                          "rerank at least as deep as you score")
    if rerank.api not in APIS:
        raise ConfigError(f"--rerank-api must be one of {', '.join(APIS)}, got {rerank.api!r}")
    return rerank


def _body(rerank: Rerank, query: str, texts: list[str]) -> dict[str, Any]:
    if rerank.api == "tei":
        return {"query": query, "texts": texts}
    body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
    return {**body, "model": rerank.model} if rerank.model else body


def _scores(answer: Any, count: int, about: str) -> list[float]:
    """One score per document of a /rerank answer ([{index, relevance_score | score}], bare or under results/data)."""
    items = answer.get("results", answer.get("data")) if isinstance(answer, dict) else answer
    if not isinstance(items, list):
        raise EndpointFailed(f"reranker answered {about} without a list of {{index, score}} results")
    scores: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in scores \
                or not isinstance(score, (int, float)) or isinstance(score, bool):
            raise EndpointFailed(f"reranker answered {about} with {item!r}: each result needs a new index "
                                 f"from 0 to {count - 1} and a numeric relevance_score or score")
        scores[index] = float(score)
    if len(scores) != count:
        raise EndpointFailed(f"reranker scored {len(scores)} of the {count} documents of {about}")
    return [scores[i] for i in range(count)]


def _http(rerank: Rerank, items: list[tuple[str, str, list[str]]]) -> list[list[float]]:
    service = Service("reranker", timeout=rerank.timeout, concurrency=rerank.concurrency, retries=rerank.retries)
    todo = [(i, item) for i, item in enumerate(items) if item[2]]  # an empty ranking needs no call
    answers = call_all(service, [Call(about, "POST", rerank.target, body=_body(rerank, query, texts))
                                 for _, (about, query, texts) in todo])
    out: list[list[float]] = [[] for _ in items]
    for (i, (about, _, texts)), answer in zip(todo, answers):
        out[i] = _scores(answer, len(texts), about)
    return out


def _local(rerank: Rerank, items: list[tuple[str, str, list[str]]]) -> list[list[float]]:
    try:
        from sentence_transformers import CrossEncoder
    except ImportError:
        raise EndpointFailed("--rerank local:MODEL needs the local extra: pip install 'surreal-eval[local]'") from None
    model = CrossEncoder(rerank.target.removeprefix(LOCAL))
    return [[float(s) for s in model.predict([(query, t) for t in texts])] if texts else [] for _, query, texts in items]


def _first_stage(db: Database, names: list[str], p: dict[str, Any], questions: list[RecordID]) -> list[dict[str, Any]]:
    calls = [("RETURN fn::seval::first_stage($ids, $p, $names)", {"ids": questions[i : i + _BATCH], "p": p, "names": names})
             for i in range(0, len(questions), _BATCH)]
    return [row for batch in db.query_many(calls) for row in batch[0]] if names else \
        [{"question": q, "rankings": {}} for q in questions]


def rerank_stage(db: Database, rerank: Rerank, *, names: list[str], supplied: Supplied | None, ks: list[int],
                 given: dict[str, Any]) -> tuple[list[int], dict[str, Any], Supplied]:
    """The run's cutoffs and parameters with the rerank depth added, and the reranked lists of registry
    retrievers `names` and of the `supplied` rankings, each question's top `rerank.depth` reordered."""
    rerank = check_rerank(rerank, ks)
    ks = sorted(set(ks) | {rerank.depth})
    given = {**given, "depth": max(given.get("depth") or 0, rerank.depth)}
    p = db.value("RETURN fn::seval::run_params($ks, $given)",
                 {"ks": ks, "given": {k: v for k, v in given.items() if k not in ("git_commit", "trigger", "tuning")}})
    questions = golden_rows(db, golden_set(db, p["golden"]), split=given.get("split"))
    texts = {record_str(q["id"]): q["text"] for q in questions}
    stages = _first_stage(db, names, p, [q["id"] for q in questions])
    lists: list[tuple[str, str, list[Hit]]] = []  # (retriever, question, top N with texts)
    for stage in stages:
        qid = record_str(stage["question"])
        lists += [(name, qid, hits) for name, hits in stage["rankings"].items()]
        for name, by_question in (supplied.rankings if supplied else {}).items():
            hits = by_question.get(qid, [])[: rerank.depth]
            found = db.value("RETURN fn::seval::record_texts($ids)", {"ids": [h["id"] for h in hits]}) if hits else []
            lists.append((name, qid, [{**h, "text": t} for h, t in zip(hits, found)]))
    items = [(f"{qid} ({name})", texts[qid], [h["text"] for h in hits]) for name, qid, hits in lists]
    scores = (_local if rerank.target.startswith(LOCAL) else _http)(rerank, items)
    rankings: dict[str, dict[str, list[Hit]]] = {}
    for (name, qid, hits), new in zip(lists, scores):
        order = sorted(range(len(hits)), key=lambda i: -new[i])  # stable: ties keep the first stage's order
        rankings.setdefault(name + SUFFIX, {})[qid] = [{"id": hits[i]["id"], "score": new[i]} for i in order]
    by = rerank.target if rerank.target.startswith(LOCAL) else rerank.target.split("?", 1)[0]
    record = {"rerank": {"depth": rerank.depth, "api": rerank.api, "by": by, "model": rerank.model,
                         "of": {name.removesuffix(SUFFIX): name for name in rankings}}}
    return ks, given, Supplied(rankings, record)
