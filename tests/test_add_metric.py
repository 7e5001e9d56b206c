"""Adding a metric is one fn::seval::metric_* function: evaluate, compare, gate and the report pick it up."""

from __future__ import annotations

import json

import pytest

from surreal_eval import HarnessConfig, evaluate, import_harness
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.analysis.gate import gate
from surreal_eval.present.html import write_report

FIRST_RANK = """
-- fn::seval::metric_first_rank: the 1-based rank of the first relevant record in the top $k, 0 if there is none.
DEFINE FUNCTION OVERWRITE fn::seval::metric_first_rank($ranked: array, $relevant: array, $grades: array, $k: int) -> float {
    LET $first = array::find_index(array::slice($ranked, 0, $k).map(|$r| $r IN $relevant), true);
    RETURN IF $first = NONE { 0f } ELSE { <float> ($first + 1) };
};
"""


def _first_rank(ranked: list[str], relevant: list[str], k: int) -> float:
    return next((float(i + 1) for i, r in enumerate(ranked[:k]) if r in relevant), 0.0)


@pytest.fixture
def with_first_rank(seeded):
    seeded.query(FIRST_RANK)
    import_harness(seeded, HarnessConfig(dimension=4))  # `init` again: the dispatch now calls it
    return seeded


def test_a_new_metric_function_is_scored_by_hand(with_first_rank):
    got = with_first_rank.value("RETURN [fn::seval::metric_first_rank(['a', 'b', 'c'], ['c'], [1], 3), "
                                "fn::seval::metric_first_rank(['a', 'b', 'c'], ['c'], [1], 2)]")
    assert got == [3.0, 0.0]
    assert with_first_rank.value("RETURN fn::seval::scored_metrics()")[-1] == "first_rank"


def test_a_new_metric_is_reported_by_evaluate_compare_gate_and_the_report(with_first_rank, tmp_path):
    db = with_first_rank
    before = evaluate(db, ks=[1, 3, 5], per_question=True)
    after = evaluate(db, ks=[1, 3, 5], params={"rrf_k": 10}, per_question=True)
    assert before.metrics[-1] == "first_rank" and before.metrics[:7] == ["recall", "hit_rate", "precision", "mrr", "ndcg", "map", "r_precision"]
    for row in after.per_question:  # every question's value, worked independently from its ranking
        assert row.first_rank == _first_rank(row.ranked, row.relevant, row.k)
    for mean in after.results:
        rows = [r.first_rank for r in after.per_question if r.retriever == mean.retriever and r.k == mean.k]
        assert mean.first_rank == pytest.approx(sum(rows) / len(rows))
        assert "first_rank" in mean.intervals
    flat = json.loads(after.model_dump_json())["results"][0]
    assert list(flat)[3:3 + len(after.metrics)] == [*after.metrics]

    comparison = compare_runs(db, before.run, after.run, metrics=["first_rank@5"])
    assert {row.metric for row in comparison.rows} == {"first_rank@5"}
    verdict = gate(db, baseline=before.run, candidate=after.run, metric="first_rank@5", max_drop=100)
    assert verdict.passed and {c.metric for c in verdict.checks} == {"first_rank@5"}
    page = write_report(db, tmp_path / "report.html", metric="first_rank@5").read_text(encoding="utf-8")
    assert "first_rank" in page


def test_a_new_metric_sees_the_relevance_level_as_the_binary_ones_do(seeded):
    """Above level 1 a new metric is given the grades below the level as 0 (it counts a label as the
    binary metrics do, by fn::seval::relevant_labels), and scores 0 where no label reaches the level."""
    db = seeded
    db.query("""
        DEFINE FUNCTION OVERWRITE fn::seval::metric_first_hit($ranked: array, $relevant: array, $grades: array, $k: int) -> float {
            LET $first = array::find_index(array::slice($ranked, 0, $k).map(|$r| $r IN fn::seval::relevant_labels($relevant, $grades)), true);
            RETURN IF $first = NONE { 0f } ELSE { <float> ($first + 1) };
        };
        DEFINE FUNCTION OVERWRITE fn::seval::metric_share($ranked: array, $relevant: array, $grades: array, $k: int) -> float {
            RETURN <float> array::len($grades[WHERE $this > 0]) / array::len($grades[WHERE $this >= 3]);
        };""")
    import_harness(db, HarnessConfig(dimension=4))
    ranked, judged, grades = ["a", "b", "c"], ["b", "c"], [1, 2]

    def at(level):
        return db.value("RETURN fn::seval::metrics_at_level($r, $j, $g, [3], $l)[0].metrics", {"r": ranked, "j": judged, "g": grades, "l": level})

    assert at(1)["first_hit"] == 2.0 and at(2)["first_hit"] == 3.0 == db.value("RETURN fn::seval::metric_first_hit($r, ['b', 'c'], [0, 2], 3)", {"r": ranked})
    assert at(2)["mrr"] == pytest.approx(1 / 3)
    # a metric left undefined at the level (a division by no label) scores 0, as recall does
    assert at(5)["share"] == 0.0 and at(5)["recall"] == 0.0 and at(5)["first_hit"] == 0.0
