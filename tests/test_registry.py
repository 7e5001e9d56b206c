"""The registry of retrievers (table `retriever`): one row per retriever, and everything reads it."""

from __future__ import annotations

import re

import pytest

from surreal_eval import (
    RETRIEVERS,
    ConfigError,
    HarnessConfig,
    QueryFailed,
    Rejected,
    compare_runs,
    evaluate,
    gate,
    history,
    import_harness,
    registry,
    write_report,
)
from surreal_eval.runs.diagnose import diagnose
from surreal_eval.runs.tune import TUNABLE
from surreal_eval.store.connection import to_record
from surreal_eval.store.registry import tuned_by

#: A throwaway retriever: RRF of BM25 and vector with its own constant (10, where runs default to 60).
RRF10 = "CREATE seval_retriever:hybrid_rrf10 CONTENT { position: 35, lists: ['bm25', 'vector'], fusion: 'rrf', params: { rrf_k: 10 } }"

#: Each harness retriever beside the standalone function a user calls for it (the same ranking).
STANDALONE = {
    "bm25": "fn::seval::retrieve_bm25($q.text, $k)",
    "vector": "fn::seval::retrieve_vec($q.embedding, $k)",
    "vector_exact": "fn::seval::retrieve_vec_exact($q.embedding, $k)",
    "hybrid": "fn::seval::retrieve_hybrid($q.text, $q.embedding, $k)",
    "hybrid_floor": "fn::seval::retrieve_hybrid_floor($q.text, $q.embedding, $k, 3.0)",
    "hybrid_linear": "fn::seval::retrieve_hybrid_linear($q.text, $q.embedding, $k)",
}


def rankings(report, retriever, k):
    return {r.question: r.ranked for r in report.per_question if r.retriever == retriever and r.k == k}


def test_a_retriever_added_as_one_row_is_evaluated_and_shows_in_history_compare_gate_and_the_report(seeded, tmp_path):
    baseline = evaluate(seeded, ks=[1, 3, 5], label="before")
    seeded.query(RRF10)
    run = evaluate(seeded, ks=[1, 3, 5], retrievers=["hybrid", "hybrid_rrf10"], per_question=True, label="with rrf10")
    assert run.retrievers == ["hybrid", "hybrid_rrf10"]
    assert {r.k for r in run.results if r.retriever == "hybrid_rrf10"} == {1, 3, 5}
    # its own constant: the same rankings as hybrid run with rrf_k = 10, and scores no RRF at 60 can
    # reach (a document first in one list scores 1 / (10 + 1) = 0.091; at 60 at most 2 / 61 = 0.033)
    reference = evaluate(seeded, ks=[1, 3, 5], retrievers=["hybrid"], params={"rrf_k": 10}, per_question=True)
    assert rankings(run, "hybrid_rrf10", 5) == rankings(reference, "hybrid", 5)
    top = seeded.value("SELECT VALUE scores[0] FROM seval_ranking WHERE run = $r AND retriever = $n",
                       {"r": to_record(run.run, "seval_run"), "n": "hybrid_rrf10"})
    assert len(top) == 8 and max(top) >= 1 / 11 > 2 / 61

    recorded = {r.run: r for r in history(seeded)}[run.run]
    assert "hybrid_rrf10" in recorded.retrievers
    assert recorded.mean("hybrid_rrf10", "recall", 5) == pytest.approx(
        next(r.recall for r in run.results if r.retriever == "hybrid_rrf10" and r.k == 5))

    later = evaluate(seeded, ks=[1, 3, 5], retrievers=["hybrid_rrf10"], label="again")
    comparison = compare_runs(seeded, run.run, later.run)
    assert {row.retriever for row in comparison.rows} == {"hybrid_rrf10"}
    assert all(row.difference == 0 for row in comparison.rows)  # same data, same ranking

    verdict = gate(seeded, baseline=run.run, candidate=later.run, metric="recall@5", retriever="hybrid_rrf10")
    assert verdict.passed and [c.retriever for c in verdict.checks] == ["hybrid_rrf10"]
    with pytest.raises(ConfigError, match="hybrid_rrf10"):  # the baseline never measured it
        gate(seeded, baseline=baseline.run, candidate=later.run, metric="recall@5", retriever="hybrid_rrf10")

    page = write_report(seeded, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "hybrid_rrf10" in page


def test_the_registry_and_every_dispatch_agree(seeded):
    rows = registry(seeded)
    assert tuple(r.name for r in rows) == RETRIEVERS  # the seeded rows, in report order
    assert all(r.harness for r in rows)
    assert seeded.value("RETURN fn::seval::retriever_names()") == list(RETRIEVERS)
    assert seeded.value("RETURN fn::seval::default_retrievers()") == [r.name for r in rows if r.by_default]
    assert set(STANDALONE) == set(RETRIEVERS)
    # every candidate list and fusion the table accepts is one fn::candidate_list and fn::fused dispatch on
    fields = seeded.value("INFO FOR TABLE seval_retriever")["fields"]
    lists = re.findall(r"'(\w+)'", fields["lists"].split("ASSERT", 1)[1].split("]", 1)[0])  # the built-in lists
    fusions = re.findall(r"'(\w+)'", fields["fusion"].split("ASSERT", 1)[1])
    assert sorted(lists) == ["bm25", "vector", "vector_exact"] and sorted(fusions) == ["linear", "none", "rrf", "rrf_floor"]
    assert {r.fusion for r in rows} == set(fusions)
    q = "seval_question:money_back"
    for name in lists:
        got = seeded.value(f"RETURN fn::seval::candidate_list($l, (SELECT * FROM ONLY {q}), fn::seval::run_params([5], {{}}))", {"l": name})
        assert got and all("score" in hit for hit in got)
    # each retriever's ranking in a run is what its standalone function returns, for every question
    ids = seeded.value("SELECT VALUE id FROM seval_question ORDER BY id")
    for name, call in STANDALONE.items():
        for qid in ids:
            ran = seeded.value(
                "LET $q = (SELECT * FROM ONLY $id); RETURN fn::seval::question_rankings($q, fn::seval::run_params([$k], {}), [$name])[0].list.id;",
                {"id": qid, "k": 5, "name": name})
            assert ran == seeded.value(f"LET $q = (SELECT * FROM ONLY $id); RETURN {call};", {"id": qid, "k": 5}), (name, qid)
            assert ran == seeded.value("LET $q = (SELECT * FROM ONLY $id); RETURN fn::seval::retrieve($name, $q.text, $q.embedding, $k);",
                                       {"id": qid, "k": 5, "name": name}), (name, qid)
    # tune's default retriever of every tunable parameter comes from the registry
    assert {param: tuned_by(seeded, param) for param in TUNABLE} == {
        "floor": "hybrid_floor", "rrf_k": "hybrid", "weights": "hybrid_linear", "knn_ef": "vector"}


def test_the_floor_sweep_comes_from_the_floored_retrievers_row(seeded):
    report = evaluate(seeded, ks=[3], retrievers=["hybrid_floor"], params={"floors": [0, 2]})
    assert [(s.floor, s.retriever) for s in report.sweep] == [(0, "floor_sweep"), (2, "floor_sweep")]
    assert evaluate(seeded, ks=[3], retrievers=["hybrid"]).sweep == []
    seeded.query("UPDATE seval_retriever:hybrid_floor SET sweep = NONE")
    assert evaluate(seeded, ks=[3], retrievers=["hybrid_floor"]).sweep == []


def test_an_unknown_retriever_is_refused_with_the_registrys_names(seeded):
    seeded.query(RRF10)
    with pytest.raises(ConfigError, match="unknown retriever nope: use bm25, vector, vector_exact, hybrid, hybrid_rrf10, hybrid_floor"):
        evaluate(seeded, ks=[3], retrievers=["nope"])
    with pytest.raises(Rejected, match="unknown retriever"):
        seeded.value("RETURN fn::seval::run_evaluation([3], ['nope'], {}, NONE)")
    assert history(seeded) == []
    assert [v.retriever for v in diagnose(seeded, "money_back", k=3, retrievers=["hybrid_rrf10"]).retrievers] == ["hybrid_rrf10"]


@pytest.mark.parametrize("row", [
    "{ position: 60, lists: ['bm25', 'vector'], fusion: 'none' }",   # 'none' takes exactly one list
    "{ position: 60, lists: ['bm99'], fusion: 'none' }",             # no such candidate list
    "{ position: 60, lists: ['bm25', 'vector'], fusion: 'borda' }",  # no such fusion
    "{ position: 60, lists: ['bm25'], fusion: 'rrf_floor' }",        # the floor fuses two lists
    "{ position: 60, lists: ['bm25'], fusion: 'none', sweep: 'x' }",  # only a floored fusion sweeps
    "{ position: 10, lists: ['bm25'], fusion: 'none' }",             # bm25's place in the reports
])
def test_a_malformed_registry_row_is_refused(db, row):
    with pytest.raises((Rejected, QueryFailed)):  # a failed ASSERT; the UNIQUE position index
        db.query(f"CREATE seval_retriever:mine CONTENT {row}")
    assert [r.name for r in registry(db)] == list(RETRIEVERS)


def test_importing_again_resets_the_harness_rows_and_keeps_the_users(db):
    db.query(RRF10)
    db.query("UPDATE seval_retriever:hybrid SET by_default = false, params = { rrf_k: 5 }")
    import_harness(db, HarnessConfig(dimension=4))
    rows = {r.name: r for r in registry(db)}
    assert rows["hybrid"].by_default and rows["hybrid"].params == {}
    assert rows["hybrid_rrf10"].params == {"rrf_k": 10} and not rows["hybrid_rrf10"].harness
