"""Whether an approximate vector index may have moved results between two runs that record nothing different.

    rebuilt_index_notes(db, a, b, compared, overlap)  one line when a compared retriever searches an HNSW
                                                      index that was built again between the runs -> [str]

An HNSW graph is approximate, and building it again over the same vectors (a reload of identical
data, the index defined again) can give another graph, which answers some queries otherwise. The corpus
fingerprint does not see it (same rows, same vectors), so each run records when the harness last
built the graph (`corpus.vector_built`, surql/corpus_indexes.surql); a run recorded before that is
judged by the loads into its corpus between the two runs (`seval_ingest`). When neither tells, but an
HNSW retriever's rankings moved while nothing recorded differs, the note says the graph may have
been built again outside the harness (REBUILD INDEX by hand, a table attached in place and reloaded
by its owner).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..models import RunReport
from ..store.connection import Database
from ..store.registry import registry
from .changes import Change
from .overlap import Overlap

__all__ = ["rebuilt_index_notes", "HOW_TO_CHECK"]

#: How to tell a moved result of the index from one of the retriever: the index's own recall, or no index at all.
HOW_TO_CHECK = ("`surreal-eval evaluate --ann-check` measures the index's own recall against an exact scan, and "
                "`--retriever vector_exact` ranks with no index at all")


def rebuilt_index_notes(db: Database, a: RunReport, b: RunReport, compared: Sequence[str], overlap: Sequence[Overlap],
                        changes: Sequence[Change]) -> list[str]:
    """One line when a retriever of `compared` reads the HNSW (approximate) vector list of a corpus whose graph
    was built again between runs `a` and `b`, or whose rankings moved (`overlap` below 1) while `changes` is empty."""
    corpus = (b.params or {}).get("corpus") or "seval_article"
    if ((a.params or {}).get("corpus") or "seval_article") != corpus:
        return []  # another corpus: a recorded change already says so
    approximate = _approximate(db, compared, a, b)
    if not approximate:
        return []
    names = ", ".join(approximate)
    built_a, built_b = ((r.corpus or {}).get("vector_built") for r in (a, b))
    if built_a is not None and built_b is not None and built_a != built_b:
        return [f"the HNSW index of {corpus} was built again between the runs (A searched the graph built "
                f"{_when(built_a)}, B the one built {_when(built_b)}): an approximate search can rank otherwise on a "
                f"rebuilt graph over the same vectors, so {names} may have moved for that alone; {HOW_TO_CHECK}"]
    if (built_a is None or built_b is None) and a.created_at and b.created_at:
        since, until = sorted((a.created_at, b.created_at))
        loads = db.value("RETURN fn::seval::ingests_between($corpus, $since, $until)",
                         {"corpus": corpus, "since": since, "until": until})
        if loads:
            return [f"{corpus} was loaded {loads} time{'s' if loads != 1 else ''} between the runs, which builds its HNSW "
                    f"index again: an approximate search can rank otherwise on a rebuilt graph over the same vectors, so "
                    f"{names} may have moved for that alone; {HOW_TO_CHECK}"]
    moved = [o.retriever for o in overlap if o.retriever in approximate and o.rbo < 1]
    if moved and not changes:
        return [f"{', '.join(dict.fromkeys(moved))} ranked otherwise though nothing recorded differs: their HNSW index may "
                f"have been built again outside the harness (the table reloaded, the index defined again), and an "
                f"approximate search can rank otherwise on a rebuilt graph over the same vectors; {HOW_TO_CHECK}"]
    return []


def _approximate(db: Database, compared: Sequence[str], a: RunReport, b: RunReport) -> list[str]:
    """The retrievers of `compared` whose registry row reads the 'vector' list (the HNSW index), but those
    either run supplied its own ranking for."""
    supplied = {n for r in (a, b) for n in ((r.params or {}).get("supplied") or {}).get("names") or []}
    entries = {r.name: r for r in registry(db)}
    return [n for n in compared if n in entries and n not in supplied and "vector" in entries[n].lists]


def _when(at: object) -> str:
    """A build time to the millisecond (two builds of one load are a second apart or less)."""
    return f"{at:%Y-%m-%d %H:%M:%S}.{at.microsecond // 1000:03d}" if isinstance(at, datetime) else str(at)
