"""`golden promote`: production failures taken into the golden set for good, from a file or from the
questions a run failed; a later load may not silently take them out; every refusal changes nothing."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from surreal_eval import HarnessConfig, Question, Settings, connect, evaluate, import_harness
from surreal_eval.errors import ConfigError, InputError, NotFound, PermissionDenied
from surreal_eval.golden.files import load_golden
from surreal_eval.golden.labels import golden_history
from surreal_eval.golden.promote import promote_failures, promote_run, question_key
from surreal_eval.present.cli import app
from surreal_eval.store.access import grant_evaluator
from surreal_eval.store.golden import golden_rows, golden_set

from .conftest import seed_own, snapshot

runner = CliRunner()


def write_lines(path, *rows) -> str:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8")
    return str(path)


class Fixed:
    """An embedder giving every text the same 4-d vector, counting the texts it was asked for."""

    name = "fixed"
    dimension = 4

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts, *, progress=None):
        self.texts += texts
        return [[0.0, 0.2, 0.9, 0.1] for _ in texts]


def question(db, key: str) -> dict:
    return db.value("SELECT text, source, relevant, grades FROM ONLY type::record('seval_question', $k)", {"k": key})


def test_a_file_of_failures_becomes_questions_marked_production_failure_with_their_answers_as_labels(seeded, tmp_path):
    path = write_lines(tmp_path / "failures.jsonl",
                       {"query": "Parcel  never ARRIVED", "answer": "track_order", "note": "ticket 812", "time": "2025-03-01T10:00:00Z"},
                       {"query": "parcel never arrived", "answer": ["seval_article:contact_support"], "time": "2025-02-01T09:00:00Z"},
                       {"id": "locked_out", "query": "locked out after a trip", "answer": ["account_locked", "password_reset"],
                        "embedding": [0.9, 0.0, 0.1, 0.1]})
    embedder = Fixed()
    done = promote_failures(seeded, path, embedder=embedder, by="ana")
    key = question_key("parcel never arrived")
    assert key.startswith("pf_") and len(key) == 11
    assert (done.questions, done.merged, done.labels, done.embedded) == (2, 0, 4, 1)
    assert embedder.texts == ["Parcel  never ARRIVED"]  # the line with an embedding is not embedded again
    parcel = question(seeded, key)
    assert parcel["source"] == "production-failure" and parcel["grades"] == [1, 1]
    assert [r.id for r in parcel["relevant"]] == ["track_order", "contact_support"]
    assert question(seeded, "locked_out")["source"] == "production-failure"
    kept = seeded.value("SELECT VALUE [source, by, note, origin] FROM seval_label WHERE question = type::record('seval_question', $k)"
                        " ORDER BY doc", {"k": key})
    assert kept == [["production-failure", "ana", "ticket 812", "set"]] * 2
    changes = [c for c in golden_history(seeded)[1] if c.source == "production-failure"]
    promoted = [c for c in changes if c.action == "question-promoted"]
    assert sorted(c.question for c in promoted) == ["seval_question:locked_out", f"seval_question:{key}"]
    # the earliest time the query failed is kept with the promotion
    assert [c.failed_at.isoformat() for c in promoted if c.question.endswith(key)] == ["2025-02-01T09:00:00+00:00"]
    assert len([c for c in changes if c.action == "label-added"]) == 4
    run = evaluate(seeded, ks=[3], retrievers=["vector"], per_question=True)
    assert run.questions == 10 and f"seval_question:{key}" in {r.question for r in run.per_question}


def test_a_query_asked_as_another_sources_question_becomes_its_own_question_beside_it(seeded, tmp_path):
    before = question(seeded, "where_parcel")
    promote_failures(seeded, write_lines(tmp_path / "f.jsonl", {"query": "Where is my parcel", "answer": "contact_support"}),
                     embedder=Fixed())
    assert question(seeded, "where_parcel") == before
    beside = question(seeded, question_key("where is my parcel"))
    assert beside["source"] == "production-failure" and [r.id for r in beside["relevant"]] == ["contact_support"]


def test_promoting_a_failure_again_adds_only_the_answers_it_lacks(seeded, tmp_path):
    promote_failures(seeded, write_lines(tmp_path / "a.csv", "query,answer", "card declined,update_payment"), embedder=Fixed())
    again = promote_failures(seeded, write_lines(tmp_path / "b.csv", "query,answer", "card declined,update_payment;contact_support"))
    assert (again.questions, again.merged, again.labels, again.embedded) == (0, 1, 1, 0)
    assert [r.id for r in question(seeded, question_key("card declined"))["relevant"]] == ["update_payment", "contact_support"]


def test_a_runs_failing_questions_are_promoted_in_the_harnesss_own_set(seeded):
    run = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "vector"], per_question=True)
    failing = sorted(r.question for r in run.per_question if r.retriever == "vector" and r.k == 1 and r.scores["recall"] <= 0.5)
    assert failing  # the demo's vector retriever misses some at recall@1
    done = promote_run(seeded, run.run, "recall@1", below=0.5, retriever="vector", by="ana")
    assert sorted(done.ids) == failing and done.already == 0
    assert sorted(f"seval_question:{r.id}" for r in seeded.value(
        "SELECT VALUE id FROM seval_question WHERE source = 'production-failure'")) == failing
    history = [c for c in golden_history(seeded)[1] if c.action == "question-promoted"]
    assert sorted(c.question for c in history) == failing and {c.by for c in history} == {"ana"}
    assert promote_run(seeded, run.run, "recall@1", below=0.5, retriever="vector").already == len(failing)


def test_a_runs_failing_questions_of_an_attached_set_are_marked_on_the_harnesss_side(lesson):
    table = lesson.value("SELECT * FROM question ORDER BY id")
    run = evaluate(lesson, ks=[1], retrievers=["vector"], per_question=True)
    failing = sorted(r.question for r in run.per_question if r.scores["recall"] <= 0.5)
    done = promote_run(lesson, run.run, "recall@1", below=0.5)
    assert sorted(done.ids) == failing and done.golden == "question"
    assert lesson.value("SELECT * FROM question ORDER BY id") == table  # the user's table is never written
    rows = golden_rows(lesson, golden_set(lesson, "question"))
    assert sorted(str(r["id"].table_name) + ":" + str(r["id"].id) for r in rows if r["source"] == "production-failure") == failing


def test_a_load_may_not_silently_demote_a_promoted_question(seeded, tmp_path):
    promote_failures(seeded, write_lines(tmp_path / "f.jsonl", {"id": "declined", "query": "card declined",
                                                                 "answer": ["update_payment", "contact_support"]}), embedder=Fixed())
    from surreal_eval.load.readers import read_questions

    base = {"id": "declined", "text": "card declined", "embedding": [0.0, 0.2, 0.9, 0.1]}
    for row, says in [({**base, "relevant": ["update_payment", "contact_support"], "source": "expert"}, "gives it source expert"),
                      ({**base, "relevant": ["update_payment"]}, "drops its label seval_article:contact_support")]:
        before = snapshot(seeded)
        path = write_lines(tmp_path / "golden.jsonl", {**base, "id": "other", "relevant": ["track_order"]}, row)
        with pytest.raises(InputError, match=f"golden.jsonl:2: question 'declined' was promoted .* {says}"):
            load_golden(seeded, read_questions(tmp_path / "golden.jsonl"))
        assert snapshot(seeded) == before, path
    # a line naming no source keeps the mark
    load_golden(seeded, [Question(**base, relevant=["update_payment", "contact_support", "track_order"])])
    assert question(seeded, "declined")["source"] == "production-failure"
    # --demote does it on purpose, and the history keeps it
    load_golden(seeded, [Question(**base, relevant=["update_payment"], source="expert")], demote=True)
    assert question(seeded, "declined")["source"] == "expert"
    assert [c.action for c in golden_history(seeded)[1] if c.question == "seval_question:declined"][-1] == "question-demoted"


# ------------------------------------------------------------------------------------ refusals


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store on disk with the demo in the harness's own tables and one finished run (vector and bm25 at k 1, 3)."""
    url = f"surrealkv://{tmp_path_factory.mktemp('promote') / 'store'}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
        run = evaluate(owner, ks=[1, 3], retrievers=["bm25", "vector"]).run
        grant_evaluator(owner, "ci", "correct horse battery")
    return url, run


def refused(url: str, args: list[str], env: dict | None = None) -> tuple[int, str]:
    with connect(Settings(url=url)) as owner:
        before = snapshot(owner)
    result = runner.invoke(app, ["--url", url, "golden", "promote", *args], env=env)
    with connect(Settings(url=url)) as owner:
        assert snapshot(owner) == before
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output, result.output
    return result.exit_code, result.stderr


@pytest.mark.parametrize(("lines", "says"), [
    (['{"query": "card declined", "answer": "update_payment"', ], "f.jsonl:1: not valid JSON"),
    ([{"query": "card declined"}], "f.jsonl:1: answer: Field required"),
    ([{"query": "card declined", "answer": []}], "f.jsonl:1: answer: List should have at least 1 item"),
    ([{"query": "a", "answer": "track_order", "embedding": [0, 0, 1, 0]}, {"query": "card declined", "answer": "gone"}],
     "f.jsonl:2: question 'pf_.{8}': answer 'gone' is no record that exists"),
    ([{"query": "card declined", "answer": "track_order", "time": "last tuesday"}], "f.jsonl:1: time: Input should be a valid datetime"),
    ([{"query": "card declined", "answer": "track_order", "colour": "red"}], "f.jsonl:1: colour: Extra inputs are not permitted"),
    ([{"id": "x", "query": "card declined", "answer": "track_order"}, {"id": "x", "query": "card stolen", "answer": "track_order"}],
     "f.jsonl:2: id 'x' is given to two different queries"),
    ([{"id": "money_back", "query": "refund please", "answer": "track_order"}], "question seval_question:money_back exists with source none"),
    ([{"query": "card declined", "answer": "track_order"}], "f.jsonl:1: question .* has no embedding: give --embedder"),
    ([], "f.jsonl: no production failure in it"),
])
def test_golden_promote_refuses_a_bad_file_in_one_line_changing_nothing(store, tmp_path, lines, says):
    url, _ = store
    code, message = refused(url, [write_lines(tmp_path / "f.jsonl", *lines)])
    assert code == 2
    assert re.search(says, message), message


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--from-run", "seval_run:nowhere", "--metric", "recall@1"], 2, "no finished run seval_run:nowhere"),
    (["--from-run", "{run}", "--metric", "recall@5", "--retriever", "vector"], 2, "measured no cutoff 5"),
    (["--from-run", "{run}", "--metric", "bleu@1", "--retriever", "vector"], 2, "unknown metric 'bleu@1'"),
    (["--from-run", "{run}", "--metric", "recall@1", "--retriever", "splade"], 2, "did not run retriever 'splade'"),
    (["--from-run", "{run}", "--metric", "recall@1"], 2, "ran bm25, vector: choose one with --retriever"),
    (["--from-run", "{run}"], 2, "--from-run needs --metric"),
    ([], 2, "give either a FILE"),
])
def test_golden_promote_refuses_a_bad_run_in_one_line_changing_nothing(store, args, code, says):
    url, run = store
    got, message = refused(url, [a.replace("{run}", run) for a in args])
    assert (got, says in message) == (code, True), message


def test_an_evaluator_may_not_promote_and_the_cli_exits_5_changing_nothing(store, tmp_path):
    url, run = store
    env = {"SURREAL_EVAL_PASS": "correct horse battery"}
    path = write_lines(tmp_path / "f.jsonl", {"query": "card declined", "answer": "track_order", "embedding": [0, 0, 1, 0]})
    for args in ([path], ["--from-run", run, "--metric", "recall@1", "--retriever", "vector", "--below", "1"]):
        with connect(Settings(url=url)) as owner:
            before = snapshot(owner)
        result = runner.invoke(app, ["--url", url, "--access", "seval_evaluator", "--user", "ci", "golden", "promote", *args], env=env)
        assert result.exit_code == 5, result.output
        assert len(result.stderr.strip().splitlines()) == 1
        with connect(Settings(url=url)) as owner:
            assert snapshot(owner) == before
    with connect(Settings(url=url, access="seval_evaluator", user="ci", password="correct horse battery")) as ci:
        with pytest.raises(PermissionDenied):
            promote_failures(ci, path)
        with pytest.raises(PermissionDenied):
            promote_run(ci, run, "recall@1", retriever="vector", below=1)


def test_the_cli_promotes_a_file_and_a_run_and_load_golden_refuses_to_demote(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
        run = evaluate(owner, ks=[1], retrievers=["vector"]).run
    path = write_lines(tmp_path / "f.jsonl", {"id": "declined", "query": "card declined", "answer": "update_payment",
                                              "embedding": [0, 0, 1, 0]})
    done = runner.invoke(app, ["--url", url, "golden", "promote", path, "--by", "ana"])
    assert done.exit_code == 0, done.output
    assert "promoted 1 production failures into seval_question (1 labels)" in done.stdout
    marked = runner.invoke(app, ["--url", url, "golden", "promote", "--from-run", run, "--metric", "recall@1"])
    assert marked.exit_code == 0, marked.output
    assert "promoted 1 questions of seval_question to production-failure (recall@1 <= 0)" in marked.stdout
    history = runner.invoke(app, ["--url", url, "golden", "history"])
    assert "question-promoted seval_question:declined [production-failure, ana]" in history.stdout
    assert "question-promoted seval_question:rate_limit [production-failure" in history.stdout
    golden = write_lines(tmp_path / "golden.jsonl", {"id": "rate_limit", "text": "429 too many requests", "embedding": [0.5] * 4,
                                                      "relevant": ["api_rate_limits"], "source": "synthetic"})
    refused = runner.invoke(app, ["--url", url, "load", "golden", golden])
    assert refused.exit_code == 2
    assert f"{golden}:1: question 'rate_limit' was promoted from a production failure" in refused.stderr
    assert runner.invoke(app, ["--url", url, "load", "golden", golden, "--demote"]).exit_code == 0


def test_promote_names_an_unknown_run_as_not_found(seeded):
    with pytest.raises(NotFound):
        promote_run(seeded, "nowhere", "recall@1")
    with pytest.raises(ConfigError):
        promote_run(seeded, evaluate(seeded, ks=[1], retrievers=["vector"]).run, "recall@3")
