"""Every metric function against hand-worked values, including short lists and k beyond the corpus."""

from __future__ import annotations

import math

import pytest

from surreal_eval import METRICS

A, B, C, D, E = "a", "b", "c", "d", "e"
L2 = math.log2

# (ranked, relevant, grades, k, metric, expected), each worked by hand.
CASES = [
    # recall = |relevant in top k| / |relevant|
    ([A, B, C], [A, C], [1, 1], 1, "recall", 0.5),
    ([A, B, C], [A, C], [1, 1], 3, "recall", 1.0),
    ([B, D], [A, C], [1, 1], 2, "recall", 0.0),
    ([A], [A, C], [1, 1], 5, "recall", 0.5),  # ranking shorter than k
    ([A, B], [A], [1], 1000, "recall", 1.0),  # k beyond the corpus
    ([], [A], [1], 3, "recall", 0.0),  # nothing retrieved
    # hit rate = 1 if any relevant in top k
    ([B, A], [A], [1], 1, "hit_rate", 0.0),
    ([B, A], [A], [1], 2, "hit_rate", 1.0),
    ([], [A], [1], 2, "hit_rate", 0.0),
    # precision = |relevant in top k| / k, always over k (trec_eval P_k)
    ([A, B, C], [A, C], [1, 1], 3, "precision", 2 / 3),
    ([A, B, C], [A, C], [1, 1], 1, "precision", 1.0),
    ([A], [A, C], [1, 1], 5, "precision", 1 / 5),  # shorter than k: still divided by k
    ([A, B], [A, B], [1, 1], 1000, "precision", 2 / 1000),
    # reciprocal rank at k
    ([B, C, A], [A], [1], 3, "mrr", 1 / 3),
    ([B, C, A], [A], [1], 2, "mrr", 0.0),  # first relevant below the cutoff
    ([B, A, C], [A, C], [1, 1], 3, "mrr", 0.5),
    ([], [A], [1], 3, "mrr", 0.0),
    # nDCG: gain = grade, discount log2(rank + 1), ideal over all labels
    ([A, B], [A], [1], 2, "ndcg", 1.0),
    ([B, A], [A], [1], 2, "ndcg", 1 / L2(3)),
    ([B, A], [A], [1], 1, "ndcg", 0.0),
    ([A, B, C], [A, C], [1, 1], 3, "ndcg", (1 + 1 / 2) / (1 + 1 / L2(3))),
    ([C, A], [A, C], [2, 1], 2, "ndcg", (1 + 2 / L2(3)) / (2 + 1 / L2(3))),  # graded
    ([A], [A, C], [1, 1], 1, "ndcg", 1.0),  # ideal cut at k: one label fits
    ([A], [A, C], [1, 1], 5, "ndcg", 1 / (1 + 1 / L2(3))),  # shorter than k
    ([D, E], [A, C], [3, 1], 10, "ndcg", 0.0),
    # average precision at k: sum of precision@i at relevant ranks i <= k, over all labels
    ([A, B, C], [A, C], [1, 1], 3, "map", (1 / 1 + 2 / 3) / 2),
    ([B, A, C], [A, C], [1, 1], 2, "map", (1 / 2) / 2),  # C below the cutoff still counts in the divisor
    ([B, D], [A], [1], 2, "map", 0.0),
    ([A], [A, B, C], [1, 1, 1], 10, "map", 1 / 3),  # ranking shorter than k
    # R-precision: labels in the top R / R, R = number of labels, whatever k
    ([A, B, C], [A, C], [1, 1], 1, "r_precision", 1 / 2),
    ([B, C, A], [A, C], [1, 1], 3, "r_precision", 1 / 2),
    ([A], [A, C], [1, 1], 10, "r_precision", 1 / 2),  # shorter than R
    ([B], [A], [1], 5, "r_precision", 0.0),
]


@pytest.mark.parametrize(("ranked", "relevant", "grades", "k", "metric", "expected"), CASES)
def test_metric_matches_hand_worked_value(db, ranked, relevant, grades, k, metric, expected):
    as_records = ("RETURN fn::seval::metric_{}($ranked.map(|$x| type::record('seval_article', $x)), "
                  "$relevant.map(|$x| type::record('seval_article', $x)), $grades, $k)")
    got = db.value(as_records.format(metric), {"ranked": ranked, "relevant": relevant, "grades": grades, "k": k})
    assert got == pytest.approx(expected, abs=1e-12)


def test_fn_metrics_returns_every_metric_at_once(db):
    got = db.value("RETURN fn::seval::metrics([seval_article:a, seval_article:b], [seval_article:b], [1], 2)")
    assert got == pytest.approx({"recall": 1.0, "hit_rate": 1.0, "precision": 0.5, "mrr": 0.5, "ndcg": 1 / L2(3),
                                 "map": 0.5, "r_precision": 0.0, "judged": 0.5})


def test_python_metric_list_is_the_databases(db):
    functions = db.value("INFO FOR DB")["functions"]
    defined = sorted(name.removeprefix("seval::metric_") for name in functions if name.startswith("seval::metric_"))
    assert defined == sorted(METRICS)
    assert sorted(db.value("RETURN object::keys(fn::seval::metrics([], [seval_article:a], [1], 1))")) == sorted(METRICS)


def test_every_function_opens_with_a_comment_saying_what_it_computes():
    from surreal_eval.store.schema import HARNESS_SCRIPTS, surql_dir

    for name in HARNESS_SCRIPTS:
        lines = (surql_dir() / f"{name}.surql").read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("DEFINE FUNCTION"):
                fn = line.split()[3].split("(")[0]
                assert lines[i - 1].startswith(f"-- {fn}: "), f"{name}.surql:{i + 1} {fn} lacks its one-line comment"


def test_metrics_at_every_k_in_one_pass_equals_each_metric_function(db):
    """fn::seval::metrics_at (what a run uses) against fn::seval::metrics (one fn::seval::metric_* per metric) on random rankings."""
    import random

    rng = random.Random(7)
    for _ in range(150):
        ranked = list(dict.fromkeys(f"d{rng.randint(0, 40)}" for _ in range(rng.randint(0, 30))))
        relevant = list(dict.fromkeys(f"d{rng.randint(0, 40)}" for _ in range(rng.randint(1, 6))))
        values = {"ranked": ranked, "relevant": relevant, "grades": [rng.choice([1, 1, 2, 3]) for _ in relevant],
                  "ks": sorted({rng.randint(1, 35) for _ in range(3)})}
        records = "$ranked.map(|$x| type::record('seval_article', $x)), $relevant.map(|$x| type::record('seval_article', $x)), $grades"
        fast = db.value(f"RETURN fn::seval::metrics_at({records}, $ks)", values)
        slow = db.value(f"RETURN $ks.map(|$k| {{ k: $k, metrics: fn::seval::metrics({records}, $k) }})", values)
        flat = lambda rows: [{**row["metrics"], "k": row["k"]} for row in rows]  # noqa: E731
        assert flat(fast) == [pytest.approx(row, abs=1e-12) for row in flat(slow)], values
