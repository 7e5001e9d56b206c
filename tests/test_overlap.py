"""How far two rankings differ without any judgment (top-k overlap and rank-biased overlap), the share of
each top k nobody judged, and the `golden label` commands diagnose and compare print for unjudged documents.

Hand-worked RBO (Webber et al. 2010, eq. 32, RBO_ext), equal lengths k: (1-p)/p Σ_{d≤k} X_d/d p^d + X_k/k p^k.
"""

from __future__ import annotations

import json
import shlex

import pytest
from typer.testing import CliRunner

from surreal_eval import ConfigError, Question, Settings, compare_retrievers, compare_runs, connect, evaluate, write_report
from surreal_eval.analysis.overlap import jaccard, rbo
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_golden
from surreal_eval.present.cli import app
from surreal_eval.runs.diagnose import diagnose, label_command

from .conftest import lesson_rows

runner = CliRunner()


def test_jaccard_is_the_shared_ids_over_all_ids_of_the_two_top_k():
    assert jaccard(["a", "b", "c"], ["c", "b", "d"]) == pytest.approx(2 / 4)
    assert jaccard(["a"], ["b"]) == 0.0
    assert jaccard([], []) == 1.0  # two empty lists agree
    assert jaccard(["a", "b"], ["b", "a"]) == 1.0  # order is not looked at


@pytest.mark.parametrize(("a", "b", "p", "expected"), [
    # X = 1, 1, 3: (1/9)(0.9 + 0.405 + 0.729) + 0.729 = 0.226 + 0.729
    (["a", "b", "c"], ["a", "c", "b"], 0.9, 0.955),
    # X = 0, 0, 1: (1/9)(1/3 · 0.729) + 1/3 · 0.729 = 0.027 + 0.243
    (["a", "b", "c"], ["d", "e", "c"], 0.9, 0.27),
    # X = 0, 2 at p = 0.5: 1 · (0 + 2/2 · 0.25) + 2/2 · 0.25 = 0.5
    (["a", "b"], ["b", "a"], 0.5, 0.5),
    # uneven, S = [a], L = [a, b], p = 0.5: X1 = X2 = 1, Xs = 1:
    # 1 · (0.5 + 0.125 + 1·1/(1·2)·0.25) + ((1-1)/2 + 1/1)·0.25 = 0.75 + 0.25
    (["a"], ["a", "b"], 0.5, 1.0),
    # uneven, S = [b], L = [a, b], p = 0.5: X1 = 0, X2 = 1, Xs = 0: (0 + 1/2 · 0.25) + (1/2 + 0)·0.25 = 0.125 + 0.125
    (["b"], ["a", "b"], 0.5, 0.25),
    (["a", "b", "c"], ["d", "e", "f"], 0.9, 0.0),
])
def test_rbo_matches_values_worked_by_hand(a, b, p, expected):
    assert rbo(a, b, p) == pytest.approx(expected)
    assert rbo(b, a, p) == pytest.approx(expected)  # symmetric


@pytest.mark.parametrize("p", [0.5, 0.9, 0.98])
def test_rbo_of_identical_lists_is_one_at_any_persistence(p):
    assert rbo(list("abcdefg"), list("abcdefg"), p) == pytest.approx(1.0)
    assert rbo([], [], p) == 1.0 and rbo([], ["a"], p) == 0.0


@pytest.mark.parametrize("p", [0, 1, 1.5])
def test_rbo_refuses_a_persistence_outside_zero_to_one(p):
    with pytest.raises(ConfigError, match="RBO's p"):
        rbo(["a"], ["a"], p)


def test_two_retrievers_of_the_lesson_overlap_as_worked_by_hand(lesson):
    run = evaluate(lesson, ks=[3], retrievers=["bm25", "vector"], per_question=True)
    ranked = {r.retriever: r.ranked for r in run.per_question if r.question == "question:money_back"}
    # the lesson's money_back: BM25 finds none of its two labels (refund_request, cancel_subscription), vector both
    assert ranked == {"bm25": ["article:track_order", "article:return_item", "article:update_payment"],
                      "vector": ["article:refund_request", "article:cancel_subscription", "article:update_payment"]}
    comparison = compare_retrievers(lesson, run.run, "bm25", "vector", "recall@3")
    (at3,) = comparison.overlap
    assert (at3.retriever, at3.k, at3.n, at3.p) == ("bm25→vector", 3, 8, 0.9)
    (money_back,) = [q for q in at3.questions if q.question == "question:money_back"]
    # one shared id of five; X = 0, 0, 1: RBO 0.27 (as in test_rbo_matches_values_worked_by_hand)
    assert (money_back.jaccard, money_back.rbo) == (pytest.approx(1 / 5), pytest.approx(0.27))
    # nobody judged any of BM25's three; of vector's, only update_payment
    assert (money_back.unjudged_a, money_back.unjudged_b) == (pytest.approx(1.0), pytest.approx(1 / 3))
    assert at3.jaccard == pytest.approx(sum(q.jaccard for q in at3.questions) / 8)


def test_compare_of_two_runs_names_the_unjudged_new_documents_of_a_broken_question(seeded):
    base = evaluate(seeded, ks=[1, 3, 5], label="floor 3", per_question=True)
    zero = evaluate(seeded, ks=[1, 3, 5], params={"floor": 0.0}, label="floor 0", per_question=True)
    top3 = {rep.label: r.ranked for rep in (base, zero) for r in rep.per_question
            if r.retriever == "hybrid_floor" and r.k == 3 and r.question == "seval_question:money_back"}
    assert top3 == {"floor 3": ["seval_article:refund_request", "seval_article:cancel_subscription", "seval_article:update_payment"],
                    "floor 0": ["seval_article:track_order", "seval_article:return_item", "seval_article:update_payment"]}
    comparison = compare_runs(seeded, base.run, zero.run)
    # rate_limit broke too (BM25 reads titles: "Request a refund" matches "requests", and floor 0 keeps it): one new
    # unjudged document at rank 1
    other, miss = comparison.misses
    assert (other.question, other.docs) == ("seval_question:rate_limit", ["seval_article:refund_request"])
    # new in B's top 3 and judged by nobody: track_order and return_item (update_payment was in A's top 3 too)
    assert (miss.retriever, miss.question, miss.docs) == (
        "hybrid_floor", "seval_question:money_back", ["seval_article:track_order", "seval_article:return_item"])
    assert "recall@3" in miss.metrics
    assert miss.commands[0] == "surreal-eval golden label seval_question:money_back seval_article:track_order"
    (at3,) = [o for o in comparison.overlap if o.retriever == "hybrid_floor" and o.k == 3]
    (q,) = [q for q in at3.questions if q.question == "seval_question:money_back"]
    assert (q.jaccard, q.rbo, q.unjudged_a, q.unjudged_b) == (pytest.approx(0.2), pytest.approx(0.27), pytest.approx(1 / 3), 1.0)
    # the other retrievers did not move
    assert {o.retriever: round(o.rbo, 9) for o in comparison.overlap if o.retriever != "hybrid_floor"} == {
        "bm25": 1.0, "vector": 1.0, "hybrid": 1.0}


def unlabelled_store(url: str) -> None:
    """The demo's articles and its eight questions with every label removed: a question set straight from a log."""
    articles, questions = lesson_rows()
    with connect(Settings(url=url)) as db:
        from surreal_eval import HarnessConfig, import_harness

        import_harness(db, HarnessConfig(dimension=4))
        load_corpus(db, articles, analyzer="seval_english")
        load_golden(db, [q.model_copy(update={"relevant": [], "grades": None, "source": "click"}) for q in questions],
                    allow_unlabelled=True)


def test_compare_on_a_question_set_without_any_label_reports_overlap_and_rbo(tmp_path):
    url = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    unlabelled_store(url[1])
    for floor in ("3", "0"):
        done = runner.invoke(app, [*url, "evaluate", "--k", "3", "--floor", floor])
        assert done.exit_code == 0, done.output
    runs = runner.invoke(app, [*url, "compare", "previous", "latest", "--json"])
    assert runs.exit_code == 0, runs.output
    found = json.loads(runs.stdout)
    assert found["rows"] == [] and found["misses"] == []  # no question has a judgment: no metric, nothing broken
    overlap = {o["retriever"]: o for o in found["overlap"]}
    assert overlap["bm25"]["n"] == 8 and overlap["bm25"]["rbo"] == pytest.approx(1.0)  # BM25 ignores the floor
    assert overlap["bm25"]["unjudged_a"] == 1.0 == overlap["bm25"]["unjudged_b"]  # nobody judged anything
    assert overlap["hybrid_floor"]["rbo"] < 1.0  # the floor moved the floored hybrid
    assert not any(q["labelled"] for q in overlap["bm25"]["questions"])
    text = runner.invoke(app, [*url, "compare", "latest", "--retriever", "bm25", "--retriever", "vector"])
    assert text.exit_code == 0, text.output
    assert "only how far the rankings differ" in text.stdout and "RBO" in text.stdout


def test_diagnose_prints_a_golden_label_command_for_each_unjudged_document_and_running_one_labels_it(tmp_path):
    url = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    shown = runner.invoke(app, [*url, "diagnose", "money_back", "--k", "3", "--retriever", "bm25"])
    assert shown.exit_code == 0, shown.output
    commands = [line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("surreal-eval golden label")]
    # BM25's top 3 for money_back holds none of its labels and no judged document (see the lesson test above)
    assert commands == [f"surreal-eval golden label question:money_back article:{doc}"
                        for doc in ("track_order", "return_item", "update_payment")]
    labelled = runner.invoke(app, [*url, *shlex.split(commands[1])[1:], "--not"])  # run as printed (judged not relevant)
    assert labelled.exit_code == 0, labelled.output
    again = runner.invoke(app, [*url, "diagnose", "money_back", "--k", "3", "--retriever", "bm25"])
    assert "article:return_item" in again.stdout  # still ranked ...
    assert "golden label question:money_back article:return_item" not in again.stdout  # ... but judged now
    assert "golden label question:money_back article:track_order" in again.stdout


def test_diagnose_marks_unjudged_hits_and_names_a_golden_set_that_is_not_the_default(lesson):
    load_golden(lesson, [Question(id="where", text="where is my parcel", embedding=[0.0, 0.1, 0.95, 0.0],
                                  relevant=["track_order"])], label_table="article")
    # two golden sets: the default is the attached `question`; seval_question must be named
    found = diagnose(lesson, "where", k=2, retrievers=["vector"], params={"golden": "seval_question"})
    (view,) = found.retrievers
    assert [(h.id, h.relevant, h.judged) for h in view.hits][0] == ("article:track_order", True, True)
    unjudged = [h.id for h in view.hits if not h.judged]
    assert unjudged and list(found.label_commands) == unjudged
    assert found.label_commands[unjudged[0]] == f"surreal-eval golden label seval_question:where {unjudged[0]} --golden seval_question"


def test_a_label_command_quotes_ids_for_the_shell():
    command = label_command("question:it's", "article:a b", "my set")
    assert shlex.split(command) == ["surreal-eval", "golden", "label", "question:it's", "article:a b", "--golden", "my set"]


def test_the_report_shows_the_overlap_with_the_previous_run(seeded, tmp_path):
    evaluate(seeded, ks=[3], label="floor 3")
    evaluate(seeded, ks=[3], params={"floor": 0.0}, label="floor 0")
    page = write_report(seeded, tmp_path / "r.html", metric="recall@3").read_text(encoding="utf-8")
    assert "rank-biased overlap" in page and "surreal-eval golden label seval_question:money_back seval_article:track_order" in page
