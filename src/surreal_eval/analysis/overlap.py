"""How far two rankings of the same questions differ, without any judgment, and how much of what they
return nobody has judged.

    jaccard(a, b)                            |A ∩ B| / |A ∪ B| of two top-k id lists (1.0 when both are empty)
    rbo(a, b, p=0.9)                         rank-biased overlap RBO_ext (Webber, Moffat, Zobel 2010, eq. 32)
    run_overlap(db, report_a, report_b, ...) per retriever and shared k, two runs question by question -> [Overlap]
    retriever_overlap(db, report, a, b)      per k, two retrievers of one run question by question -> [Overlap]
    broken_misses(db, ...)                   for the questions a change broke, B's new top-k documents nobody judged

Rankings are the stored seval_ranking rows (fn::seval::run_rankings), questions with no judgment at all
included: overlap needs none, so it works on a question set straight from a log. Questions pair by id;
figures are given at every cutoff k both sides measured, each over the top k of both lists. A document is
*unjudged* for a question when the question's golden set has no judgment of it, relevant or not relevant,
as the set is now (labels added on the harness's side to an attached set included: fn::seval::golden_rows
merges them); its share is over the documents the ranking returned in its top k, and its mean over the
questions for which it returned any.

RBO: p is the persistence (the chance a reader goes on to the next rank); at p = 0.9 the first 10 ranks carry
about 86% of the weight. For two lists cut at depth k, RBO_ext extrapolates the agreement seen at k to the
unseen tail: identical lists score 1, disjoint 0. The `rbo` and `ranked-overlap` PyPI packages implement it
too, but neither is a dependency here; the formula is a dozen lines, checked by hand in tests/test_overlap.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


from ..model_base import Model
from ..errors import ConfigError, NotFound, Rejected
from ..models import RunReport
from ..runs.diagnose import default_golden, label_command
from ..store.connection import Database, record_str, to_record
from ..store.golden import golden_set

__all__ = ["DEFAULT_P", "Miss", "Overlap", "QuestionOverlap", "broken_misses", "for_retrievers", "for_runs", "jaccard", "rbo",
           "retriever_overlap", "run_overlap"]

#: RBO's persistence by default: the top 10 ranks carry about 86% of the weight.
DEFAULT_P = 0.9


def jaccard(a: Sequence[Any], b: Sequence[Any]) -> float:
    """|A ∩ B| / |A ∪ B| of the two lists' ids (order ignored); 1.0 when both are empty (they agree)."""
    x, y = set(a), set(b)
    return 1.0 if not (x or y) else len(x & y) / len(x | y)


def rbo(a: Sequence[Any], b: Sequence[Any], p: float = DEFAULT_P) -> float:
    """Extrapolated rank-biased overlap RBO_ext of two rankings (Webber et al. 2010, eq. 32; uneven lengths
    allowed): with S the shorter list (length s), L the longer (length l), X_d the overlap of the two lists'
    first d items (S whole once d > s) and A_d = X_d / d,
    RBO_ext = (1-p)/p [Σ_{d=1..l} X_d/d p^d + Σ_{d=s+1..l} X_s (d-s)/(s d) p^d] + [(X_l - X_s)/l + X_s/s] p^l.
    1.0 for identical lists (and for two empty ones), 0.0 for disjoint ones; a repeated id counts once."""
    if not 0 < p < 1:
        raise ConfigError(f"RBO's p must be between 0 and 1 (exclusive), got {p!r}")
    short, long_ = (list(dict.fromkeys(a)), list(dict.fromkeys(b)))
    if len(short) > len(long_):
        short, long_ = long_, short
    s, l = len(short), len(long_)  # noqa: E741 (s and l as in Webber, Moffat and Zobel's definition)
    if s == 0:
        return 1.0 if l == 0 else 0.0
    seen_s: set = set()
    seen_l: set = set()
    overlap, total, x_s = 0, 0.0, 0
    for d in range(1, l + 1):
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            overlap += (item_s in seen_l) + (item_l in seen_s) + (item_s == item_l)
            seen_s.add(item_s)
        else:
            overlap += item_l in seen_s
        seen_l.add(item_l)
        if d == s:
            x_s = overlap
        total += overlap / d * p**d
        if d > s:
            total += x_s * (d - s) / (s * d) * p**d
    return (1 - p) / p * total + ((overlap - x_s) / l + x_s / s) * p**l


class QuestionOverlap(Model):
    """One question's top k on side A and side B: Jaccard, RBO, and the share of each side's top k unjudged."""

    question: str
    jaccard: float
    rbo: float
    #: share of A's (B's) top k no judgment of the question covers; None when it returned nothing or its golden set cannot be read
    unjudged_a: float | None
    unjudged_b: float | None
    #: the question has at least one judgment (False: it is in no mean, only in these figures)
    labelled: bool


class Overlap(Model):
    """Side A against side B at cutoff k over the `n` questions both ranked: the means of each question's figures."""

    retriever: str  # the retriever of both runs, or "A→B" for two retrievers of one run
    k: int
    p: float
    n: int
    jaccard: float
    rbo: float
    unjudged_a: float | None
    unjudged_b: float | None
    questions: list[QuestionOverlap]


class Miss(Model):
    """A question a change broke (its score fell) and the documents new in B's top k that nobody judged:
    a "miss" that may be a missing label. `commands` label each one (`golden label`, add --not if it is not)."""

    retriever: str
    question: str
    metrics: list[str]  # the metrics@k on which B scored the question lower
    docs: list[str]
    commands: list[str]


# ---------------------------------------------------------------------------------------------
# Reading rankings and judgments
# ---------------------------------------------------------------------------------------------


def _golden_name(report: RunReport) -> str:
    return (report.params or {}).get("golden") or "seval_question"  # a run of 0.1 had one golden set


def rankings(db: Database, run: str, names: Iterable[str], questions: Iterable[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Run `run`'s stored rankings of the retrievers `names` (of the questions `questions`, record ids as text; None:
    all), by retriever then question id, ids as text."""
    return by_retriever(db.value(*rankings_call(run, names, questions)))


def rankings_call(run: str, names: Iterable[str], questions: Iterable[str] | None) -> tuple[str, dict[str, Any]]:
    """The statement that reads `rankings` of `run` (what `by_retriever` takes), for a caller that reads it beside others."""
    return ("RETURN fn::seval::run_rankings($run, $names, $questions)",
            {"run": to_record(run, "seval_run"), "names": list(names),
             "questions": None if questions is None else [to_record(q, q.partition(":")[0]) for q in questions]})


def by_retriever(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[str]]]:
    """fn::seval::run_rankings rows as {retriever: {question: ranked ids}}, as text."""
    found: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        found.setdefault(row["retriever"], {})[record_str(row["question"])] = [record_str(r) for r in row["ranked"]]
    return found


def judgments(db: Database, report: RunReport, questions: Sequence[str]) -> dict[str, set[str]] | None:
    """Every document judged (relevant or not) for each of `questions` in `report`'s golden set as it is now,
    harness-side labels merged; None when that golden set is no longer there to read."""
    name = _golden_name(report)
    try:
        chosen = golden_set(db, name)
    except (ConfigError, NotFound, Rejected):
        return None
    rows = db.value("RETURN fn::seval::judgments(fn::seval::golden_rows($g, NONE, $ids))",
                    {"g": chosen.model_dump(), "ids": [to_record(q, chosen.name) for q in questions]})
    found: dict[str, set[str]] = {q: set() for q in questions}
    for row in rows:
        found.setdefault(record_str(row["question"]), set()).add(record_str(row["doc"]))
    return found


def _unjudged(top: Sequence[str], judged: set[str] | None) -> float | None:
    if judged is None or not top:
        return None
    return sum(d not in judged for d in top) / len(top)


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that are not None (None when none is)."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def overlap_at(name: str, k: int, a: dict[str, list[str]], b: dict[str, list[str]], questions: Sequence[str],
               judged_a: dict[str, set[str]] | None, judged_b: dict[str, set[str]] | None,
               labelled: set[str], p: float = DEFAULT_P) -> Overlap | None:
    """Overlap of rankings `a` and `b` (by question id) at cutoff `k` over the `questions` both ranked (None: none)."""
    rows = []
    for q in questions:
        if q not in a or q not in b:
            continue
        top_a, top_b = a[q][:k], b[q][:k]
        rows.append(QuestionOverlap(
            question=q, jaccard=jaccard(top_a, top_b), rbo=rbo(top_a, top_b, p),
            unjudged_a=_unjudged(top_a, None if judged_a is None else judged_a.get(q, set())),
            unjudged_b=_unjudged(top_b, None if judged_b is None else judged_b.get(q, set())),
            labelled=q in labelled))
    if not rows:
        return None
    return Overlap(retriever=name, k=k, p=p, n=len(rows), jaccard=_mean([r.jaccard for r in rows]) or 0.0,
                   rbo=_mean([r.rbo for r in rows]) or 0.0, unjudged_a=_mean([r.unjudged_a for r in rows]),
                   unjudged_b=_mean([r.unjudged_b for r in rows]), questions=rows)


def _labelled(report: RunReport) -> set[str]:
    return {r.question for r in report.per_question or [] if r.labelled}


def _questions(report: RunReport) -> set[str]:
    return {r.question for r in report.per_question or []}


# ---------------------------------------------------------------------------------------------
# Public
# ---------------------------------------------------------------------------------------------


def run_overlap(db: Database, a: RunReport, b: RunReport, retrievers: Sequence[str], *, p: float = DEFAULT_P) -> list[Overlap]:
    """Per retriever of `retrievers` and every k both runs measured: run A's top k against run B's over the
    questions both ranked (judged or not)."""
    shared = sorted(_questions(a) & _questions(b))
    ranked_a, ranked_b = rankings(db, a.run, retrievers), rankings(db, b.run, retrievers)
    judged_a, judged_b = judgments(db, a, shared), judgments(db, b, shared)
    labelled = _labelled(a) & _labelled(b)
    found = []
    for name in retrievers:
        for k in (k for k in a.ks if k in b.ks):
            row = overlap_at(name, k, ranked_a.get(name, {}), ranked_b.get(name, {}), shared, judged_a, judged_b, labelled, p)
            if row is not None:
                found.append(row)
    return found


def retriever_overlap(db: Database, report: RunReport, a: str, b: str, *, p: float = DEFAULT_P) -> list[Overlap]:
    """At every k of the run: retriever `a`'s top k against retriever `b`'s over the questions both ranked."""
    ranked = rankings(db, report.run, [a, b])
    questions = sorted(_questions(report))
    judged = judgments(db, report, questions)
    found = []
    for k in report.ks:
        row = overlap_at(f"{a}→{b}", k, ranked.get(a, {}), ranked.get(b, {}), questions, judged, judged, _labelled(report), p)
        if row is not None:
            found.append(row)
    return found


def broken_misses(db: Database, b: RunReport, broken: Iterable[tuple[str, str, str, int, str]],
                  before: dict[str, dict[str, list[str]]] | None = None) -> list[Miss]:
    """For each question a change broke (given as (retriever of A, retriever of B, metric, k, question)): the
    documents of B's top k (at each broken k) that were not in A's top k and that no judgment of the question
    covers, with the `golden label` command for each, one Miss per retriever of B and question. `before` is A's
    rankings by retriever then question (default: B's run, for two retrievers of one run)."""
    broken = list(dict.fromkeys(broken))
    names = sorted({x for row in broken for x in row[:2]})
    after = rankings(db, b.run, names)
    before = after if before is None else before
    judged = judgments(db, b, sorted({row[4] for row in broken})) or {}
    default = default_golden(db)
    golden = _golden_name(b)
    misses: dict[tuple[str, str], Miss] = {}
    for name_a, name_b, metric, k, question in broken:
        old = set(before.get(name_a, {}).get(question, [])[:k])
        docs = [d for d in after.get(name_b, {}).get(question, [])[:k] if d not in old and d not in judged.get(question, set())]
        miss = misses.setdefault((name_b, question), Miss(retriever=name_b, question=question, metrics=[], docs=[], commands=[]))
        miss.metrics.append(metric)
        for doc in docs:
            if doc not in miss.docs:
                miss.docs.append(doc)
                miss.commands.append(label_command(question, doc, None if golden == default else golden))
    return [m for m in misses.values() if m.docs]
    return list(misses.values())


def _broken(rows: Sequence[Any], name_a: str | None = None, name_b: str | None = None) -> list[tuple[str, str, str, int, str]]:
    """(retriever of A, of B, metric, k, question) of every broken question of the PairedDelta `rows`."""
    return [(name_a or row.retriever, name_b or row.retriever, row.metric, int(row.metric.partition("@")[2]), d.question)
            for row in rows for d in row.broken]


def for_runs(db: Database, a: RunReport, b: RunReport, rows: Sequence[Any],
             retrievers: Iterable[str] | None = None, *, p: float = DEFAULT_P) -> tuple[list[Overlap], list[Miss]]:
    """What `compare_runs` adds to a Comparison of runs `a` and `b` (its RetrieverDelta `rows`): the overlap of every
    retriever compared (`retrievers` as given to it, None: every one both runs evaluated) and the misses of B."""
    if retrievers is None:
        names = [r for r in a.retrievers if r in b.retrievers]
    else:
        names = list(dict.fromkeys(n.strip() for text in retrievers for n in text.split(",") if n.strip()))
    broken = _broken(rows)
    before = rankings(db, a.run, sorted({x[0] for x in broken})) if broken else {}
    return run_overlap(db, a, b, names, p=p), broken_misses(db, b, broken, before) if broken else []


def for_retrievers(db: Database, report: RunReport, a: str, b: str, rows: Sequence[Any],
                   *, p: float = DEFAULT_P) -> tuple[list[Overlap], list[Miss]]:
    """What `compare_retrievers` adds: the overlap of retrievers `a` and `b` of one run, and the misses of `b`."""
    broken = _broken(rows, a, b)
    return retriever_overlap(db, report, a, b, p=p), broken_misses(db, report, broken) if broken else []

