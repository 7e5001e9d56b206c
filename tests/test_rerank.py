"""A reranking stage (`evaluate --rerank URL`): each retriever's top N reordered by a real /rerank
endpoint on 127.0.0.1, scored as `<retriever>+rerank` beside the first stage, whose recall at N the
run holds; a reranker that fails or answers nonsense records nothing."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from surreal_eval.errors import ConfigError, EndpointFailed
from surreal_eval.present.cli import app
from surreal_eval.runs.endpoints import Endpoint, add_endpoint
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.runs.rerank import Rerank

from .conftest import snapshot
from .search_server import serving

runner = CliRunner()
DEPTH = 5


@pytest.fixture
def server(seeded):
    documents = {a["id"].id: a["title"] + " " + a["content"] for a in seeded.value("SELECT id, title, content FROM seval_article")}
    with serving(documents) as running:
        yield running


def per_question(report, retriever, k):
    return {r.question: r for r in report.per_question if r.retriever == retriever and r.k == k}


def test_a_reranked_run_holds_the_first_stage_at_n_and_the_reranked_list_at_each_k(seeded, server):
    report = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "hybrid"], per_question=True,
                      rerank=Rerank(server.url + "/rerank", depth=DEPTH))
    assert report.retrievers == ["bm25", "bm25+rerank", "hybrid", "hybrid+rerank"] and report.ks == [1, 3, DEPTH]
    assert report.params["depth"] == DEPTH and report.params["supplied"]["rerank"]["of"] == {
        "bm25": "bm25+rerank", "hybrid": "hybrid+rerank"}
    plain = evaluate(seeded, ks=[1, 3, DEPTH], retrievers=["bm25", "hybrid"])
    first = {(r.retriever, r.k): r.scores for r in plain.results}
    for row in report.results:
        if row.retriever in ("bm25", "hybrid"):  # the first stage is scored as a plain run scores it
            assert row.scores == pytest.approx(first[(row.retriever, row.k)])
    contents = {a["id"]: a["content"] for a in seeded.value("SELECT id, content FROM seval_article")}
    texts = {f"seval_question:{q['id'].id}": q["text"] for q in seeded.value("SELECT id, text FROM seval_question")}
    for name in ("bm25", "hybrid"):
        stage, reranked = per_question(report, name, DEPTH), per_question(report, name + "+rerank", DEPTH)
        for question, row in stage.items():
            expected = sorted(row.ranked, key=lambda d: -server.overlap(
                texts[question], next(c for i, c in contents.items() if f"seval_article:{i.id}" == d)))
            assert reranked[question].ranked == expected, (name, question)
            assert reranked[question].recall == row.recall  # the same N records: recall@N cannot move


def test_tei_and_cohere_shapes_rerank_alike(seeded, server):
    runs = [evaluate(seeded, ks=[3], retrievers=["hybrid"], per_question=True,
                     rerank=Rerank(server.url + "/rerank", depth=DEPTH, api=api)) for api in ("cohere", "tei")]
    cohere, tei = (per_question(r, "hybrid+rerank", 3) for r in runs)
    assert {q: r.ranked for q, r in cohere.items()} == {q: r.ranked for q, r in tei.items()}


def test_an_endpoint_retriever_is_reranked_too(seeded, server):
    add_endpoint(seeded, Endpoint(name="docs", url=server.url + "/search?q={text}&k={k}", ids="hits[*].id"))
    report = evaluate(seeded, ks=[1, 3], retrievers=["http:docs"], rerank=Rerank(server.url + "/rerank", depth=DEPTH))
    assert report.retrievers == ["http:docs", "http:docs+rerank"]


@pytest.mark.parametrize(("answer", "message"), [
    ({"results": [{"index": 0, "relevance_score": 1.0}]}, r"reranker scored 1 of the \d+ documents of seval_question:"),
    ({"results": [{"index": 99, "relevance_score": 1.0}]}, "each result needs a new index"),
    ({"results": [{"index": 0, "relevance_score": "high"}]}, "each result needs a new index"),
    ({"ranking": []}, "without a list of {index, score} results"),
])
def test_a_reranker_answering_nonsense_records_nothing(seeded, server, answer, message):
    server.answer = answer
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match=message):
        evaluate(seeded, ks=[1], retrievers=["hybrid"], rerank=Rerank(server.url + "/rerank", depth=DEPTH))
    assert snapshot(seeded) == before


def test_a_failing_reranker_is_retried_then_refused(seeded, server):
    server.fail_first = 2
    report = evaluate(seeded, ks=[1], retrievers=["hybrid"], rerank=Rerank(server.url + "/rerank", depth=DEPTH, retries=2))
    assert report.retrievers == ["hybrid", "hybrid+rerank"] and server.requests == 8 + 2
    server.status = 500
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match=r"reranker answered HTTP 500 for seval_question:\w+ \(hybrid\) \(after 2 attempts\)"):
        evaluate(seeded, ks=[1], retrievers=["hybrid"], rerank=Rerank(server.url + "/rerank", depth=DEPTH, retries=1))
    assert snapshot(seeded) == before


@pytest.mark.parametrize(("rerank", "message"), [
    (Rerank("http://h/rerank", depth=2), "--rerank-depth 2 is shallower than the deepest k = 3"),
    (Rerank("http://h/rerank", depth=0), "--rerank-depth must be"),
    (Rerank("http://h/rerank", api="openai"), "--rerank-api must be one of cohere, tei"),
    (Rerank("h/rerank"), "must be an http:// or https:// URL or local:MODEL"),
    (Rerank("local:"), "must be an http:// or https:// URL or local:MODEL"),
])
def test_bad_rerank_options_are_refused_and_nothing_changes(seeded, rerank, message):
    before = snapshot(seeded)
    with pytest.raises(ConfigError, match=message):
        evaluate(seeded, ks=[1, 3], rerank=rerank)
    assert snapshot(seeded) == before


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None, reason="the local extra is installed")
def test_a_local_cross_encoder_without_the_local_extra_says_how_to_install_it(seeded):
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match=r"pip install 'surreal-eval\[local\]'"):
        evaluate(seeded, ks=[1], retrievers=["hybrid"], rerank=Rerank("local:cross-encoder/ms-marco-MiniLM-L-6-v2"))
    assert snapshot(seeded) == before


def test_evaluate_prints_the_first_stage_recall_at_n_beside_the_reranked_metrics(tmp_path):
    store = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*store, "init", "--demo"]).exit_code == 0
    with serving({"refund_request": "refund"}) as server:  # ids outside the search: only /rerank is called
        result = runner.invoke(app, [*store, "evaluate", "--k", "1,3", "--retriever", "hybrid",
                                     "--rerank", server.url + "/rerank", "--rerank-depth", "5"])
    assert result.exit_code == 0, result.output
    assert f"rerank of the top 5 by {server.url}/rerank: first stage -> reranked" in result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith("│ hybrid ") and "->" in line]
    assert len(lines) == 3  # k = 1, 3 and 5, each with the first stage's recall@5
    assert all(line.split("│")[2].strip() == lines[0].split("│")[2].strip() for line in lines)
