"""surql/queries.surql: the everyday history queries, each on real runs."""

from __future__ import annotations

import pytest

from surreal_eval import evaluate
from surreal_eval.store.connection import record_str


@pytest.fixture
def two_runs(seeded):
    before = evaluate(seeded, ks=[1, 3, 5], params={"floor": 0.0}, label="floor 0")
    after = evaluate(seeded, ks=[3, 5], retrievers=["bm25", "hybrid_floor"], label="floor 3")
    return seeded, before, after


def rid(db, run):
    return db.value("RETURN type::record($r)", {"r": run})


def test_latest_runs_gives_each_retrievers_most_recent_means(two_runs):
    db, before, after = two_runs
    rows = db.value("RETURN fn::seval::latest_runs()")
    by = {(r["retriever"], r["k"]): record_str(r["run"]) for r in rows}
    assert by[("bm25", 3)] == after.run and by[("hybrid_floor", 5)] == after.run
    assert by[("vector", 1)] == before.run  # the latest run did not evaluate vector
    assert ("bm25", 1) not in by  # the latest bm25 run had no k=1


def test_trend_lists_one_value_per_run_oldest_first(two_runs):
    db, before, after = two_runs
    trend = db.value("RETURN fn::seval::trend('hybrid_floor', 'recall', 3)")
    assert [record_str(t["run"]) for t in trend] == [before.run, after.run]
    assert [t["label"] for t in trend] == ["floor 0", "floor 3"]
    expected = [next(r.recall for r in rep.results if r.retriever == "hybrid_floor" and r.k == 3) for rep in (before, after)]
    assert [t["value"] for t in trend] == pytest.approx(expected)
    assert db.value("RETURN fn::seval::trend('vector', 'recall', 3)")[0]["value"] == pytest.approx(0.875)


def test_regressed_questions_names_the_question_that_broke(two_runs):
    db, before, after = two_runs
    broke = db.value("RETURN fn::seval::regressed_questions($a, $b, 'hybrid_floor', 'recall', 3)",
                     {"a": rid(db, after.run), "b": rid(db, before.run)})
    assert [record_str(r["question"]) for r in broke] == ["seval_question:money_back"]
    assert broke[0]["before"] == 1.0 and broke[0]["change"] < 0
    assert db.value("RETURN fn::seval::regressed_questions($a, $b, 'hybrid_floor', 'recall', 3)",
                    {"a": rid(db, before.run), "b": rid(db, after.run)}) == []


def test_ingests_with_runs_links_each_ingest_to_its_run(seeded):
    from surreal_eval.load.bulk import record_ingest
    from surreal_eval.runs.watch import drain_ingests, set_watch

    record_ingest(seeded, corpus="seval_article", documents=10)  # nothing watched yet: no run
    set_watch(seeded, ks=[1, 3])
    record_ingest(seeded, corpus="seval_article", documents=10, source="batch-2.jsonl")
    (done,) = drain_ingests(seeded).evaluated
    run = done.run
    rows = seeded.value("RETURN fn::seval::ingests_with_runs()")
    assert [record_str(r.get("run")) if r.get("run") else None for r in rows] == [run, None]
    assert rows[0]["source"] == "batch-2.jsonl" and rows[0]["means"]
