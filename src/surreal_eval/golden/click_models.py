"""Click models fitted to a search log, and the one the log itself chooses by held-out fit.

Every model explains a click on document d shown for query q at rank r as an examination of rank r
times the attractiveness a(q,d) of the document; they differ in what makes a user examine a rank:

- `pbm`, the position-based model: rank r is examined with probability g(r), whatever else happened.
  Fitted by expectation-maximisation (Chuklin, Markov and de Rijke, *Click Models for Web Search*, 4.2):
  a click says examined and attracted; a skip is examined-and-not-attracted or not examined, split by
  their posterior probabilities  P(attracted | skip) = a(1-g)/(1-ag)  and  P(examined | skip) = g(1-a)/(1-ag);
  a(q,d) and g(r) are then the mean posteriors over the log, and the two steps repeat.
- `cascade`, the cascade model (Craswell et al. 2008): the user reads down the list and stops at the first
  click; every rank down to it is examined, none after. Its maximum-likelihood a(q,d) is closed form: clicks
  on d as the first click over the impressions where d was at or above the first click (all of them when
  nothing was clicked). A click after the first is impossible under the model (probability 1e-6).
- `ubm`, the user browsing model (Dupret and Piwowarski 2008): rank r is examined with probability g(r, k),
  k the distance back to the previous click (0: no click yet). Chosen over the DBN because it covers what
  the DBN's satisfaction covers in a log (users who stop or go on reading after a click) with the PBM's
  closed-form E-step (the previous click is observed), so the same few lines of EM fit it.
- `coec`, clicks over expected clicks (golden/click_model.py): a(q,d) = COEC(q,d) and the click probability
  COEC(q,d) x CTR(r), CTR(r) the log's click-through rate at rank r.

Relevance: a model's a(q,d) divided by the mean attractiveness of what the log shows (over every
impression, so a frequent pair weighs more): 1 means as attractive as the average document shown, as COEC
1 means clicked as often as its positions explain (COEC is this ratio already). The ratio does not depend
on the scale EM leaves free in PBM and UBM (a·g = (a·c)·(g/c)).

Held-out fit (`choose`): the log's impressions are split, seeded, into a training part and a held-out
quarter; each model is fitted on the first and scored on the second: the log-likelihood per impression
(the sum over its ranks of ln P(click or skip at r | the clicks above r)) and the perplexity (2 to the
minus the mean log2 of those probabilities, per rank, averaged over ranks: 1 is a perfect prediction, 2
a coin toss). A pair unseen in training takes the training's mean attractiveness. `auto` takes the
model with the highest held-out log-likelihood, then refits it on the whole log for the labels.
"""

from __future__ import annotations

import random
from ..model_base import Model
from dataclasses import dataclass

import numpy as np

__all__ = ["MODELS", "ClickEvents", "Fit", "Fitted", "Session", "choose", "fit_model", "held_out_fit", "relevance", "split",
           "standard_error"]

#: one impression as the models read it: (normalised query, ids shown best first, ids clicked that count)
Session = tuple[str, list[str], set[str]]

#: the click models `auto` chooses among, in the order they are printed
MODELS = ("pbm", "cascade", "ubm", "coec")
EPSILON = 1e-6
ITERATIONS = 60
#: auto needs this many impressions to hold a quarter out; below it COEC is used and the fit is not measured
MIN_IMPRESSIONS_TO_CHOOSE = 40
HELD_OUT = 0.25


@dataclass
class ClickEvents:
    """A log as arrays, one entry per (impression, rank): the pair shown, its rank (0 = first), whether it was
    clicked, the distance back to the previous click (0: none yet), whether a click came before, its impression."""

    pairs: list[tuple[str, str]]
    pair: np.ndarray
    rank: np.ndarray
    click: np.ndarray
    distance: np.ndarray
    after_click: np.ndarray
    impression: np.ndarray
    impressions: int

    @classmethod
    def of(cls, sessions: list[Session], index: dict[tuple[str, str], int] | None = None) -> ClickEvents:
        """From (query, shown best first, clicked) per impression; `index` numbers the pairs (grown as met)."""
        index = {} if index is None else dict(index)
        columns: list[list[int]] = [[], [], [], [], [], []]
        for n, (query, shown, clicked) in enumerate(sessions):
            last = -1
            for rank, doc in enumerate(shown):
                key = (query, doc)
                if key not in index:
                    index[key] = len(index)
                hit = doc in clicked
                distance = rank - last if last >= 0 else 0
                for column, value in zip(columns, (index[key], rank, hit, distance, last >= 0, n)):
                    column.append(value)
                if hit:
                    last = rank
        pairs = [key for key, _ in sorted(index.items(), key=lambda item: item[1])]
        pair, rank, click, distance, after, impression = (np.array(c, dtype=int) for c in columns)
        return cls(pairs, pair, rank, click.astype(bool), distance, after.astype(bool), impression, len(sessions))


class Fit(Model):
    """How well one click model, fitted on the training part of a log, predicts the held-out part."""

    model: str
    #: mean over held-out impressions of the sum of ln P(click or skip) over their ranks (higher is better)
    log_likelihood: float
    #: per rank 2^(-mean log2 P), averaged over ranks (1: perfect; lower is better)
    perplexity: float
    train_impressions: int
    held_out_impressions: int


@dataclass
class Fitted:
    """A fitted model: attractiveness per pair, examination per rank (or rank and distance), the examinations
    each pair is expected to have had in the log (what its attractiveness was measured on), the mean a."""

    name: str
    attractiveness: np.ndarray
    examination: np.ndarray
    trials: np.ndarray
    mean_attractiveness: float

    def click_probability(self, events: ClickEvents, known: int) -> np.ndarray:
        """P(click | the clicks above) for every event; pairs numbered `known` or above were not seen in fitting."""
        seen = events.pair < known
        a = np.where(seen, self.attractiveness[np.minimum(events.pair, known - 1)], self.mean_attractiveness)
        if self.name == "cascade":
            p = np.where(events.after_click, 0.0, a)
        elif self.name == "ubm":
            p = a * self.examination[_ubm_cell(events)]
        else:  # pbm and coec: a x examination of the rank
            p = a * _lookup(self.examination, events.rank)
        return np.clip(p, EPSILON, 1 - EPSILON)


def _lookup(table: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """table[cell], a cell beyond the table taking the table's mean (a rank the training never showed)."""
    return np.where(cell < len(table), table[np.minimum(cell, len(table) - 1)], table.mean() if len(table) else 0.5)


_UBM_WIDTH = 64  # ranks per row of the UBM's examination table (a log showing more than 64 ranks folds the rest)


def _ubm_cell(events: ClickEvents) -> np.ndarray:
    """The UBM's examination cell of each event: (rank, distance back to the previous click)."""
    return np.minimum(events.rank, _UBM_WIDTH - 1) * _UBM_WIDTH + np.minimum(events.distance, _UBM_WIDTH - 1)


def _mean_of(values: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    counts = np.bincount(groups, minlength=size)
    sums = np.bincount(groups, weights=values, minlength=size)
    return np.divide(sums, counts, out=np.full(size, 0.5), where=counts > 0)


def _em(events: ClickEvents, cell: np.ndarray, cells: int, iterations: int = ITERATIONS
        ) -> tuple[np.ndarray, np.ndarray]:
    """EM of a(pair) and g(cell) for P(click) = a(pair) g(cell) (PBM: cell = rank; UBM: rank and distance)."""
    size = len(events.pairs)
    a, g = np.full(size, 0.5), np.full(cells, 0.5)
    for _ in range(iterations):
        ae, ge = a[events.pair], g[cell]
        skip = np.maximum(1 - ae * ge, EPSILON)
        attracted = np.where(events.click, 1.0, ae * (1 - ge) / skip)
        examined = np.where(events.click, 1.0, ge * (1 - ae) / skip)
        a, g = _mean_of(attracted, events.pair, size), _mean_of(examined, cell, cells)
    return a, g


def fit_model(name: str, events: ClickEvents, iterations: int = ITERATIONS) -> Fitted:
    """Fit click model `name` (one of MODELS) to `events`."""
    size = len(events.pairs)
    if name in ("pbm", "ubm"):
        cell, cells = (events.rank, int(events.rank.max()) + 1 if size else 1) if name == "pbm" else \
            (_ubm_cell(events), _UBM_WIDTH * _UBM_WIDTH)
        a, g = _em(events, cell, cells, iterations)
        trials = np.bincount(events.pair, weights=g[cell], minlength=size)
    elif name == "cascade":
        examined = ~events.after_click
        trials = np.bincount(events.pair[examined], minlength=size).astype(float)
        first = np.bincount(events.pair[examined & events.click], minlength=size)
        a, g = np.divide(first, trials, out=np.zeros(size), where=trials > 0), np.ones(1)
    elif name == "coec":
        ranks = int(events.rank.max()) + 1 if size else 1
        g = _mean_of(events.click.astype(float), events.rank, ranks)
        trials = np.bincount(events.pair, weights=g[events.rank], minlength=size)
        clicks = np.bincount(events.pair, weights=events.click.astype(float), minlength=size)
        a = np.divide(clicks, trials, out=np.zeros(size), where=trials > 0)
    else:
        raise ValueError(f"no click model {name!r}: one of {', '.join(MODELS)}")
    seen = a[events.pair] if len(events.pair) else np.zeros(0)
    mean = float(seen.mean()) if len(seen) else 0.0
    return Fitted(name, a, g, trials, mean)


def standard_error(attractiveness: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """The standard error of attractiveness measured on `trials` expected examinations, clicks counted as Poisson:
    sqrt(clicks) / trials = sqrt(a / trials) (for COEC, trials are its expected clicks: sqrt(clicks) / expected)."""
    return np.sqrt(np.divide(attractiveness, trials, out=np.zeros_like(attractiveness), where=trials > 0))


def relevance(fitted: Fitted, margin: float = 0.0) -> np.ndarray:
    """Each pair's attractiveness, less `margin` standard errors, over the mean attractiveness of what the log
    shows (module docstring)."""
    if fitted.mean_attractiveness <= 0:
        return np.zeros_like(fitted.attractiveness)
    lower = fitted.attractiveness - margin * standard_error(fitted.attractiveness, fitted.trials)
    return lower / fitted.mean_attractiveness


def split(sessions: list, seed: int, held_out: float = HELD_OUT) -> tuple[list, list]:
    """(training, held out): a seeded draw of `held_out` of the impressions, the order of each part kept."""
    draw = random.Random(seed)
    out = set(draw.sample(range(len(sessions)), round(held_out * len(sessions))))
    return [s for n, s in enumerate(sessions) if n not in out], [s for n, s in enumerate(sessions) if n in out]


def held_out_fit(name: str, train: ClickEvents, test: ClickEvents) -> Fit:
    """Fit `name` on `train` (numbered first), score it on `test` (numbered on from train's pairs)."""
    fitted = fit_model(name, train)
    p = fitted.click_probability(test, len(train.pairs))
    chance = np.where(test.click, p, 1 - p)
    ll = float(np.log(chance).sum() / max(test.impressions, 1))
    ranks = int(test.rank.max()) + 1 if len(test.rank) else 0
    per_rank = [2 ** -float(np.log2(chance[test.rank == r]).mean()) for r in range(ranks) if (test.rank == r).any()]
    return Fit(model=name, log_likelihood=ll, perplexity=float(np.mean(per_rank)) if per_rank else float("nan"),
               train_impressions=train.impressions, held_out_impressions=test.impressions)


def choose(sessions: list[Session], seed: int = 0, models: tuple[str, ...] = MODELS) -> list[Fit]:
    """Every model of `models` fitted on a seeded three quarters of `sessions` and scored on the rest, best first."""
    train, test = split(sessions, seed)
    train_events = ClickEvents.of(train)
    index = {pair: n for n, pair in enumerate(train_events.pairs)}
    test_events = ClickEvents.of(test, index)
    fits = [held_out_fit(name, train_events, test_events) for name in models]
    return sorted(fits, key=lambda f: -f.log_likelihood)
