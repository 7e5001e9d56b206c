"""F itself: the BM25 floor under each analyzer, on the same data, and the quality of BM25 under each.

Used by cost_floor.py (the "Analyzers" table). For each analyzer, on the database's `seval_article`
table: its BM25 index is defined again with that analyzer (timed: the index build), then each
question's BM25 candidate list alone (fn::seval::bm25_candidates at the depth) and the whole floor (BM25
and KNN, fn::bench_floor) are timed, the analyzers alternating `repeats` times (the mean is kept:
the order cannot favour one), and one `bm25` evaluation at k = 10 gives nDCG@10 and recall@10.
The index ends with the analyzer it had.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from surreal_eval import Database, evaluate
from surreal_eval.store.analyzers import index_analyzer, record_analyzers
from surreal_eval.store.schema import statement

__all__ = ["ANALYZERS", "AnalyzerRow", "floor_ratio", "format_analyzers", "measure_analyzers"]

ANALYZERS = ("seval_english", "seval_english_stop")
_INDEX = "DEFINE INDEX OVERWRITE seval_article_content ON seval_article FIELDS bm25_text FULLTEXT ANALYZER {{analyzer}} BM25;"


@dataclass
class AnalyzerRow:
    analyzer: str
    questions: int
    index_seconds: float
    bm25: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    ndcg10: float = 0.0
    recall10: float = 0.0

    def ms(self, what: str) -> float:
        values = getattr(self, what)
        return sum(values) / len(values) / max(self.questions, 1) * 1000


def _define(db: Database, analyzer: str) -> float:
    started = time.perf_counter()
    db.query(statement(_INDEX, analyzer=analyzer))
    seconds = time.perf_counter() - started
    record_analyzers(db)
    return seconds


def measure_analyzers(db: Database, ids: list[Any], depth: int, run_many: Callable[[list], list], batches: Callable,
                      log: Callable[[str], None], repeats: int = 2) -> list[AnalyzerRow]:
    """One AnalyzerRow per analyzer of ANALYZERS on the questions `ids` (module docstring)."""
    had = index_analyzer(db, "seval_article")
    rows = {a: AnalyzerRow(a, len(ids), 0.0) for a in ANALYZERS}

    def calls(sql: str) -> list:
        return [(sql, {"ids": b, "depth": depth}) for b in batches(ids)]

    bm25 = calls("RETURN math::sum((SELECT text FROM $ids).map(|$q| array::len(fn::seval::bm25_candidates('seval_article', $q.text, $depth))))")
    floor = calls("RETURN fn::bench_floor('seval_article', $ids, $depth)")
    for round_ in range(repeats):
        for analyzer in ANALYZERS if round_ % 2 == 0 else reversed(ANALYZERS):
            row = rows[analyzer]
            log(f"analyzers: {analyzer}, round {round_ + 1} of {repeats}")
            row.index_seconds = _define(db, analyzer)
            for name, sql in (("bm25", bm25), ("floor", floor)):
                started = time.perf_counter()
                run_many(sql)
                getattr(row, name).append(time.perf_counter() - started)
            if round_ == 0:
                report = evaluate(db, ks=[10], retrievers=["bm25"], intervals=False, label=f"analyzer {analyzer}")
                (mean,) = [r for r in report.results if r.retriever == "bm25" and r.k == 10]
                row.ndcg10, row.recall10 = mean.ndcg, mean.recall
    if had and had != analyzer:  # the one defined last
        _define(db, had)
    return [rows[a] for a in ANALYZERS]


def format_analyzers(name: str, documents: int, depth: int, rows: list[AnalyzerRow]) -> str:
    lines = [f"### Analyzers: {name}, {documents:,} documents, {rows[0].questions:,} questions, depth {depth}", "",
             "| analyzer | BM25 ms / question | F ms / question (BM25 + KNN) | BM25 index build s | BM25 nDCG@10 | BM25 recall@10 |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.analyzer} | {r.ms('bm25'):.1f} | {r.ms('floor'):.1f} | {r.index_seconds:.1f} | {r.ndcg10:.3f} | {r.recall10:.3f} |")
    base, new = rows[0], rows[-1]
    lines += ["", f"{new.analyzer} / {base.analyzer}: BM25 {new.ms('bm25') / base.ms('bm25'):.2f}, F {new.ms('floor') / base.ms('floor'):.2f};"
              f" nDCG@10 {new.ndcg10 - base.ndcg10:+.3f}, recall@10 {new.recall10 - base.recall10:+.3f}."]
    return "\n".join(lines)


def floor_ratio(rows: list[AnalyzerRow]) -> float:
    """F under the last analyzer (seval_english_stop) over F under the first (seval_english)."""
    return rows[-1].ms("floor") / rows[0].ms("floor")
