"""A live search endpoint as a retriever (`--retriever http:NAME`): a real endpoint on 127.0.0.1,
searched for every question with the text sent as data, with bounded concurrency, retries and timeouts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval.errors import ConfigError, EndpointFailed, InputError
from surreal_eval.present.cli import app
from surreal_eval.runs.endpoints import Endpoint, add_endpoint, endpoints, remove_endpoint
from surreal_eval.runs.evaluate import evaluate

from .conftest import snapshot
from .search_server import serving

runner = CliRunner()


@pytest.fixture
def server(seeded):
    documents = {a["id"].id: a["title"] + " " + a["content"] for a in seeded.value("SELECT id, title, content FROM seval_article")}
    with serving(documents) as running:
        yield running


def register(db, server, **options):
    fields = {"name": "docs", "url": server.url + "/search?q={text}&k={k}", "ids": "hits[*].id",
              "scores": "hits[*].score", "retries": 0, **options}
    return add_endpoint(db, Endpoint(**fields))


def test_an_endpoint_is_evaluated_beside_the_built_in_retrievers(seeded, server):
    register(seeded, server)
    report = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "http:docs"], per_question=True)
    assert report.retrievers == ["bm25", "http:docs"] and server.requests == 8
    assert report.params["supplied"]["endpoints"] == {"docs": server.url + "/search"}
    texts = sorted(q["text"] for q in seeded.value("SELECT text FROM seval_question"))
    assert sorted(server.seen) == texts  # each question's text arrived whole, as it is
    for row in (r for r in report.per_question if r.retriever == "http:docs"):
        expected = server.search(seeded.value("SELECT VALUE text FROM ONLY type::record('seval_question', $q)", {"q": row.question.split(":", 1)[1]}), 3)
        assert [h.split(":", 1)[1] for h in row.ranked] == [h["id"] for h in expected["hits"]][: row.k]
    assert {r.retriever for r in report.results} == {"bm25", "http:docs"}


def test_a_bare_name_and_a_post_body_work_like_a_get(seeded, server):
    register(seeded, server, name="posted", url=server.url + "/search", post='{"query": "{text}", "k": {k}}')
    by_post = evaluate(seeded, ks=[3], retrievers=["posted"])
    register(seeded, server)
    by_get = evaluate(seeded, ks=[3], retrievers=["http:docs"])
    assert by_post.retrievers == ["http:posted"]
    assert by_post.results[0].scores == pytest.approx(by_get.results[0].scores)


def test_hostile_question_text_is_sent_as_data(seeded, server):
    seeded.query("UPDATE seval_question:money_back SET text = $t", {"t": 'refund & k=999 "} {k} ?q=x#frag'})
    register(seeded, server, name="posted", url=server.url + "/search", post='{"query": "{text}", "k": {k}}')
    register(seeded, server)
    evaluate(seeded, ks=[2], retrievers=["http:docs", "http:posted"])
    assert server.seen.count('refund & k=999 "} {k} ?q=x#frag') == 2


def test_requests_in_flight_never_exceed_the_endpoint_concurrency(seeded, server):
    server.delay = 0.1
    register(seeded, server, concurrency=2)
    evaluate(seeded, ks=[1], retrievers=["http:docs"])
    assert server.requests == 8 and server.most_in_flight == 2


def test_a_503_is_retried_and_the_run_recorded(seeded, server):
    server.fail_first = 3
    register(seeded, server, retries=2)
    report = evaluate(seeded, ks=[1], retrievers=["http:docs"])
    assert server.requests == 8 + 3 and report.questions == 8


def test_an_endpoint_failing_after_its_retries_records_nothing(seeded, server):
    server.status = 503
    register(seeded, server, retries=1)
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match=r"endpoint docs answered HTTP 503 for seval_question:\w+ \(after 2 attempts\)"):
        evaluate(seeded, ks=[1], retrievers=["bm25", "http:docs"])
    assert snapshot(seeded) == before


def test_a_slow_endpoint_times_out(seeded, server):
    server.delay = 1.0
    register(seeded, server, timeout=0.2)
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match=r"endpoint docs gave no answer within 0.2 s at http://127.0.0.1:\d+/search \(after 1 attempt\)"):
        evaluate(seeded, ks=[1], retrievers=["http:docs"])
    assert snapshot(seeded) == before


@pytest.mark.parametrize(("answer", "options", "error", "message"), [
    ({"results": []}, {}, EndpointFailed, "--ids 'hits[*].id' found no list of ids in the answer for seval_question:"),
    ({"hits": [{"id": "refund_request", "score": "x"}]}, {}, EndpointFailed, "--scores 'hits[*].score' found no number"),
    ({"hits": [{"id": "refund_request", "score": 1}, {"id": "refund_request", "score": 1}]}, {}, EndpointFailed,
     "ranked one id twice"),
    ({"hits": [{"id": "nowhere", "score": 1}]}, {}, InputError, "endpoint docs returned 'nowhere' for seval_question:"),
])
def test_an_answer_without_the_ranking_records_nothing(seeded, server, answer, options, error, message):
    server.answer = answer
    register(seeded, server, **options)
    before = snapshot(seeded)
    with pytest.raises(error, match=message.replace("[", r"\[").replace("*", r"\*")):
        evaluate(seeded, ks=[1], retrievers=["http:docs"])
    assert snapshot(seeded) == before


def test_an_endpoint_that_is_down_fails_with_exit_4(tmp_path):
    store = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*store, "init", "--demo"]).exit_code == 0
    added = runner.invoke(app, [*store, "endpoint", "add", "gone", "--search-url", "http://127.0.0.1:9/s?q={text}",
                                "--ids", "hits[*].id", "--retries", "1", "--timeout", "1"])
    assert added.exit_code == 0, added.output
    listed = json.loads(runner.invoke(app, [*store, "endpoint", "list", "--json"]).stdout)
    assert [e["name"] for e in listed] == ["gone"]
    result = runner.invoke(app, [*store, "evaluate", "--retriever", "bm25,http:gone"])
    assert result.exit_code == 4
    assert result.stderr.strip().splitlines() == [
        "error: endpoint gone cannot be reached at http://127.0.0.1:9/s (ConnectError) (after 2 attempts)"]
    assert json.loads(runner.invoke(app, [*store, "runs", "list", "--json"]).stdout) == []


@pytest.mark.parametrize(("options", "message"), [
    ({"url": "ftp://h/s?q={text}"}, "must be an http:// or https:// URL"),
    ({"url": "http://h/{text}"}, "only as query parameter values"),
    ({"url": "http://h/s?{text}=1"}, "only as query parameter values"),
    ({"url": "http://h/s?q={query}"}, "holds {query}: only {text} and {k}"),
    ({"url": "http://h/s?k={k}"}, "the question's text is never sent"),
    ({"url": "http://h/s", "post": '{"query": {text}}'}, "--post is not JSON"),
    ({"url": "http://h/s", "post": '["{text}"]'}, "--post must be a JSON object"),
    ({"ids": "hits[*"}, "--ids 'hits[*' is not a JMESPath expression"),
    ({"name": "bad-name"}, "endpoint name 'bad-name' is not a valid identifier"),
    ({"concurrency": 0}, "--concurrency must be at least 1"),
    ({"timeout": 0}, "--timeout must be above 0"),
])
def test_a_bad_endpoint_is_refused_and_nothing_changes(db, options, message):
    fields = {"name": "docs", "url": "http://h/s?q={text}&k={k}", "ids": "hits[*].id", **options}
    before = snapshot(db)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("*", r"\*").replace("{", r"\{")):
        add_endpoint(db, Endpoint(**fields))
    assert snapshot(db) == before


def test_an_endpoint_is_registered_once_listed_and_removed(db):
    fields = {"name": "docs", "url": "http://h/s?q={text}&k={k}", "ids": "hits[*].id"}
    add_endpoint(db, Endpoint(**fields))
    with pytest.raises(InputError, match="endpoint docs is already registered"):
        add_endpoint(db, Endpoint(**fields))
    assert [e.name for e in endpoints(db)] == ["docs"]
    with pytest.raises(ConfigError, match="no endpoint other: register it"):
        evaluate(db, ks=[1], retrievers=["http:other"])
    remove_endpoint(db, "docs")
    assert endpoints(db) == []
