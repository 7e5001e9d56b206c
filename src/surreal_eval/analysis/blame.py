"""The documents that broke a question: for each question whose score fell from run A to run B, the records
that entered its top k in B (and the ingest that brought each in, when one did) and the relevant records they
pushed down or out, with ranks.

    culprits(db, a, b, rows)    one Culprit per broken (retriever, question, k) of the PairedDelta `rows`

An entered record is attributed to an ingest made between the two runs into B's corpus table when that
ingest names it (seval_ingest.added / changed, which the harness's loads fill); otherwise to B's own ingests
when B's comparison of the corpus with its previous state found it added or changed (seval_run.since, by
per-record digests); otherwise it was already there and moved up (a removal, another record's change, or
the index answering otherwise).

A relevant record is *pushed* when it stood in A's top k and B ranks it lower (in its top k or below) or not at all. A fused ranking
(hybrid and its kin) can fall with nothing new in its own top k: a record an ingest brought in entered one of
the lists it fuses and pushed a relevant record down there. So for a fused retriever each of its lists that the
runs also ranked on its own (the plain `bm25` or `vector` retriever: its stored ranking is the top `depth` the
fusion read) is read too, and what an ingest brought into it, and the relevant records it pushed down or out,
are named under `inputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from ..model_base import Model
from ..models import RunReport
from ..store.connection import Database, record_str
from ..store.record_ids import to_record
from ..store.registry import registry
from .overlap import by_retriever, rankings_call

__all__ = ["Culprit", "Entered", "InputList", "Pushed", "culprits"]


class Entered(Model):
    """A record in B's top k that was not in A's top k, at `rank` (1 = first) in B."""

    doc: str
    rank: int
    #: 'added' or 'changed' when an ingest between the runs brought it in; None: it was there and moved up
    how: str | None = None
    #: the ingest(s) that brought it in (one when an ingest row names it)
    ingests: list[str] = []


class Pushed(Model):
    """A relevant record in A's top k that B ranks lower: from rank `before` (A) to `after` (B; None: past B's list)."""

    doc: str
    before: int
    after: int | None


class InputList(Model):
    """One list a fused ranking reads, as the runs ranked it on its own (retriever `list`, `depth` deep in B): the
    records an ingest brought into it and the relevant records that fell in it or out of it."""

    list: str
    depth: int
    entered: list[Entered] = []
    pushed: list[Pushed] = []

    @property
    def text(self) -> str:
        """in its vector list, doc_991 (added in ingest seval_ingest:x) entered at rank 6, pushing doc_25 (relevant) from 10 out of the top 10"""
        return f"in its {self.list} list, " + _story(self.entered, self.pushed, self.depth, "nothing an ingest brought in entered it")


class Culprit(Model):
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
    #: a fused retriever's lists as the runs ranked them on their own, where an ingest brought a record into one or
    #: a relevant record fell in it
    inputs: list[InputList] = []

    @property
    def text(self) -> str:
        """q42 recall@5 1.00 → 0.50: doc_991 (added in ingest seval_ingest:x) entered at rank 2, pushing doc_17 (relevant) from 5 to 6."""
        head = f"{self.question} {self.metric} {self.before:.2f} → {self.after:.2f} ({self.retriever})"
        said = _story(self.entered, self.pushed, self.depth, "nothing new entered its top k")
        return "; ".join([f"{head}: {said}", *(i.text for i in self.inputs)])


def _story(entered: list[Entered], pushed: list[Pushed], depth: int, nothing: str) -> str:
    """'X (added in ingest I) entered at rank 2, pushing Y (relevant) from 5 to 6'; when none entered, `nothing`
    and '; Y (relevant) fell from 5 to 6'."""
    came = [f"{e.doc} ({_origin(e)}) entered at rank {e.rank}" for e in entered]
    verb = "" if came else "fell "
    went = [f"{p.doc} (relevant) {verb}from {p.before} " + (f"to {p.after}" if p.after is not None else f"out of the top {depth}")
            for p in pushed]
    if came:
        return ", ".join(came) + (f", pushing {', '.join(went)}" if went else "")
    return nothing + (f"; {', '.join(went)}" if went else "")


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
    inputs = _inputs(db, names, set(a.retrievers) & set(b.retrievers))
    read = sorted(set(names) | {name for lists in inputs.values() for name in lists})
    questions = sorted({key[1] for key in broken})
    # what the culprits are found from, read side by side: both runs' rankings, B's labels, what B found changed and
    # the ingests between the runs
    naming = _naming_call(a, b)
    calls = [rankings_call(a.run, read, questions), rankings_call(b.run, read, questions), _relevant_call(b.run, questions),
             ("RETURN fn::seval::run_origin($r)", {"r": to_record(b.run, "seval_run")}), *([naming] if naming else [])]
    done = [result[-1] for result in db.query_many(calls, concurrency=2)]
    ranked_a, ranked_b = by_retriever(done[0]), by_retriever(done[1])
    relevant = {record_str(r["question"]): {record_str(x) for x in r["relevant"]} for r in done[2]}
    origins = _origins(done[3] or {}, done[4] if naming else [])
    found = []
    for (retriever, question, k), culprit in broken.items():
        before, after = ranked_a.get(retriever, {}).get(question, []), ranked_b.get(retriever, {}).get(question, [])
        top_a, top_b = before[:k], after[:k]
        culprit.depth = len(after)
        culprit.entered = [Entered(doc=doc, rank=rank, **origins.get(doc, {}))
                           for rank, doc in enumerate(top_b, 1) if doc not in top_a]
        mine = relevant.get(question, set())
        culprit.pushed = _fell(top_a, after, mine)
        for name in inputs.get(retriever, []):
            was, now = ranked_a[name].get(question), ranked_b[name].get(question)
            if was is None or now is None:
                continue
            came = [Entered(doc=doc, rank=rank, **origins[doc]) for rank, doc in enumerate(now, 1) if doc not in was and doc in origins]
            went = _fell(was, now, mine)
            if came or went:
                culprit.inputs.append(InputList(list=name, depth=len(now), entered=came, pushed=went))
        found.append(culprit)
    return sorted(found, key=lambda c: (c.after - c.before, c.retriever, c.question))


def _fell(before: list[str], after: list[str], relevant: set[str]) -> list[Pushed]:
    """The relevant records of ranking `before` that ranking `after` ranks lower or not at all."""
    fell = []
    for rank, doc in enumerate(before, 1):
        now = after.index(doc) + 1 if doc in after else None
        if doc in relevant and (now is None or now > rank):
            fell.append(Pushed(doc=doc, before=rank, after=now))
    return fell


def _inputs(db: Database, names: list[str], ranked: set[str]) -> dict[str, list[str]]:
    """For each fused retriever of `names`: the retrievers of `ranked` (both runs' retrievers) that rank one of the
    lists it fuses on its own, as it is (the plain bm25 and vector retrievers)."""
    rows = {r.name: r for r in registry(db)}
    plain = {r.lists[0]: r.name for r in rows.values() if r.kind == "list" and r.fusion == "none" and r.name in ranked}
    return {name: [plain[lst] for lst in rows[name].lists if lst in plain]
            for name in names if name in rows and rows[name].kind == "fused"}


def _relevant_call(run: str, questions: list[str]) -> tuple[str, dict[str, Any]]:
    """The statement that reads the relevant records run `run` scored each of `questions` against."""
    return ("RETURN fn::seval::run_relevant($run, $questions)",
            {"run": to_record(run, "seval_run"), "questions": [to_record(q, q.partition(":")[0]) for q in questions]})


def _naming_call(a: RunReport, b: RunReport) -> tuple[str, dict[str, Any]] | None:
    """The statement that reads the ingest rows into B's corpus between runs A and B, oldest first; None when B has no
    corpus table or a run no time."""
    corpus = (b.params or {}).get("corpus")
    if not (corpus and a.created_at and b.created_at):
        return None
    return ("RETURN fn::seval::ingests_naming($c, $from, $to)", {"c": corpus, "from": a.created_at, "to": b.created_at})


def _origins(run: dict[str, Any], named: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each record an ingest into B's corpus made between runs A and B brought in, {how, ingests}: from B's origin `run`
    (fn::seval::run_origin) and the ingest rows between the runs `named` (fn::seval::ingests_naming)."""
    own = [record_str(i) for i in run.get("ingests") or []]
    found: dict[str, dict[str, Any]] = {}
    # what B found by the records' digests (B's corpus against its previous state)
    ids = (run.get("since") or {}).get("ids") or {}
    for how, key in (("changed", "changed"), ("added", "added")):
        for doc in ids.get(key) or []:
            found[record_str(doc)] = {"how": how, "ingests": own}
    # what the ingest rows between the runs name, oldest first, so the latest ingest to touch a record names it
    for ingest in named or []:
        for how in ("added", "changed"):
            for doc in ingest.get(how) or []:
                found[record_str(doc)] = {"how": how, "ingests": [record_str(ingest["id"])]}
    return found
