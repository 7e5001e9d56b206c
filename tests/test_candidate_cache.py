"""Candidate lists reused across runs (surql/candidate_cache.surql): a later run reads a question's
BM25 or vector list when nothing it depends on changed, and never a stale one: after each change
below the run equals a --fresh run of the same data, list for list."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import evaluate
from surreal_eval.load.bulk import load_corpus
from surreal_eval.models import Article
from surreal_eval.present.cli import app
from surreal_eval.runs.tune import assign_splits, tune
from surreal_eval.store.connection import record_str, to_record

from .conftest import reverse_embeddings, lists_reused

runner = CliRunner()


def rankings(db, report) -> list:
    """Every ranking of run `report`, as (question, retriever, floor, ranked ids, scores), sorted."""
    rows = db.value("SELECT question, retriever, floor, ranked, scores FROM seval_ranking WHERE run = $r",
                    {"r": to_record(report.run, "seval_run")})
    return sorted((record_str(r["question"]), r["retriever"], r.get("floor"), [record_str(x) for x in r["ranked"]],
                   r["scores"]) for r in rows)


def scores(db, report) -> list:
    """Every question's metrics in run `report`, as (question, retriever, floor, k, metrics), sorted."""
    rows = db.value("SELECT question, retriever, floor, results FROM seval_ranking WHERE run = $r",
                    {"r": to_record(report.run, "seval_run")})
    return sorted(((record_str(r["question"]), r["retriever"], r.get("floor") or 0, m["k"], m["metrics"]) for r in rows
                   for m in r["results"]), key=lambda r: r[:4])


def same_means(one, other) -> bool:
    """The two runs' means are the same (each summed in no fixed order: equal to rounding)."""
    def rows(report):
        return [(r.retriever, r.floor, r.k, sorted(r.scores)) for r in report.results]

    return rows(one) == rows(other) and all(
        a.scores == pytest.approx(b.scores, abs=1e-12) for a, b in zip(one.results, other.results))


def reused(report) -> int:
    return report.retrieval["reused"]


def same_as_fresh(db, report, **kwargs) -> None:
    """`report` ranks and scores as a run that queries every index again (ranked ids and metrics exactly, candidate scores to 32 bits)
    at its sweep's floors (a fresh run would take them from the data anew)."""
    params = {**kwargs.pop("params", {}), **({"floors": report.params["floors"]} if "floors" in report.params else {})}
    fresh = evaluate(db, fresh=True, params=params, **kwargs)
    assert reused(fresh) == 0
    mine, theirs = rankings(db, report), rankings(db, fresh)
    assert [r[:4] for r in mine] == [r[:4] for r in theirs]
    # a BM25 list brought up to date is scored in 64 bits, the index in 32 (surql/incremental_bm25.surql)
    assert all(a[4] == pytest.approx(b[4], rel=1e-6) for a, b in zip(mine, theirs))
    assert scores(db, report) == scores(db, fresh)
    assert same_means(report, fresh)


def cached(db, question: str, list_: str) -> dict:
    return db.value("SELECT * FROM ONLY type::record('seval_candidate_cache', [type::record('seval_question', $q), $l, 'seval_article', 0])",
                    {"q": question, "l": list_})


def test_a_second_run_reads_every_list_and_scores_the_same(seeded):
    first = evaluate(seeded, ks=[1, 3, 5])
    second = evaluate(seeded, ks=[1, 3, 5])
    assert lists_reused(first) == {"lists": 16, "reused": 0}  # 8 questions, a BM25 and a vector list each
    assert lists_reused(second) == {"lists": 16, "reused": 16}
    assert rankings(seeded, second) == rankings(seeded, first)
    assert scores(seeded, second) == scores(seeded, first)
    assert same_means(second, first)


def test_a_run_reads_the_stored_list_itself(seeded):
    """The list read is the stored one: a row changed behind the harness's back (same key) shows up."""
    evaluate(seeded, ks=[3], retrievers=["bm25"])
    seeded.query("UPDATE type::record('seval_candidate_cache', [seval_question:signin, 'bm25', 'seval_article', 0]) "
                 "SET hits = [{ id: seval_article:api_rate_limits, score: 9.0 }]")
    again = evaluate(seeded, ks=[3], retrievers=["bm25"])
    assert reused(again) == 8
    signin = [r for r in rankings(seeded, again) if r[0] == "seval_question:signin"]
    assert signin == [("seval_question:signin", "bm25", None, ["seval_article:api_rate_limits"], [9.0])]


def test_new_fusion_parameters_and_a_shallower_k_reuse_every_list(seeded):
    evaluate(seeded, ks=[1, 3, 5], retrievers=["bm25", "vector", "hybrid", "hybrid_floor", "hybrid_linear"])
    params = {"floor": 1.0, "rrf_k": 10, "weights": [0.3, 0.7], "floors": [0, 2]}
    kwargs = {"ks": [1, 3], "retrievers": ["hybrid", "hybrid_floor", "hybrid_linear"], "params": params}
    second = evaluate(seeded, **kwargs)
    assert lists_reused(second) == {"lists": 16, "reused": 16}
    same_as_fresh(seeded, second, **kwargs)


def test_a_deeper_run_fetches_again_then_serves_shallower_runs_by_its_prefix(seeded):
    evaluate(seeded, ks=[3])
    # a BM25 list is kept deeper than asked (four times, at least 30 more: 33 for depth 3), so depth 5 reads it
    assert cached(seeded, "signin", "bm25")["depth"] == 33
    deeper = evaluate(seeded, ks=[40])
    assert reused(deeper) == 0 and cached(seeded, "signin", "bm25")["depth"] == 160
    assert cached(seeded, "signin", "vector")["depth"] == 40
    assert reused(evaluate(seeded, ks=[5])) == 16
    shallower = evaluate(seeded, ks=[1, 2])
    assert reused(shallower) == 16
    same_as_fresh(seeded, shallower, ks=[1, 2])


def test_changing_one_document_reruns_bm25_and_uses_no_stale_list(seeded):
    before = evaluate(seeded, ks=[3])
    seeded.query("UPDATE seval_article:track_order SET content = 'Where is my parcel? Follow the courier link in your e-mail.'")
    after = evaluate(seeded, ks=[3])
    assert reused(after) == 8  # every BM25 list again (the content fingerprint moved), every vector list read
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[3])


def test_changing_the_corpus_embeddings_reruns_vector_and_reuses_bm25(seeded):
    before = evaluate(seeded, ks=[3])
    reverse_embeddings(seeded)
    after = evaluate(seeded, ks=[3])
    assert reused(after) == 8
    assert cached(seeded, "signin", "bm25")["run"] == to_record(before.run, "seval_run")
    assert cached(seeded, "signin", "vector")["run"] == to_record(after.run, "seval_run")
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[3])


def test_changing_one_questions_text_reruns_only_its_bm25_list(seeded):
    before = evaluate(seeded, ks=[3])
    seeded.query("UPDATE seval_question:where_parcel SET text = 'track the courier of my order'")
    after = evaluate(seeded, ks=[3])
    assert reused(after) == 15
    assert cached(seeded, "where_parcel", "bm25")["run"] == to_record(after.run, "seval_run")
    assert cached(seeded, "where_parcel", "vector")["run"] == to_record(before.run, "seval_run")
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[3])


def test_changing_one_questions_embedding_reruns_only_its_vector_list(seeded):
    before = evaluate(seeded, ks=[3])
    seeded.query("UPDATE seval_question:where_parcel SET embedding = [0.9, 0.05, 0.0, 0.15]")
    after = evaluate(seeded, ks=[3])
    assert reused(after) == 15
    assert cached(seeded, "where_parcel", "vector")["run"] == to_record(after.run, "seval_run")
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[3])


@pytest.mark.parametrize("change", [
    # another analyzer (no stemming), the index defined again with it
    "DEFINE ANALYZER plain TOKENIZERS blank, punct FILTERS lowercase, ascii; "
    "DEFINE INDEX OVERWRITE seval_article_content ON seval_article FIELDS bm25_text FULLTEXT ANALYZER plain BM25",
    # the same analyzer name redefined, its index rebuilt
    "DEFINE ANALYZER OVERWRITE seval_english TOKENIZERS blank, punct FILTERS lowercase, ascii; REBUILD INDEX seval_article_content ON seval_article",
    # other BM25 parameters
    "DEFINE INDEX OVERWRITE seval_article_content ON seval_article FIELDS bm25_text FULLTEXT ANALYZER seval_english BM25(0.5, 0.2)",
])
def test_changing_the_analyzer_or_the_fulltext_index_reruns_bm25(seeded, change):
    before = evaluate(seeded, ks=[5])
    seeded.query(change)
    after = evaluate(seeded, ks=[5])
    assert reused(after) == 8  # the vector lists only
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[5])


def test_changing_the_analyzers_function_reruns_bm25(seeded):
    seeded.query("DEFINE FUNCTION fn::user_strip($t: string) -> string { RETURN string::replace($t, <regex> '(?i)\\\\bmy\\\\b', ' ') };"
                 "DEFINE ANALYZER stripped FUNCTION fn::user_strip TOKENIZERS blank, punct FILTERS lowercase, ascii;"
                 "DEFINE INDEX OVERWRITE seval_article_content ON seval_article FIELDS bm25_text FULLTEXT ANALYZER stripped BM25")
    before = evaluate(seeded, ks=[5])
    seeded.query("DEFINE FUNCTION OVERWRITE fn::user_strip($t: string) -> string { "
                 "RETURN string::replace($t, <regex> '(?i)\\\\b(?:my|the|parcel|money)\\\\b', ' ') };"
                 "REBUILD INDEX seval_article_content ON seval_article")
    after = evaluate(seeded, ks=[5])
    assert reused(after) == 8
    assert rankings(seeded, after) != rankings(seeded, before)
    same_as_fresh(seeded, after, ks=[5])


def test_fresh_retrieves_every_list_and_stores_them_for_the_next_run(seeded):
    evaluate(seeded, ks=[3])
    seeded.query("UPDATE type::record('seval_candidate_cache', [seval_question:rate_limit, 'bm25', 'seval_article', 0]) SET hits = []")
    fresh = evaluate(seeded, ks=[3], fresh=True)
    assert lists_reused(fresh) == {"lists": 16, "reused": 0}
    assert cached(seeded, "rate_limit", "bm25")["hits"] != []  # stored anew
    assert reused(evaluate(seeded, ks=[3])) == 16


def test_a_load_into_the_corpus_keeps_the_lists_of_the_state_to_bring_up_to_date(seeded):
    evaluate(seeded, ks=[3])
    assert seeded.value("RETURN count(SELECT id FROM seval_candidate_cache)") == 16
    load_corpus(seeded, [Article(id="new_doc", title="Gift cards", content="Gift cards never expire",
                                 embedding=[0.2, 0.2, 0.2, 0.2])])
    # new content: no list is current, but each was fetched at the corpus's state, which a run brings up to date
    assert sorted(seeded.value("SELECT VALUE list FROM seval_candidate_cache")) == ["bm25"] * 8 + ["vector"] * 8
    after = evaluate(seeded, ks=[3])
    # a question's two lists certified unchanged at the top (surql/certificate.surql), or else every vector list
    # merged and a BM25 list rescored where certain (surql/incremental_bm25.surql), else fetched
    used = after.retrieval
    assert reused(after) == 0 and used["merged"] + used["certified"] >= 8 and used["merged"] + used["certified"] + used["fetched"] == 16
    same_as_fresh(seeded, after, ks=[3])
    seeded.query("DELETE seval_question:two_factor")
    seeded.value("RETURN fn::seval::prune_candidate_cache()")
    assert seeded.value("RETURN count(SELECT id FROM seval_candidate_cache)") == 14  # the deleted question's two lists


def test_tune_reads_the_lists_of_an_earlier_run_and_fresh_fetches_them(seeded):
    assign_splits(seeded, seed=0)
    first = evaluate(seeded, ks=[5])
    tune(seeded, param="floor", values=[0, 3], metric="recall@3")
    runs = set(seeded.value("SELECT VALUE run FROM seval_candidate_cache"))
    assert runs == {to_record(first.run, "seval_run")}  # the sweep and its run read every list
    result = tune(seeded, param="floor", values=[0, 3], metric="recall@3", fresh=True)
    assert result.report.retrieval["reused"] == 0
    # the sweep stores nothing (a refused sweep must change nothing); the fresh run stores its own lists
    assert to_record(result.report.run, "seval_run") in set(seeded.value("SELECT VALUE run FROM seval_candidate_cache"))


def test_the_cli_says_how_many_lists_were_read_and_fresh_reads_none(tmp_path):
    store = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*store, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*store, "evaluate", "--k", "3"]).exit_code == 0
    again = runner.invoke(app, [*store, "evaluate", "--k", "3"])
    assert again.exit_code == 0 and "candidate lists: 16 of 16 read from earlier runs (inputs unchanged), 0 retrieved" in again.stdout
    fresh = runner.invoke(app, [*store, "evaluate", "--k", "3", "--fresh"])
    assert fresh.exit_code == 0 and "candidate lists: 0 of 16 read from earlier runs (inputs unchanged), 16 retrieved" in fresh.stdout


@pytest.mark.slow
def test_on_cisi_a_deeper_list_is_exactly_the_shallower_one_with_more_after_it(tmp_path):
    """A cached list serves a shallower depth by its prefix: exact because every list is ordered by
    score then id, ties included (CISI's BM25 lists hold many equal scores)."""
    from surreal_eval import Settings, connect
    from surreal_eval.golden.files import load_beir

    from .datasets import cisi

    db = connect(Settings(url=f"surrealkv://{tmp_path / 'store'}"))  # not mem://: CISI takes GBs there
    try:
        load_beir(db, cisi(), create_harness=True)
        ids = db.value("SELECT VALUE id FROM seval_question ORDER BY id LIMIT 30")
        lists = db.value(
            "RETURN (SELECT text, embedding FROM $ids).map(|$q| { "
            "bm25: [fn::seval::bm25_candidates('seval_article', $q.text, 100), fn::seval::bm25_candidates('seval_article', $q.text, 10)], "
            "vector: [fn::seval::vec_candidates('seval_article', $q.embedding, 100), fn::seval::vec_candidates('seval_article', $q.embedding, 10)] })",
            {"ids": ids})
        for question in lists:
            for deep, shallow in question.values():
                assert deep[:10] == shallow
        ties = sum(a["score"] == b["score"] for q in lists for a, b in zip(q["bm25"][0], q["bm25"][0][1:]))
        assert ties > 0  # the prefix property was tried on tied scores
        db.query("DELETE seval_question WHERE id NOTINSIDE $ids", {"ids": ids})
        evaluate(db, ks=[100], retrievers=["bm25", "vector"])
        shallow = evaluate(db, ks=[10], retrievers=["bm25", "vector", "hybrid"])
        assert lists_reused(shallow) == {"lists": 60, "reused": 60}
        same_as_fresh(db, shallow, ks=[10], retrievers=["bm25", "vector", "hybrid"])
    finally:
        db.close()
