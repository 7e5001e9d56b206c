"""slices: a run's per-question scores grouped by question category, language and source."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from surreal_eval import ConfigError, NotFound, confidence_interval, evaluate, question_scores, slices
from surreal_eval.present.cli import app

runner = CliRunner()
# the seed's categories
CATEGORIES = {
    "signin": "sign-in", "two_factor": "sign-in", "rate_limit": "developer", "money_back": "billing",
    "new_card": "billing", "stop_plan": "billing", "where_parcel": "orders", "send_back": "orders",
}
SYNTHETIC = {"signin", "new_card", "where_parcel"}


@pytest.fixture
def run(seeded):
    """The seed with three synthetic questions and the rest real, evaluated at k = 1, 3, 5."""
    seeded.query("UPDATE seval_question SET source = IF record::id(id) IN $synthetic { 'synthetic' } ELSE { 'real' }",
                 {"synthetic": sorted(SYNTHETIC)})
    return seeded, evaluate(seeded, ks=[1, 3, 5], per_question=True)


def test_category_slices_match_the_questions_scores(run):
    db, report = run
    found = slices(db, report.run, "recall@3", by="category")
    assert [(s.value, s.retriever) for s in found[:4]] == [("billing", r) for r in report.retrievers]
    assert {s.value for s in found} == set(CATEGORIES.values())
    for retriever in report.retrievers:
        scores = question_scores(report, retriever, "recall@3")
        groups = defaultdict(list)
        for question, score in scores.items():
            groups[CATEGORIES[question.split(":")[1]]].append(score)
        mine = {s.value: s for s in found if s.retriever == retriever}
        assert sum(s.questions for s in mine.values()) == 8
        for value, group in groups.items():
            expected = confidence_interval(group)
            assert (mine[value].questions, mine[value].mean, mine[value].low, mine[value].high) == (
                len(group), expected.mean, expected.low, expected.high)


def test_hand_checked_slices(run):
    db, report = run
    by = {(s.by, s.value, s.retriever): s for s in slices(db, report.run, "recall@3", by=["category"])}
    # 429 is the only developer question: BM25 finds its article, vector search does not
    assert (by["category", "developer", "bm25"].mean, by["category", "developer", "vector"].mean) == (1.0, 0.0)
    assert by["category", "developer", "vector"].low == by["category", "developer", "vector"].high == 0.0
    # billing: BM25 misses money_back at k = 3 and finds new_card and stop_plan
    billing = by["category", "billing", "bm25"]
    assert billing.questions == 3 and billing.mean == pytest.approx(2 / 3)


def test_unset_fields_are_one_slice_and_real_and_synthetic_are_apart(run):
    db, report = run
    found = slices(db, "latest", "recall@5")
    language = [s for s in found if s.by == "language"]
    assert {s.value for s in language} == {None} and all(s.questions == 8 for s in language)
    means = {r.retriever: r.recall for r in report.results if r.k == 5}
    assert all(s.mean == pytest.approx(means[s.retriever]) for s in language)
    source = {(s.value, s.retriever): s for s in found if s.by == "source"}
    assert {v for v, _ in source} == {"real", "synthetic"}
    assert source["synthetic", "bm25"].questions == 3 and source["real", "bm25"].questions == 5
    # BM25 misses "I can't get into my account" (synthetic) even at k = 5
    scores = question_scores(report, "bm25", "recall@5")
    assert source["synthetic", "bm25"].mean == pytest.approx(sum(scores[f"seval_question:{q}"] for q in SYNTHETIC) / 3)


def test_bad_slices_are_refused(run):
    db, report = run
    with pytest.raises(ConfigError, match="cannot slice by colour"):
        slices(db, report.run, by="colour")
    with pytest.raises(ConfigError, match="k = 1, 3, 5, not recall@10"):
        slices(db, report.run, "recall@10")
    with pytest.raises(NotFound):
        slices(db, "seval_run:nope")


def test_cli_slices_table_and_json(tmp_path):
    store = tmp_path / "store"
    url = ["--url", f"surrealkv://{store}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "evaluate", "--k", "3"]).exit_code == 0
    text = runner.invoke(app, [*url, "slices", "latest", "--metric", "recall@3"])
    assert text.exit_code == 0, text.output
    assert "recall@3 by category" in text.stdout and "developer" in text.stdout
    assert "language: not set on any question" in text.stdout
    data = json.loads(runner.invoke(app, [*url, "slices", "latest", "--metric", "recall@3", "--by", "category", "--json"]).stdout)
    assert {(d["value"], d["retriever"]) for d in data} == {
        (c, r) for c in set(CATEGORIES.values()) for r in ("bm25", "vector", "hybrid", "hybrid_floor")}
    bad = runner.invoke(app, [*url, "slices", "latest", "--by", "colour"])
    assert bad.exit_code == 2 and "cannot slice by colour" in bad.stderr
