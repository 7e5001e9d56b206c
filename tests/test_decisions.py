"""Decisions the output questions (issue 25): tune's verdict on the held-out questions, parameters
that cannot change the metric asked for, and what a run on a chunk table records and shows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval.grammar import MetricSpec
from surreal_eval.present.cli import app
from surreal_eval.runs.tune import assign_splits, tune
from surreal_eval.runs.tune_verdict import inert_note, rrf_inert, verdict


def _table(current, chosen, pairs):
    """A fn::seval::tune_scores table of [current, chosen] over questions scoring (current, chosen) as `pairs`."""
    return {"values": [current, chosen],
            "questions": [{"id": f"q{i}", "labels": 1, "scores": list(p)} for i, p in enumerate(pairs)]}


# ---------------------------------------------------------------------------------------------
# tune's verdict
# ---------------------------------------------------------------------------------------------


def test_a_value_picked_on_dev_that_scores_lower_on_test_is_no_better():
    # the case: floor 8.6 won on dev; on 100 test questions it loses 3 and gains 2 against floor 0
    pairs = [(1, 0)] * 3 + [(0, 1)] * 2 + [(1, 1)] * 40 + [(0, 0)] * 55
    judged = verdict(_table(0, 8.6, pairs), "floor", MetricSpec("recall", 10), "test")
    assert judged.mean_a == pytest.approx(0.43) and judged.mean_b == pytest.approx(0.42)
    assert judged.difference == pytest.approx(-0.01) and judged.verdict == "no different"
    assert "floor = 8.6 is NO BETTER than the current floor = 0" in judged.line
    assert "-0.0100" in judged.line and "p = " in judged.line and "100 questions" in judged.line


@pytest.mark.parametrize(("pairs", "kind"), [([(0, 1)] * 20 + [(1, 1)] * 20, "better"), ([(1, 0)] * 20 + [(1, 1)] * 20, "worse")])
def test_a_clear_difference_on_test_is_better_or_worse(pairs, kind):
    judged = verdict(_table(60, 10, pairs), "rrf_k", MetricSpec("recall", 5), "test")
    assert judged.verdict == kind and judged.p_value < 0.05
    assert f"rrf_k = 10 is {kind.upper()} than the current rrf_k = 60" in judged.line


def test_tune_tests_the_chosen_floor_against_the_current_one_on_test(seeded):
    assign_splits(seeded, seed=0)
    result = tune(seeded, param="floor", values=[0, 1, 2, 4], metric="recall@3")
    assert result.best == 2 and result.verdict is not None
    # the current floor is the run's default, 3.0; both fix every test question
    assert (result.verdict.current, result.verdict.chosen, result.verdict.split) == (3.0, 2, "test")
    assert result.verdict.n == result.report.questions
    chosen_mean = next(r.scores["recall"] for r in result.report.results if r.retriever == "hybrid_floor" and r.k == 3)
    assert result.verdict.mean_b == pytest.approx(chosen_mean)  # the chosen value as the recorded run scored it
    assert result.verdict.verdict == "no different" and "NO BETTER than the current floor = 3.0" in result.verdict.line


def test_tune_takes_the_current_setting_from_the_given_parameters(seeded):
    assign_splits(seeded, seed=0)
    result = tune(seeded, param="floor", values=[0, 2], metric="recall@3", params={"floor": 0})
    assert result.verdict.current == 0 and result.verdict.chosen == 2


def test_tune_prints_its_verdict_and_puts_it_in_json(tmp_path):
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "split", "--seed", "0"]).exit_code == 0
    tune_args = [*url, "tune", "--param", "floor", "--values", "0,1,2,4", "--metric", "recall@3"]
    shown = runner.invoke(app, tune_args)
    assert shown.exit_code == 0, shown.output
    assert "verdict: on the test split floor = " in shown.stdout and "than the current floor = 3.0" in shown.stdout
    data = json.loads(runner.invoke(app, [*tune_args, "--json"]).stdout)
    assert data["verdict"]["verdict"] == "no different" and data["verdict"]["current"] == 3.0


# ---------------------------------------------------------------------------------------------
# parameters that cannot change the metric
# ---------------------------------------------------------------------------------------------


def test_rrf_constants_of_at_least_depth_minus_one_keep_the_top_k_set():
    assert rrf_inert([60, 100_000], depth=10, k=10, metric="recall")
    assert rrf_inert([9, 60], depth=10, k=10, metric="hit_rate")
    assert not rrf_inert([1, 60], depth=10, k=10, metric="recall")  # c = 1 < 9: a record in one list can win
    assert not rrf_inert([60, 100_000], depth=10, k=5, metric="recall")  # the order within the top 10 decides the top 5
    assert not rrf_inert([60, 100_000], depth=10, k=10, metric="ndcg")  # rank-aware: the order counts


def test_rrf_below_depth_minus_one_can_change_the_top_k_set(db):
    # the bound is tight: lists of depth 10 sharing their last three records (ranks 8, 9, 10 in both);
    # at c = 1 the eight singles at ranks 1-4 outscore the shared record at (10, 10): 1/5 > 2/11
    one = [{"id": f"a{i}", "score": 1} for i in range(1, 8)] + [{"id": f"s{i}", "score": 1} for i in (8, 9, 10)]
    two = [{"id": f"b{i}", "score": 1} for i in range(1, 8)] + [{"id": f"s{i}", "score": 1} for i in (8, 9, 10)]
    top = lambda c: set(db.value("RETURN fn::seval::fuse_rrf([$one, $two], 10, $c).id", {"one": one, "two": two, "c": c}))  # noqa: E731
    assert top(9) == top(60) == top(100_000)
    assert "s10" in top(9) and "s10" not in top(1)


def test_a_sweep_the_metric_cannot_see_says_so(seeded):
    assign_splits(seeded, seed=0)
    result = tune(seeded, param="rrf_k", values=[2, 60, 1000], metric="recall@3")
    assert result.best is None  # every value ties
    assert result.inert and "rrf_k cannot change recall@3" in result.inert and "depth 3 = k" in result.inert
    ranked = tune(seeded, param="rrf_k", values=[2, 60, 1000], metric="mrr@3")
    assert ranked.inert is None  # the order within the top k is what mrr sees


def test_floors_below_every_bm25_score_are_named(seeded):
    assign_splits(seeded, seed=0)
    result = tune(seeded, param="floor", values=[0, 0.5, 2], metric="recall@3")
    lowest = seeded.value("RETURN fn::seval::tune_scores('floor', [0], 'recall', 3, 'hybrid_floor', {split: 'dev'}).lowest_bm25")
    assert 0.5 < lowest < 2
    assert result.inert.startswith("floor = 0, 0.5 cannot change recall@3")
    assert inert_note("floor", [2, 3], MetricSpec("recall", 3), 3, lowest) is None


def test_compare_notes_an_rrf_change_that_cannot_move_recall_at_depth(seeded):
    from surreal_eval import evaluate
    from surreal_eval.analysis.compare import compare_runs

    a, b = (evaluate(seeded, ks=[3], params={"rrf_k": c}) for c in (60, 100_000))
    (note,) = compare_runs(seeded, a.run, b.run).notes
    assert note.startswith("rrf_k 60 → 100000 cannot change recall@3, hit_rate@3, precision@3 of hybrid, hybrid_floor")
    c, d = (evaluate(seeded, ks=[1, 3], params={"rrf_k": c}) for c in (1, 60))  # 1 < depth - 1: it could
    assert compare_runs(seeded, c.run, d.run).notes == []


def test_compare_notes_floors_below_every_bm25_score(seeded):
    from surreal_eval import evaluate
    from surreal_eval.analysis.compare import compare_runs

    lowest_floor, low, high = (evaluate(seeded, ks=[3], params={"floor": f}) for f in (0, 1, 3))
    (note,) = compare_runs(seeded, lowest_floor.run, low.run).notes
    assert note.startswith("floor 0 → 1 cannot change hybrid_floor") and "lowest 1.121" in note  # BM25 reads titles too
    assert compare_runs(seeded, lowest_floor.run, high.run).notes == []  # 3 cuts some candidates


# ---------------------------------------------------------------------------------------------
# chunk tables
# ---------------------------------------------------------------------------------------------


def _chunk(db, size, overlap):
    from surreal_eval.load.chunking import chunk_corpus
    from tests.test_chunks import WordHashEmbedder

    chunk_corpus(db, source="seval_article", target="seval_chunk_t", size=size, overlap=overlap, embedder=WordHashEmbedder())


def test_a_run_on_a_chunk_table_records_its_chunking_and_compare_shows_a_change(seeded):
    from surreal_eval import evaluate
    from surreal_eval.analysis.compare import compare_runs

    _chunk(seeded, 8, 2)
    first = evaluate(seeded, ks=[3], params={"corpus": "seval_chunk_t"})
    assert first.params["chunking"] == {"source": "seval_article", "unit": "words", "size": 8, "overlap": 2}
    _chunk(seeded, 5, 0)
    second = evaluate(seeded, ks=[3], params={"corpus": "seval_chunk_t"})
    changes = {c.field: (c.a, c.b) for c in compare_runs(seeded, first.run, second.run).changes}
    assert changes["params.chunking.size"] == (8, 5) and changes["params.chunking.overlap"] == (2, 0)
    assert "params.chunking.source" not in changes
    assert "chunking" not in evaluate(seeded, ks=[3]).params  # the documents are not chunks


def test_chunk_size_states_its_unit(tmp_path, monkeypatch):
    from surreal_eval.load import embedders
    from tests.test_chunks import WordHashEmbedder

    monkeypatch.setattr(embedders, "embedder_from_spec", lambda spec: WordHashEmbedder())  # the demo's 4-d vectors
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert "in words" in " ".join(runner.invoke(app, ["chunk", "--help"], terminal_width=200).stdout.split())
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    done = runner.invoke(app, [*url, "chunk", "--into", "seval_chunk_c", "--size", "7", "--overlap", "2", "--embedder", "local:x"])
    assert done.exit_code == 0, done.output
    assert "size 7 words, overlap 2 words" in done.stdout


def test_evaluate_gives_the_distinct_documents_of_the_top_k_chunks(seeded):
    from surreal_eval import evaluate
    from tests.test_chunks import make_chunks

    make_chunks(seeded, "seval_chunk_small", 6)
    report = evaluate(seeded, ks=[1, 3, 5], params={"corpus": "seval_chunk_small"})
    texts = seeded.value("SELECT VALUE text FROM seval_question ORDER BY id")
    for k in (1, 3, 5):
        # counted here from the BM25 chunk lists themselves: each chunk's doc, distinct, over the top k
        counts = [len({str(h["id"]).split(":")[1].split("#")[0] for h in
                       seeded.value("RETURN fn::seval::bm25_candidates('seval_chunk_small', $t, 5)", {"t": t})[:k]})
                  for t in texts]
        (row,) = [r for r in report.results if r.retriever == "bm25" and r.k == k]
        assert row.documents == pytest.approx(sum(counts) / len(counts))
    assert any(r.documents < r.k for r in report.results)  # several chunks of one document share the top k
    assert all(r.documents is None for r in evaluate(seeded, ks=[3]).results)


def test_diagnose_marks_the_chunks_of_labelled_documents(seeded):
    from surreal_eval.runs.diagnose import diagnose
    from tests.test_chunks import make_chunks

    make_chunks(seeded, "seval_chunk_small", 6)
    found = diagnose(seeded, "rate_limit", k=5, params={"corpus": "seval_chunk_small"})
    bm25 = next(v for v in found.retrievers if v.retriever == "bm25")
    assert [h.relevant for h in bm25.hits] == [h.doc == "seval_article:api_rate_limits" for h in bm25.hits]
    assert any(h.relevant for h in bm25.hits)
    # a label names a document: the unjudged chunks are offered as their documents, never as chunk ids
    assert found.label_commands and all(doc.startswith("seval_article:") for doc in found.label_commands)
    assert all(h.judged == (h.doc == "seval_article:api_rate_limits") for v in found.retrievers for h in v.hits)


@pytest.mark.slow
def test_tune_on_cisi_prints_its_test_split_verdict(tmp_path):
    from .datasets import cisi

    url = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    for args in (["load", "beir", str(cisi())], ["split", "--dev", "0.5"]):
        assert CliRunner().invoke(app, [*url, *args]).exit_code == 0
    result = CliRunner().invoke(app, [*url, "tune", "--param", "floor", "--metric", "recall@10"])
    assert result.exit_code == 0, result.output
    (line,) = [row for row in result.output.splitlines() if row.startswith("verdict: on the test split floor = ")]
    assert "than the current floor = 3.0 (recall@10 " in line and "questions paired)" in line
    assert any(word in line for word in ("NO BETTER", "BETTER", "WORSE"))
