"""The documents that broke a question: for each question whose score fell from run A to run B, the records
that entered its top k in B (and the ingest that brought each in, when one did) and the relevant records they
pushed out, with ranks.

    culprits(db, a, b, rows)    one Culprit per broken (retriever, question, k) of the PairedDelta `rows`

An entered record is attributed to an ingest made between the two runs into B's corpus table when that
ingest names it (seval_ingest.added / changed, which the harness's loads fill); otherwise to B's own ingests
when B's comparison of the corpus with its previous state found it added or changed (seval_run.since, by
per-record digests); otherwise it was already there and moved up (a removal, another record's change, or
the index answering otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ..models import RunReport
from ..store.connection import Database, record_str
from ..store.record_ids import to_record
from .overlap import rankings

__all__ = ["Culprit", "Entered", "Pushed", "culprits"]


class Entered(BaseModel):
    """A record in B's top k that was not in A's top k, at `rank` (1 = first) in B."""

    doc: str
    rank: int
    #: 'added' or 'changed' when an ingest between the runs brought it in; None: it was there and moved up
    how: str | None = None
    #: the ingest(s) that brought it in (one when an ingest row names it)
    ingests: list[str] = []


class Pushed(BaseModel):
    """A relevant record in A's top k that is not in B's: from rank `before` (A) to `after` (B; None: past B's list)."""

    doc: str
    before: int
    after: int | None


class Culprit(BaseModel):
    """One question one retriever ranked worse in B at cutoff k: the first metric@k that fell, the records that
    entered its top k and the relevant records pushed out."""

    retriever: str
    question: str
    metric: str
    before: float
    after: float
    #: B's list depth (a relevant record pushed past it is "out of the top <depth>")
    depth: int
    entered: list[Entered] = []
    pushed: list[Pushed] = []

    @property
    def text(self) -> str:
        """q42 recall@5 1.00 → 0.50: doc_991 (added in ingest seval_ingest:x) entered at rank 2, pushing doc_17 (relevant) from 5 to 6."""
        head = f"{self.question} {self.metric} {self.before:.2f} → {self.after:.2f} ({self.retriever})"
        came = [f"{e.doc} ({_origin(e)}) entered at rank {e.rank}" for e in self.entered]
        went = [f"{p.doc} (relevant) from {p.before} to {p.after}" if p.after is not None
                else f"{p.doc} (relevant) from {p.before} out of the top {self.depth}" for p in self.pushed]
        said = ", ".join(came) or "nothing new entered its top k"
        return f"{head}: {said}" + (f", pushing {', '.join(went)}" if went else "")


def _origin(e: Entered) -> str:
    if e.how is None:
        return "not ingested: moved up"
    if len(e.ingests) == 1:
        return f"{e.how} in ingest {e.ingests[0]}"
    return f"{e.how} in one of ingests {', '.join(e.ingests)}" if e.ingests else f"{e.how} since run A"


def culprits(db: Database, a: RunReport, b: RunReport, rows: Sequence[Any]) -> list[Culprit]:
    """For every question the PairedDelta `rows` (RetrieverDelta of runs `a` and `b`) list as broken: one Culprit
    per retriever, question and k (the first of its metrics that fell), largest fall first."""
    broken: dict[tuple[str, str, int], Culprit] = {}
    for row in rows:
        k = int(row.metric.partition("@")[2])
        for d in row.broken:
            broken.setdefault((row.retriever, d.question, k), Culprit(
                retriever=row.retriever, question=d.question, metric=row.metric, before=d.before, after=d.after, depth=0))
    if not broken:
        return []
    names = sorted({key[0] for key in broken})
    ranked_a, ranked_b = rankings(db, a.run, names), rankings(db, b.run, names)
    relevant = _relevant(db, b.run, sorted({key[1] for key in broken}))
    origins = _origins(db, a, b)
    found = []
    for (retriever, question, k), culprit in broken.items():
        before, after = ranked_a.get(retriever, {}).get(question, []), ranked_b.get(retriever, {}).get(question, [])
        top_a, top_b = before[:k], after[:k]
        culprit.depth = len(after)
        culprit.entered = [Entered(doc=doc, rank=rank, **origins.get(doc, {}))
                           for rank, doc in enumerate(top_b, 1) if doc not in top_a]
        culprit.pushed = [Pushed(doc=doc, before=rank, after=after.index(doc) + 1 if doc in after else None)
                          for rank, doc in enumerate(top_a, 1) if doc in relevant.get(question, set()) and doc not in top_b]
        found.append(culprit)
    return sorted(found, key=lambda c: (c.after - c.before, c.retriever, c.question))


def _relevant(db: Database, run: str, questions: list[str]) -> dict[str, set[str]]:
    """The relevant records run `run` scored each of `questions` against, as text."""
    rows = db.value("RETURN fn::seval::run_relevant($run)", {"run": to_record(run, "seval_run")})
    wanted = set(questions)
    return {record_str(r["question"]): {record_str(x) for x in r["relevant"]} for r in rows if record_str(r["question"]) in wanted}


def _origins(db: Database, a: RunReport, b: RunReport) -> dict[str, dict[str, Any]]:
    """Each record an ingest into B's corpus made between runs A and B brought in: {how, ingests}."""
    corpus = (b.params or {}).get("corpus")
    run = db.value("RETURN fn::seval::run_origin($r)", {"r": to_record(b.run, "seval_run")}) or {}
    own = [record_str(i) for i in run.get("ingests") or []]
    found: dict[str, dict[str, Any]] = {}
    # what B found by the records' digests (B's corpus against its previous state)
    ids = (run.get("since") or {}).get("ids") or {}
    for how, key in (("changed", "changed"), ("added", "added")):
        for doc in ids.get(key) or []:
            found[record_str(doc)] = {"how": how, "ingests": own}
    # what the ingest rows between the runs name, oldest first, so the latest ingest to touch a record names it
    named = db.value("RETURN fn::seval::ingests_naming($c, $from, $to)",
                     {"c": corpus, "from": a.created_at, "to": b.created_at}) if corpus and a.created_at and b.created_at else []
    for ingest in named:
        for how in ("added", "changed"):
            for doc in ingest.get(how) or []:
                found[record_str(doc)] = {"how": how, "ingests": [record_str(ingest["id"])]}
    return found
