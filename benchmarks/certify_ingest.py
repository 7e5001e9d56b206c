"""How many questions a run after an ingest could leave untouched: a cheap certificate, measured against the truth.

    python benchmarks/certify_ingest.py [--dataset cisi|debian] [--questions N] [--documents 20]

The run after a 20-document ingest (benchmarks/watch_scale.py) brings every question's kept lists up to date,
fuses and scores them, and only then finds that most questions rank alike (on Debian 490 of 500 are copied
from the run before). Reaching the issue's goal (that run at most a tenth of a fresh one) needs the run to know
*before* that work which questions the ingest cannot change. This measures a certificate that costs a few
numbers per question, on the same store and ingest as watch_scale, and checks it against what the run found:

- **BM25** (the engine's BM25, surql/incremental_bm25.surql): an entry's score is a sum over the query's terms
  t of c(t) * g, with c(t) = w (k1 + 1) idf(t) and g = tf' / (tf' + k1 (1 - b + b len / avglen)) < 1. After the
  ingest, c(t) moves to c'(t) (N and n(t) change) and g by a factor between 1 and avglen'/avglen, so an
  unchanged record's score moves by a factor within [rho_lo, rho_hi] = [min_t c'/c * min(1, a), max_t c'/c *
  max(1, a)], a = avglen'/avglen, over the query's terms. The top k is certified alike when no entry of it
  was removed or changed, every pair of neighbours down to k + 1 stays apart (s_i rho_lo > s_(i+1) rho_hi, or
  the two have the same length and term counts, so they move alike), every record added or changed that holds
  a query term scores (exactly, at the new statistics) below s_k rho_lo, and no entry of the top k can cross a
  floor of the run's sweep.
- **vector**: the top k is certified alike when none of its entries was removed or re-embedded and every
  record added or re-embedded is farther from the question than its k-th entry.

A question whose lists are both certified ranks alike under every default retriever (the fusions read the
lists' ranks, and the floors the BM25 scores, which the certificate bounds). Printed: how many questions the
certificate passes, against how many the run itself found alike (copied), and whether any certified
question changed (it must not: the certificate is a proof, and a failure here is a bug in its bound).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import watch_scale  # noqa: E402 (benchmarks/ is on the path from here)


def _c(docs: float, n: int, w: int, k1: float) -> float:
    """w (k1 + 1) idf, idf = max(0, ln((N - n + 0.5) / (n + 0.5))), as the engine computes it."""
    return w * (k1 + 1) * max(0.0, math.log((docs - n + 0.5) / (n + 0.5)))


def _score(tfs: list[float], length: int, cs: list[float], k1: float, b: float, avg: float) -> float:
    return sum(c * tf / (tf + k1 * (1 - b + b * length / avg)) for c, tf in zip(cs, tfs) if tf > 0)


def _tfs(counts: dict, terms: list[str]) -> list[float]:
    return [1 + math.log(counts[t]) if counts.get(t, 0) > 0 else 0.0 for t in terms]


def certify_bm25(stats: dict, hits: list[dict], k: int, model: dict, before: dict, after: dict, df0: dict, df1: dict,
                 new_docs: list[dict], gone: set, floors: list[float]) -> bool:
    """Whether BM25 list `hits` (scores at the state before) is certified to keep its top k after the ingest."""
    terms, w = stats["terms"], stats["w"]
    if not terms:
        return True
    k1, b = model["k1"], model["b"]
    c0 = [_c(before["documents"], df0.get(t, 0), n, k1) for t, n in zip(terms, w)]
    c1 = [_c(after["documents"], df1.get(t, 0), n, k1) for t, n in zip(terms, w)]
    if any(x == 0 and y > 0 for x, y in zip(c0, c1)):
        return False
    ratios = [y / x for x, y in zip(c0, c1) if x > 0] or [1.0]
    a = (after["length"] / after["documents"]) / (before["length"] / before["documents"])
    lo, hi = min(ratios) * min(1.0, a), max(ratios) * max(1.0, a)
    top = hits[: k + 1]
    if any(str(h["id"]) in gone for h in top[:k]):
        return False

    def alike(i: int) -> bool:  # neighbours of one length and term counts: they move alike and stay in id order
        return stats["len"][i] == stats["len"][i + 1] and stats["tf"][i] == stats["tf"][i + 1]

    def apart(i: int) -> bool:  # neighbours that no factor within [lo, hi] can reorder
        return hits[i]["score"] * lo > hits[i + 1]["score"] * hi

    if not all(alike(i) or apart(i) for i in range(min(k, len(hits)) - 1)):
        return False
    # at the k-th: the records alike to it further down move with it, and the first that is not must stay below
    j = k - 1
    while j + 1 < len(hits) and alike(j):
        j += 1
    if len(hits) >= k and (j + 1 >= len(hits) or not apart(j)):
        return False
    if len(top) >= k:
        kth = top[k - 1]["score"] * lo
        avg1 = after["length"] / after["documents"]
        for d in new_docs:
            tfs = _tfs(d["counts"] or {}, terms)
            if any(tfs) and _score(tfs, d["length"], c1, k1, b, avg1) >= kth:
                return False
    elif any(set(d["terms"] or []) & set(terms) for d in new_docs):
        return False  # a list shorter than k: a record holding a term enters it
    return all(not (h["score"] * lo <= f <= h["score"] * hi) for h in top[:k] for f in floors if f > 0)


def certify_vector(hits: list[dict], k: int, embedding: list[float], new_vectors: list[list[float]], gone: set) -> bool:
    """Whether vector list `hits` keeps its top k: no entry gone and every new record farther than its k-th."""
    import numpy as np

    if any(str(h["id"]) in gone for h in hits[:k]):
        return False
    if len(hits) < k:
        return not new_vectors
    e = np.asarray(embedding, dtype=float)
    kth = hits[k - 1]["distance"]
    for v in new_vectors:
        v = np.asarray(v, dtype=float)
        if 1 - float(e @ v / (np.linalg.norm(e) * np.linalg.norm(v))) <= kth + 1e-6:
            return False
    return True


def _lists(db, kind: str) -> dict[str, dict]:
    rows = db.query("SELECT id, hits, stats, depth FROM seval_candidate_cache WHERE list = $kind", {"kind": kind})[-1]
    return {str(r["id"].id[0]): r for r in rows}


def measure(dataset: str, questions: int, documents: int) -> dict:
    from surreal_eval.runs.watch import drain_ingests

    with watch_scale.watched_store(dataset, questions, documents, "certify") as (db, batches):
        corpus = "seval_article"
        model = db.value("RETURN fn::seval::bm25_model($c)", {"c": corpus})
        run0 = db.value("SELECT VALUE id FROM ONLY seval_run ORDER BY created_at DESC LIMIT 1")
        params = db.value("SELECT VALUE params FROM ONLY $r", {"r": run0})
        k, floors = max(watch_scale.KS), [params["floor"], *params.get("floors", [])]
        texts = {str(q["id"]): q for q in db.query("SELECT id, text, embedding FROM seval_question")[-1]}
        before = db.value("SELECT VALUE state.bm25 FROM ONLY type::record('seval_corpus', $c)", {"c": corpus})
        df0 = {r["term"]: r["n"] for r in db.query("SELECT term, n FROM seval_corpus_term WHERE corpus = $c", {"c": corpus})[-1]}
        bm25_0, vec_0 = _lists(db, "bm25"), _lists(db, "vector")
        stats = {q: r["stats"] or db.value("RETURN fn::seval::bm25_list_stats($h, $q, $a, $c)",
                                           {"h": r["hits"], "q": texts[q], "a": model["analyzer"], "c": corpus})
                 for q, r in bm25_0.items()}
        watch_scale._write(db, batches[0])
        (done,) = drain_ingests(db).evaluated
        assert done.error is None, done.error
        after = db.value("SELECT VALUE state.bm25 FROM ONLY type::record('seval_corpus', $c)", {"c": corpus})
        df1 = {r["term"]: r["n"] for r in db.query("SELECT term, n FROM seval_corpus_term WHERE corpus = $c", {"c": corpus})[-1]}
        new_docs = db.query("SELECT length, terms, counts FROM $ids.map(|$i| type::record('seval_corpus_doc', [$c, type::record($c, $i)]))",
                            {"ids": [row["id"] for row in batches[0]], "c": corpus})[-1]
        assert len(new_docs) == len(batches[0]), "the ingested records' BM25 statistics are not in the state"
        new_vectors = [row["embedding"] for row in batches[0]]
        bm25_1, vec_1 = _lists(db, "bm25"), _lists(db, "vector")
        copied = {str(r["question"]) for r in db.query(
            "SELECT question, count() AS n, count(copied = true) AS c FROM seval_ranking WHERE run = $r GROUP BY question",
            {"r": db.value("SELECT VALUE id FROM ONLY seval_run ORDER BY created_at DESC LIMIT 1")})[-1] if r["n"] == r["c"]}
    out = {"questions": len(bm25_0), "copied": len(copied)}
    counts = {"bm25_cert": 0, "bm25_same": 0, "vec_cert": 0, "vec_same": 0, "both_cert": 0, "unsound": 0}
    for q, row in bm25_0.items():
        same_b = [str(h["id"]) for h in row["hits"][:k]] == [str(h["id"]) for h in bm25_1[q]["hits"][:k]]
        same_v = [str(h["id"]) for h in vec_0[q]["hits"][:k]] == [str(h["id"]) for h in vec_1[q]["hits"][:k]]
        cert_b = stats[q] is not None and certify_bm25(stats[q], row["hits"], k, model, before, after, df0, df1, new_docs, set(), floors)
        cert_v = certify_vector(vec_0[q]["hits"], k, texts[q]["embedding"], new_vectors, set())
        counts["bm25_cert"] += cert_b
        counts["bm25_same"] += same_b
        counts["vec_cert"] += cert_v
        counts["vec_same"] += same_v
        counts["both_cert"] += cert_b and cert_v
        counts["unsound"] += (cert_b and not same_b) + (cert_v and not same_v)
        if (cert_b and not same_b) or (cert_v and not same_v):
            kind, was, now = ("bm25", row, bm25_1[q]) if cert_b and not same_b else ("vector", vec_0[q], vec_1[q])
            print(f"certified but changed: {q} {kind}\n  before {[(str(h['id']), h.get('score'), h.get('distance')) for h in was['hits'][:k + 1]]}"
                  f"\n  after  {[(str(h['id']), h.get('score'), h.get('distance')) for h in now['hits'][:k + 1]]}", file=sys.stderr)
    out.update(counts)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="cisi", choices=["cisi", "debian"])
    parser.add_argument("--questions", type=int, default=None, help="default: 76 on CISI, 500 on Debian")
    parser.add_argument("--documents", type=int, default=20)
    args = parser.parse_args()
    questions = args.questions or (76 if args.dataset == "cisi" else 500)
    r = measure(args.dataset, questions, args.documents)
    n = r["questions"]
    print(f"\n{args.dataset}: {n} questions, a {args.documents}-document ingest, top {max(watch_scale.KS)}")
    print(f"  BM25 top k certified alike    {r['bm25_cert']:5d}   (alike in fact: {r['bm25_same']})")
    print(f"  vector top k certified alike  {r['vec_cert']:5d}   (alike in fact: {r['vec_same']})")
    print(f"  both certified: untouched     {r['both_cert']:5d}   (the run copied {r['copied']})")
    print(f"  certified but changed         {r['unsound']:5d}   (must be 0)")
    os._exit(0)  # the embedded engine may abort at interpreter exit (docs/exit-codes.md)


if __name__ == "__main__":
    main()
