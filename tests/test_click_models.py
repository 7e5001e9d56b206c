"""Click models (golden/click_models.py) on hand-worked logs, whose maximum-likelihood or EM fixed point is worked
out by hand, and auto's choice by held-out fit on small seeded logs of known user behaviour."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from surreal_eval import ClickModel
from surreal_eval.golden.click_model import label_log, pair_stats
from surreal_eval.golden.click_models import ClickEvents, choose, fit_model, held_out_fit, relevance, standard_error
from surreal_eval.golden.search_log import Impression


def log(*rows: tuple[str, str, str, int]) -> list[tuple[str, list[str], set[str]]]:
    """(query, shown, clicked, times) rows as impressions, each id one letter."""
    return [(q, list(shown), set(clicked)) for q, shown, clicked, times in rows for _ in range(times)]


# Balanced: x over y eight times, y over x eight times. Clicks: x at rank 1 4/8, y at 2 1/8, y at 1 2/8, x at 2 2/8.
# These CTRs are exactly a(x) g(1), a(y) g(2), a(y) g(1), a(x) g(2) with a(x) = 2 a(y) and g(1) = 2 g(2), so the PBM's
# maximum likelihood reproduces them: a(x) g(1) = 1/2, a(x)/a(y) = 2, g(1)/g(2) = 2 (the scale a c, g / c is free).
BALANCED = log(("q", "xy", "x", 3), ("q", "xy", "xy", 1), ("q", "xy", "", 4),
               ("q", "yx", "y", 2), ("q", "yx", "x", 2), ("q", "yx", "", 4))


def test_pbm_em_reaches_the_maximum_likelihood_worked_by_hand():
    events = ClickEvents.of(BALANCED)
    fitted = fit_model("pbm", events, iterations=300)
    (ax, ay), (g1, g2) = fitted.attractiveness, fitted.examination
    assert events.pairs == [("q", "x"), ("q", "y")]
    assert ax * g1 == pytest.approx(1 / 2, abs=1e-6) and ay * g2 == pytest.approx(1 / 8, abs=1e-6)
    assert ax / ay == pytest.approx(2, abs=1e-5) and g1 / g2 == pytest.approx(2, abs=1e-5)
    # relevance: a over the mean a of what was shown (x and y each shown 16 times): 2 / 1.5 and 1 / 1.5, whatever the scale
    assert relevance(fitted).tolist() == pytest.approx([4 / 3, 2 / 3], abs=1e-5)
    # the same ratios as COEC here: x clicked 6 times against 8 CTR(1) + 8 CTR(2) = 8 (6/16) + 8 (3/16) = 4.5 expected
    coec = fit_model("coec", events)
    assert coec.attractiveness.tolist() == pytest.approx([6 / 4.5, 3 / 4.5])


def test_pbm_on_one_rank_splits_the_click_rate_evenly_from_an_even_start():
    # one rank only: every a g with a g = 2/5 is a fixed point; from a = g = 0.5, EM moves both alike: sqrt(2/5)
    fitted = fit_model("pbm", ClickEvents.of(log(("q", "x", "x", 2), ("q", "x", "", 3))), iterations=300)
    assert fitted.attractiveness[0] == pytest.approx(math.sqrt(0.4), abs=1e-6) == fitted.examination[0]


def test_the_held_out_log_likelihood_and_perplexity_are_the_click_probabilities_worked_by_hand():
    events = ClickEvents.of(BALANCED)
    fit = held_out_fit("pbm", events, events)  # scored on the log it was fitted on: the maximum likelihood itself
    # per rank and impression kind: P(click) 1/2 (x at 1 of xy), 1/8 (y at 2 of xy), 1/4 (y at 1 and x at 2 of yx)
    xy = 4 * math.log(1 / 2) + 4 * math.log(1 / 2) + 1 * math.log(1 / 8) + 7 * math.log(7 / 8)
    yx = 2 * (2 * math.log(1 / 4) + 6 * math.log(3 / 4))
    assert fit.log_likelihood == pytest.approx((xy + yx) / 16, abs=1e-5)
    rank1 = (4 * math.log2(1 / 2) + 4 * math.log2(1 / 2) + 2 * math.log2(1 / 4) + 6 * math.log2(3 / 4)) / 16
    rank2 = (math.log2(1 / 8) + 7 * math.log2(7 / 8) + 2 * math.log2(1 / 4) + 6 * math.log2(3 / 4)) / 16
    assert fit.perplexity == pytest.approx((2 ** -rank1 + 2 ** -rank2) / 2, abs=1e-5)
    assert (fit.train_impressions, fit.held_out_impressions) == (16, 16)


def test_the_cascade_model_counts_each_document_down_to_the_first_click():
    sessions = log(("q", "xy", "x", 3), ("q", "xy", "", 1), ("q", "yx", "y", 1), ("q", "yx", "x", 1), ("q", "xy", "xy", 1))
    events = ClickEvents.of(sessions)
    fitted = fit_model("cascade", events)
    # x: examined (at or above the first click) in 3 + 1 + 1 + 1 = 6 impressions (not in "yx" clicked y),
    # clicked first in 3 + 1 + 1 = 5; y: examined in 1 + 1 + 1 = 3 (the no-click xy, both yx), first click in 1
    assert fitted.attractiveness.tolist() == pytest.approx([5 / 6, 1 / 3])
    assert fitted.trials.tolist() == [6, 3]
    # a click after the first is impossible under the model: the last impression's y gets 1e-6
    p = fitted.click_probability(events, len(events.pairs))
    assert p[-1] == pytest.approx(1e-6) and p[-2] == pytest.approx(5 / 6)


def test_ubm_learns_that_nobody_reads_on_after_a_click():
    # y at rank 2 is clicked in 1 of the 4 impressions where x was not clicked, never after a click on x
    sessions = log(("q", "xy", "x", 4), ("q", "xy", "", 3), ("q", "xy", "y", 1))
    fitted = fit_model("ubm", ClickEvents.of(sessions))
    (ax, ay), g = fitted.attractiveness, fitted.examination
    rank1, rank2_no_click, rank2_after_click = g[0], g[64], g[65]  # cells (rank, distance back to the last click)
    assert ax * rank1 == pytest.approx(1 / 2, abs=1e-6) and ay * rank2_no_click == pytest.approx(1 / 4, abs=1e-4)
    assert rank2_after_click < 1e-6
    pbm = fit_model("pbm", ClickEvents.of(sessions), iterations=300)
    assert pbm.attractiveness[1] * pbm.examination[1] == pytest.approx(1 / 8, abs=1e-6)  # the PBM averages over both


def test_coec_as_a_click_model_is_the_labels_coec_and_its_standard_error_counts_clicks():
    hand = [Impression(query="a", shown=list("xy"), clicked=["x"], user="u1"), Impression(query="a", shown=list("yx"), clicked=["x"], user="u2"),
            Impression(query="a", shown=list("xy"), user="u3"), Impression(query="b", shown=list("yx"), clicked=["y"], user="u1")]
    events = ClickEvents.of([(i.query, i.shown, set(i.clicked)) for i in hand])
    fitted = fit_model("coec", events)
    stats = pair_stats(hand, ClickModel(name="coec"))
    assert fitted.attractiveness.tolist() == pytest.approx([stats[q][d].coec for q, d in events.pairs])
    # x: 2 clicks on 1.25 expected: COEC 1.6, standard error sqrt(2) / 1.25
    assert standard_error(fitted.attractiveness, fitted.trials)[0] == pytest.approx(math.sqrt(2) / 1.25)
    assert stats["a"]["x"].score(0.5) == pytest.approx(1.6 - 0.5 * math.sqrt(2) / 1.25)


def test_the_margin_keeps_a_label_three_clicks_cannot_carry_from_a_tiny_log():
    tiny = [Impression(query="a", shown=["x", "y"], clicked=["x"], user=f"u{i}") for i in range(3)]
    tiny += [Impression(query="a", shown=["y", "x"], user="u9")]
    # COEC of x: 3 clicks over 3 CTR(1) = 3 (3/4): 4/3; less half of sqrt(3) / 2.25 it is 0.948, below 1
    assert label_log(tiny, ClickModel(name="coec", margin=0)).derived == {"a": ({"x": 1}, [])}
    assert label_log(tiny, ClickModel(name="coec")).derived == {}


def test_a_fitted_model_labels_by_satisfied_clicks_where_coec_counts_every_click():
    # x is clicked in all 8 impressions, each time left after 10 s (counted, not satisfied); y once at each rank, read 40 s
    short, read = {"x": 10}, {"x": 10, "y": 40}
    hand = [Impression(query="a", shown=list(order), clicked=["x", "y"] if n == 0 else ["x"], dwell=read if n == 0 else short,
                       user=f"{order}{n}") for order in ("xy", "yx") for n in range(4)]
    # COEC: CTR(1) = CTR(2) = 5/8, both pairs expect 8 (5/8) = 5 clicks: x 8/5 = 1.6, a label; y 2/5 = 0.4, none
    assert label_log(hand, ClickModel(name="coec", margin=0)).derived == {"a": ({"x": 1}, [])}
    # the PBM on the clicks that count: a(x) g = 1 at both ranks, a(y) g = 1/4: y 0.25 / 0.625 = 0.4; on satisfied clicks
    # x has none (a(x) -> 0) and y is 2 / 1: x is no label (no click of it satisfied), y is (and grade 2: read 40 s)
    found = label_log(hand, ClickModel(name="pbm", margin=0))
    assert found.derived == {"a": ({"y": 2}, [])} and found.scores["a"]["y"] == pytest.approx(2, abs=1e-3)
    # with no dwell in the log every click is satisfied: the PBM labels x as COEC does
    plain = [i.model_copy(update={"dwell": None}) for i in hand]
    assert label_log(plain, ClickModel(name="pbm", margin=0)).derived == {"a": ({"x": 1}, [])}


def simulated(behaviour: str, impressions: int, seed: int) -> list[tuple[str, list[str], set[str]]]:
    """A small log of 20 queries over 10 documents each, relevant half the time at random: clicks on
    relevant 0.6, others 0.06; `pbm`: examination 1/r; `cascade`: down the list, stop at the first click."""
    draw = random.Random(seed)
    truth = {(q, d): draw.random() < 0.3 for q in range(20) for d in range(15)}
    sessions = []
    for _ in range(impressions):
        q = draw.randrange(20)
        shown = draw.sample(range(15), 10)
        clicked: set[str] = set()
        for r, d in enumerate(shown):
            attracted = draw.random() < (0.6 if truth[(q, d)] else 0.06)
            if behaviour == "pbm" and draw.random() < 1 / (r + 1) and attracted:
                clicked.add(str(d))
            if behaviour == "cascade" and attracted:
                clicked.add(str(d))
                break
        sessions.append((str(q), [str(d) for d in shown], clicked))
    return sessions


@pytest.mark.parametrize(("behaviour", "fits"), [("pbm", {"pbm", "ubm", "coec"}), ("cascade", {"cascade", "ubm"})])
def test_auto_chooses_a_model_of_the_logs_own_behaviour_by_held_out_fit(behaviour, fits):
    fits_found = choose(simulated(behaviour, 3000, seed=5), seed=0)
    assert [f.model for f in fits_found] == sorted([f.model for f in fits_found], key=lambda m: -next(
        f.log_likelihood for f in fits_found if f.model == m))  # best first
    assert fits_found[0].model in fits, fits_found
    assert all(f.held_out_impressions == 750 and f.train_impressions == 2250 for f in fits_found)
    assert all(np.isfinite(f.perplexity) and 1 <= f.perplexity <= 2 for f in fits_found if f.model != "cascade" or behaviour == "cascade")


def test_auto_on_a_tiny_log_says_it_could_not_choose_and_uses_coec():
    tiny = [Impression(query="a", shown=["x", "y"], clicked=["x"], user=f"u{i}") for i in range(5)]
    found = label_log(tiny, ClickModel())
    assert found.model == "coec" and found.fits == [] and "too few" in found.chosen_by


def test_a_forced_model_is_used_and_its_held_out_fit_recorded():
    sessions = simulated("cascade", 400, seed=2)
    impressions = [Impression(query=q, shown=s, clicked=sorted(c), user=f"u{n % 37}") for n, (q, s, c) in enumerate(sessions)]
    found = label_log(impressions, ClickModel(name="pbm"))
    assert (found.model, found.chosen_by, [f.model for f in found.fits]) == ("pbm", "forced", ["pbm"])
    with pytest.raises(ValueError, match="no click model 'dbn'"):
        fit_model("dbn", ClickEvents.of(sessions))
