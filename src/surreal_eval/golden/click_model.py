"""Labels from clicks: a click model chosen by the log (golden/click_models.py), or clicks over expected clicks.

`ClickModel.name` says which: `auto` (the default) fits PBM, the cascade model, UBM and COEC on three
quarters of the log and takes the one that predicts the held-out quarter best; a name forces one. A
log under MIN_IMPRESSIONS_TO_CHOOSE impressions is too small to hold a part out: auto uses COEC there
and says so. A fitted model's relevance of a pair is its attractiveness over the mean attractiveness
of what the log shows (click_models.relevance), and replaces COEC in the rule for a label below
(`threshold`, default 1: more attractive than the average document shown).

Satisfied clicks (a fitted model, not COEC): a click whose dwell lasted `satisfied_dwell` seconds or more
(default 30; a click with no dwell given counts) says the user found what they wanted; a click that counts
but is shorter may be a disappointment. A fitted model measures each pair's relevance twice: on the clicks
that count, and refitted (the same model) on the satisfied clicks alone. A pair clears the threshold when
its relevance on satisfied clicks does, or its relevance on the clicks that count does and at least one of
its clicks was satisfied: a pair whose every click was short is no label however often it was clicked. A
log with no dwell is labelled as on its clicks alone (every click is satisfied there).

COEC:

Users click what is shown high more often whatever it is (position bias), so a click's worth depends on
where the document was shown. COEC measures each (query, document) pair against what its positions
would earn an average document:

    CTR(r)        = counted clicks at rank r / impressions with a document at rank r, over the whole log:
                    the probability that whatever is shown at rank r gets clicked
    expected(q,d) = sum over the impressions of query q that showed d of CTR(rank d was shown at)
    COEC(q,d)     = counted clicks on d for q / expected(q,d)

COEC 1 means d was clicked exactly as often as an average document at the same positions; above 1 more
than its positions explain. A pair becomes a label (`ClickModel.label`) when it was shown at least
`min_impressions` times, clicked by at least `min_users` distinct users (sessions where the log has no
user; impressions where it has neither: one user's repeated clicks never make a label alone) and its
COEC is at least `threshold` (default 1.0: clicked more than its positions explain).

Dwell: a click whose dwell is below `min_dwell` seconds (default 5) does not count as a click anywhere
(a bounce). A label's grade is 2 when at least half of its counted clicks with a dwell lasted
`satisfied_dwell` seconds or more (default 30, a satisfied click), else 1; with no dwell given, 1.

Shown but never clicked: left unjudged (a document seldom examined low in the list says nothing), unless
`unclicked_not_relevant`, when a document shown at least `min_impressions` times and never clicked is
judged not relevant (grade 0). `position_correction=False` replaces CTR(r) with the log's mean CTR at
every rank (plain click-through rate against the average): an ablation, to measure what the
correction buys.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from ..model_base import Model
from .click_models import MIN_IMPRESSIONS_TO_CHOOSE, ClickEvents, Fit, Session, choose, fit_model, relevance
from .search_log import Impression, normalise

__all__ = ["ClickModel", "ClickModelName", "LogLabels", "PairStats", "derive_labels", "label_log", "rank_ctr"]

ClickModelName = Literal["auto", "pbm", "cascade", "ubm", "coec"]


class ClickModel(Model):
    """Which click model, and the thresholds of a label (module docstring)."""

    name: ClickModelName = "auto"
    min_impressions: int = Field(default=3, ge=1)
    min_users: int = Field(default=2, ge=1)
    threshold: float = Field(default=1.0, ge=0)
    min_dwell: float = Field(default=5.0, ge=0)
    satisfied_dwell: float = Field(default=30.0, ge=0)
    #: standard errors a pair's relevance must clear the threshold by (0: the estimate itself, as COEC was)
    margin: float = Field(default=0.5, ge=0)
    unclicked_not_relevant: bool = False
    position_correction: bool = True

    def counted(self, impression: Impression) -> list[str]:
        """The clicks of an impression that count: those with no dwell, or a dwell of at least min_dwell."""
        dwell = impression.dwell or {}
        return [d for d in impression.clicked if dwell.get(d, self.min_dwell) >= self.min_dwell]

    def satisfied(self, impression: Impression) -> list[str]:
        """The counted clicks of an impression that were satisfied: no dwell given, or one of satisfied_dwell or more."""
        dwell = impression.dwell or {}
        return [d for d in self.counted(impression) if dwell.get(d, self.satisfied_dwell) >= self.satisfied_dwell]


@dataclass
class PairStats:
    """What the log says about one (normalised query, document) pair."""

    impressions: int = 0
    clicks: int = 0
    expected: float = 0.0
    users: set[str] = field(default_factory=set)
    dwells: list[float] = field(default_factory=list)
    #: counted clicks that were satisfied (dwell of at least satisfied_dwell, or no dwell given)
    satisfied: int = 0
    #: the chosen click model's relevance of the pair on the clicks that count (None: COEC's, `coec`)
    relevance: float | None = None
    #: the same model's relevance of the pair refitted on satisfied clicks alone (None: COEC's, `coec`)
    satisfied_relevance: float | None = None

    @property
    def coec(self) -> float:
        return self.clicks / self.expected if self.expected > 0 else 0.0

    def score(self, margin: float) -> float:
        """What the threshold is held against: the click model's relevance (its margin taken) on satisfied clicks,
        or on the clicks that count when one of them was satisfied, whichever is higher; else COEC less `margin`
        standard errors (sqrt(clicks) / expected)."""
        if self.relevance is not None:
            on_satisfied = self.satisfied_relevance if self.satisfied_relevance is not None else self.relevance
            return max(on_satisfied, self.relevance) if self.satisfied else on_satisfied
        return self.coec - margin * math.sqrt(self.clicks) / self.expected if self.expected > 0 else 0.0


def rank_ctr(impressions: Iterable[Impression], model: ClickModel) -> dict[int, float]:
    """CTR(r) for every rank r (1 = first) shown in the log: counted clicks at r / impressions reaching r."""
    shown: dict[int, int] = defaultdict(int)
    clicked: dict[int, int] = defaultdict(int)
    for impression in impressions:
        counted = set(model.counted(impression))
        for rank, doc in enumerate(impression.shown, start=1):
            shown[rank] += 1
            clicked[rank] += doc in counted
    if not model.position_correction:
        mean = sum(clicked.values()) / sum(shown.values()) if shown else 0.0
        return {rank: mean for rank in shown}
    return {rank: clicked[rank] / shown[rank] for rank in shown}


def pair_stats(impressions: list[Impression], model: ClickModel, queries: set[str] | None = None) -> dict[str, dict[str, PairStats]]:
    """{normalised query: {document: PairStats}} for the queries `queries` (None: all), CTR(r) taken over the whole log."""
    ctr = rank_ctr(impressions, model)
    found: dict[str, dict[str, PairStats]] = defaultdict(lambda: defaultdict(PairStats))
    for impression in impressions:
        query = normalise(impression.query)
        if queries is not None and query not in queries:
            continue
        counted, satisfied = set(model.counted(impression)), set(model.satisfied(impression))
        for rank, doc in enumerate(impression.shown, start=1):
            pair = found[query][doc]
            pair.impressions += 1
            pair.expected += ctr[rank]
            if doc in counted:
                pair.clicks += 1
                pair.satisfied += doc in satisfied
                pair.users.add(impression.who())
                if impression.dwell and doc in impression.dwell:
                    pair.dwells.append(impression.dwell[doc])
    return found


def _grade(pair: PairStats, model: ClickModel) -> int:
    if not pair.dwells:
        return 1
    satisfied = sum(d >= model.satisfied_dwell for d in pair.dwells)
    return 2 if 2 * satisfied >= len(pair.dwells) else 1


class LogLabels(Model):
    """The labels a log earns and how: the click model used, why, and every model's held-out fit (best first)."""

    #: {normalised query: ({document: grade}, [documents judged not relevant])}
    derived: dict[str, tuple[dict[str, int], list[str]]]
    #: {normalised query: {document: relevance}} of the labels (COEC under coec)
    scores: dict[str, dict[str, float]]
    model: str
    #: why this model: "forced", "best held-out fit" or why auto could not choose
    chosen_by: str
    fits: list[Fit] = []


def _sessions(impressions: list[Impression], model: ClickModel, satisfied: bool = False) -> list[Session]:
    """The impressions as the click models read them: their counted clicks, or only the satisfied ones."""
    clicks = model.satisfied if satisfied else model.counted
    return [(normalise(i.query), i.shown, set(clicks(i))) for i in impressions]


def label_log(impressions: list[Impression], model: ClickModel, queries: set[str] | None = None, seed: int = 0
              ) -> LogLabels:
    """The labels of the queries `queries` (None: all) under `model.name` fitted to the whole log; auto first
    chooses by held-out fit on a `seed`ed split (module docstring)."""
    fits: list[Fit] = []
    name, chosen_by = model.name, "forced"
    if name == "auto":
        if len(impressions) < MIN_IMPRESSIONS_TO_CHOOSE:
            name, chosen_by = "coec", f"the log's {len(impressions)} impressions are too few to hold a quarter out " \
                                      f"(auto needs {MIN_IMPRESSIONS_TO_CHOOSE}): COEC, not chosen by fit"
        else:
            fits = choose(_sessions(impressions, model), seed)
            name, chosen_by = fits[0].model, "best held-out log-likelihood"
    elif len(impressions) >= MIN_IMPRESSIONS_TO_CHOOSE and (name != "coec" or model.position_correction):
        fits = choose(_sessions(impressions, model), seed, (name,))
    stats = pair_stats(impressions, model, queries)
    if name != "coec":
        events = ClickEvents.of(_sessions(impressions, model))
        index = {pair: n for n, pair in enumerate(events.pairs)}
        satisfied = ClickEvents.of(_sessions(impressions, model, satisfied=True), index)
        scores = dict(zip(events.pairs, relevance(fit_model(name, events), model.margin).tolist()))
        on_satisfied = dict(zip(satisfied.pairs, relevance(fit_model(name, satisfied), model.margin).tolist()))
        for query, pairs in stats.items():
            for doc, pair in pairs.items():
                pair.relevance, pair.satisfied_relevance = scores[(query, doc)], on_satisfied[(query, doc)]
    derived = _labels(stats, model)
    kept = {q: {d: stats[q][d].score(model.margin) for d in labels} for q, (labels, _) in derived.items()}
    return LogLabels(derived=derived, scores=kept, model=name, chosen_by=chosen_by, fits=fits)


def derive_labels(impressions: list[Impression], model: ClickModel, queries: set[str] | None = None, seed: int = 0
                  ) -> dict[str, tuple[dict[str, int], list[str]]]:
    """{normalised query: ({document: grade}, [documents judged not relevant])} for the queries `queries`
    (None: all), each query's documents in the order first shown; a query with neither is absent."""
    return label_log(impressions, model, queries, seed).derived


def _labels(stats: dict[str, dict[str, PairStats]], model: ClickModel) -> dict[str, tuple[dict[str, int], list[str]]]:
    derived: dict[str, tuple[dict[str, int], list[str]]] = {}
    for query, pairs in stats.items():
        labels = {doc: _grade(p, model) for doc, p in pairs.items()
                  if p.impressions >= model.min_impressions and len(p.users) >= model.min_users and p.clicks
                  and p.score(model.margin) >= model.threshold}
        unclicked = [doc for doc, p in pairs.items()
                     if model.unclicked_not_relevant and p.clicks == 0 and p.impressions >= model.min_impressions]
        if labels or unclicked:
            derived[query] = (labels, unclicked)
    return derived
