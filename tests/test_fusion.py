"""Fusion parameters: the RRF constant, and linear fusion with weights and min-max normalisation."""

from __future__ import annotations

import pytest

from surreal_eval import evaluate


def hits(db, sql):
    return [(str(h["id"].id), round(h["score"], 12)) for h in db.value(sql)]


def test_rrf_score_is_the_sum_of_reciprocal_ranks_with_the_constant(db):
    got = hits(db, "RETURN fn::seval::fuse_rrf([[{id: seval_article:a}, {id: seval_article:b}], [{id: seval_article:b}, {id: seval_article:c}]], 10, 10)")
    assert got == [("b", round(1 / 12 + 1 / 11, 12)), ("a", round(1 / 11, 12)), ("c", round(1 / 12, 12))]


def test_rrf_ties_are_broken_by_record_id(db):
    got = hits(db, "RETURN fn::seval::fuse_rrf([[{id: seval_article:z}], [{id: seval_article:m}], [{id: seval_article:a}]], 3, 60)")
    assert [i for i, _ in got] == ["a", "m", "z"]


def test_linear_fusion_min_max_normalises_and_weights(db):
    # BM25 scores 3, 1, 2 -> min-max 1, 0, 0.5; vector distances 0, 1 -> 1/(1+d) = 1, 0.5 -> 1, 0
    sql = """RETURN fn::seval::fuse_linear([
        [{id: seval_article:a, score: 3}, {id: seval_article:c, score: 2}, {id: seval_article:b, score: 1}],
        [{id: seval_article:b, distance: 0}, {id: seval_article:d, distance: 1}]
    ], [0.25, 0.75], 10, 'minmax')"""
    got = dict(hits(db, sql))
    assert got["b"] == pytest.approx(0.25 * 0 + 0.75 * 1)
    assert got["a"] == pytest.approx(0.25 * 1)
    assert got["c"] == pytest.approx(0.25 * 0.5)
    assert [i for i, _ in hits(db, sql)][:3] == ["b", "a", "c"]


def test_linear_weights_move_the_ranking_between_lexical_and_semantic(seeded):
    lexical = evaluate(seeded, ks=[3], retrievers=["hybrid_linear"], params={"weights": [1, 0]}, per_question=True)
    semantic = evaluate(seeded, ks=[3], retrievers=["hybrid_linear"], params={"weights": [0, 1]}, per_question=True)
    bm25_vec = evaluate(seeded, ks=[3], retrievers=["bm25", "vector"], per_question=True)

    def top1(report, retriever, question):
        (row,) = [r for r in report.per_question if r.retriever == retriever and r.question == question]
        return row.ranked[0] if row.ranked else None

    assert top1(lexical, "hybrid_linear", "seval_question:rate_limit") == top1(bm25_vec, "bm25", "seval_question:rate_limit")
    assert top1(semantic, "hybrid_linear", "seval_question:money_back") == top1(bm25_vec, "vector", "seval_question:money_back")
    assert lexical.params["weights"] == [1, 0] and semantic.params["norm"] == "minmax"


def test_the_rrf_constant_is_a_run_parameter(seeded):
    report = evaluate(seeded, ks=[3], retrievers=["hybrid"], params={"rrf_k": 1})
    assert report.params["rrf_k"] == 1


@pytest.mark.parametrize(("params", "message"), [
    ({"weights": [1]}, "give two numbers"),
    ({"norm": "l2"}, "norm must be"),
    ({"rrf_k": 0}, "RRF constant must be at least 1"),
    ({"depth": 2}, "shallower than the deepest cutoff"),
])
def test_bad_run_parameters_are_refused(seeded, params, message):
    with pytest.raises(Exception, match=message):
        evaluate(seeded, ks=[3], params=params)
