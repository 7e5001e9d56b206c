"""The lesson's findings, reproduced by surql/seed.surql and asserted one by one."""

from __future__ import annotations

import pytest

from surreal_eval import evaluate, run_demo
from surreal_eval.runs.demo import DEMO_FLOORS, DEMO_KS


@pytest.fixture
def report(seeded):
    return evaluate(seeded, ks=DEMO_KS, per_question=True, params={"floors": DEMO_FLOORS})  # as the demo runs it


def ranked(report, question, retriever, k):
    """The top k of the run's ranking (the run ranks once, at its deepest k)."""
    (row,) = [r for r in report.per_question
              if r.question == f"seval_question:{question}" and r.retriever == retriever and r.k == max(report.ks)]
    return row.ranked[:k]


def mean(report, retriever, k, metric="recall"):
    (row,) = [r for r in report.results if r.retriever == retriever and r.k == k]
    return getattr(row, metric)


def test_seed_has_ten_articles_and_eight_questions(seeded):
    assert seeded.value("RETURN count(SELECT * FROM seval_article)") == 10
    assert seeded.value("RETURN count(SELECT * FROM seval_question)") == 8


def test_signin_question_shares_no_vocabulary_with_its_labels(seeded, report):
    assert seeded.value("RETURN fn::seval::retrieve_bm25(seval_question:signin.text, 10)") == []
    assert set(ranked(report, "signin", "vector", 3)) == {
        "seval_article:password_reset", "seval_article:account_locked", "seval_article:enable_2fa"}


def test_bm25_ranks_the_rate_limit_article_first_for_429(report):
    assert ranked(report, "rate_limit", "bm25", 1) == ["seval_article:api_rate_limits"]


def test_vector_search_misses_the_rate_limit_article(report):
    assert "seval_article:api_rate_limits" not in ranked(report, "rate_limit", "vector", max(DEMO_KS))


def test_hybrid_recovers_the_rate_limit_article_in_the_top_3(report):
    assert "seval_article:api_rate_limits" in ranked(report, "rate_limit", "hybrid", 3)


def test_vector_search_is_right_about_money_back(report):
    assert ranked(report, "money_back", "vector", 2) == ["seval_article:refund_request", "seval_article:cancel_subscription"]


def test_hybrid_at_3_returns_none_of_the_money_back_labels(report, seeded):
    top3 = ranked(report, "money_back", "hybrid", 3)
    labels = {"seval_article:refund_request", "seval_article:cancel_subscription"}
    assert not labels & set(top3)
    # because each of those three matches only one word of the question ("how", "money", "back")
    assert set(top3) == {"seval_article:track_order", "seval_article:update_payment", "seval_article:return_item"}
    assert set(ranked(report, "money_back", "bm25", 5)) == set(top3)


def test_a_lexical_floor_fixes_money_back(report):
    assert set(ranked(report, "money_back", "hybrid_floor", 2)) == {"seval_article:refund_request", "seval_article:cancel_subscription"}
    assert "seval_article:api_rate_limits" in ranked(report, "rate_limit", "hybrid_floor", 3)


def test_floored_hybrid_has_the_highest_recall_at_3(report):
    floored = mean(report, "hybrid_floor", 3)
    for other in ("bm25", "vector", "hybrid"):
        assert floored > mean(report, other, 3), other


def test_floor_sweep_shows_the_floor_matters(report):
    by_floor = {row.floor: row.recall for row in report.sweep if row.k == 3}
    assert by_floor[0] == mean(report, "hybrid", 3)  # floor 0 fuses every BM25 match: plain hybrid
    assert by_floor[3] == mean(report, "hybrid_floor", 3)
    assert by_floor[3] > by_floor[0]


def test_standalone_retriever_functions_agree_with_the_run(seeded, report):
    q = "seval_question:rate_limit"
    assert seeded.value(f"RETURN fn::seval::retrieve_hybrid({q}.text, {q}.embedding, 5)") == [
        seeded.value(f"RETURN type::record('{x.split(':')[0]}', '{x.split(':')[1]}')") for x in ranked(report, "rate_limit", "hybrid", 5)]
    floored = seeded.value("RETURN fn::seval::retrieve_hybrid_floor(seval_question:money_back.text, seval_question:money_back.embedding, 5, 3.0)")
    assert [str(r.id) for r in floored[:2]] == ["refund_request", "cancel_subscription"]


def test_fn_evaluate_returns_means_and_the_sweep_and_records_nothing(seeded, report):
    runs = seeded.value("SELECT id FROM seval_run")
    got = seeded.value("RETURN fn::seval::evaluate(5)")
    assert seeded.value("SELECT id FROM seval_run") == runs
    assert seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE run NOTINSIDE $r)", {"r": [r["id"] for r in runs]}) == 0
    means = {m["retriever"]: m["metrics"]["recall"] for m in got["means"]}
    assert means == {r: mean(report, r, 5) for r in ("bm25", "vector", "hybrid", "hybrid_floor")}
    # from the data: 0 and percentiles of the BM25 scores of the top-5 lists (tests/test_sweep_floors.py works them out)
    assert {s["floor"] for s in got["sweep"]} == {0, 0.77, 1.16, 1.37, 2.07, 4.43}


def test_the_demo_sweeps_its_whole_floors_and_a_run_floors_from_the_data_whatever_its_floor(seeded, report):
    """The sweep was 0 to 5 whatever the data; the demo keeps those floors, a run takes its floors from its BM25 scores."""
    assert sorted({row.floor for row in report.sweep}) == DEMO_FLOORS
    at_two = evaluate(seeded, ks=[3], params={"floor": 2.0})
    at_ten = evaluate(seeded, ks=[3], params={"floor": 10.0})
    assert sorted({row.floor for row in at_two.sweep}) == sorted({row.floor for row in at_ten.sweep}) == [0, 1.17, 1.24, 1.85, 2.07, 5.22]


def test_demo_reports_the_same_numbers():
    demo = run_demo()
    assert demo.questions == 8 and demo.ks == DEMO_KS
    assert {r.retriever for r in demo.results} == {"bm25", "vector", "hybrid", "hybrid_floor"}
    assert len(demo.per_question) == 8 * 4 * 3


def test_rankings_are_identical_across_runs_and_concurrency(seeded):
    from surreal_eval.runs.record import load_run

    one = evaluate(seeded, ks=[1, 3, 5], per_question=True, concurrency=1)
    two = evaluate(seeded, ks=[1, 3, 5], per_question=True, concurrency=2)
    assert [(r.question, r.retriever, r.k, r.ranked) for r in one.per_question] == \
        [(r.question, r.retriever, r.k, r.ranked) for r in two.per_question]
    assert load_run(seeded, one.run, per_question=True).per_question == one.per_question


def test_a_question_with_nothing_retrieved_scores_zero_and_stays_in_the_mean(seeded):
    report = evaluate(seeded, ks=[3], retrievers=["bm25"], per_question=True)
    (signin,) = [r for r in report.per_question if r.question == "seval_question:signin"]
    assert signin.ranked == [] and signin.recall == 0.0 and signin.ndcg == 0.0
    assert report.results[0].questions == 8
    assert report.results[0].recall == pytest.approx(sum(r.recall for r in report.per_question) / 8)
