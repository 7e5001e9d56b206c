"""compare: two runs (or two retrievers of one run) paired by question, on the demo seed.

The regressions are real runs of the engine: with floor 0 the floored hybrid is plain hybrid,
which at k = 3 returns none of money_back's labels (the lesson's finding); reversing every
article embedding's axes makes the vector retriever point the wrong way on six questions.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import (
    ConfigError,
    NotFound,
    Settings,
    compare_retrievers,
    compare_runs,
    connect,
    evaluate,
    paired_test,
    question_scores,
    resolve_run,
)
from surreal_eval.present.cli import app
from surreal_eval.analysis.compare import Change, compare_reports
from surreal_eval.analysis.fell import what_fell

from .conftest import add_question, reverse_embeddings

KS = [1, 3, 5]
RETRIEVERS = ["bm25", "vector", "hybrid", "hybrid_floor"]
runner = CliRunner()




def row(comparison, retriever, metric):
    (found,) = [r for r in comparison.rows if r.retriever == retriever and r.metric == metric]
    return found


@pytest.fixture
def floors(seeded):
    """Two runs of the seed: the default floor 3.0, then floor 0."""
    base = evaluate(seeded, ks=KS, label="floor 3", per_question=True)
    zero = evaluate(seeded, ks=KS, params={"floor": 0.0}, label="floor 0", per_question=True)
    return seeded, base, zero


def test_floor_zero_breaks_money_back_for_the_floored_hybrid_only(floors):
    db, base, zero = floors
    comparison = compare_runs(db, base.run, zero.run)
    assert len(comparison.rows) == len(RETRIEVERS) * len(base.metrics) * len(KS)  # every metric at every shared k
    changed = {(r.retriever, r.metric) for r in comparison.rows if r.fixed or r.broken}
    assert {retriever for retriever, _ in changed} == {"hybrid_floor"}
    recall3 = row(comparison, "hybrid_floor", "recall@3")
    assert recall3.fixed == []
    assert [(d.question, d.before, d.after) for d in recall3.broken] == [("seval_question:money_back", 1.0, 0.0)]
    assert (recall3.mean_a, recall3.mean_b) == (1.0, 0.875)
    assert recall3.difference == pytest.approx(-1 / 8)
    # one differing question: its two sign patterns (+d, -d) each hold half of the mass, so p = 1
    assert recall3.p_value == 1.0 and recall3.n == 8
    # mrr@5: money_back's first label fell from rank 1 to rank 4, rate_limit's ("429 too many requests") from 1 to 2: BM25
    # searches titles too, "Request a refund" matches "requests" (score 1.24), and without the floor that BM25 rank adds
    # to its vector rank in the fusion, above api_rate_limits
    mrr5 = row(comparison, "hybrid_floor", "mrr@5")
    assert [(d.question, d.before, d.after) for d in mrr5.broken] == [("seval_question:money_back", 1.0, 0.25),
                                                                       ("seval_question:rate_limit", 1.0, 0.5)]
    # what changed between the runs is the floor, and nothing else recorded (the sweep's floors come from the same data)
    assert comparison.changes == [Change(field="params.floor", a=3.0, b=0.0)]
    assert comparison.same_golden and comparison.shared == 8
    assert not [w for w in comparison.warnings if w.startswith("WARNING")]


def test_what_fell_lists_the_broken_questions_of_a_comparison_without_its_statistics(floors):
    db, base, zero = floors
    fell = what_fell(base, zero)  # a watched load's summary: no intervals, no tests
    comparison = compare_reports(base, zero)
    broken = [r for r in comparison.rows if r.broken]
    assert [(f.retriever, f.metric, f.broken) for f in fell] == [(r.retriever, r.metric, r.broken) for r in broken]
    assert [(f.mean_a, f.mean_b) for f in fell] == [(pytest.approx(r.mean_a), pytest.approx(r.mean_b)) for r in broken]
    assert ("hybrid_floor", "recall@3") in {(f.retriever, f.metric) for f in fell}
    assert what_fell(zero, base) == [] and what_fell(base, base) == []


def test_the_other_direction_lists_money_back_as_fixed(floors):
    db, base, zero = floors
    recall3 = row(compare_runs(db, zero.run, base.run, metrics=["recall@3"]), "hybrid_floor", "recall@3")
    assert [(d.question, d.before, d.after) for d in recall3.fixed] == [("seval_question:money_back", 0.0, 1.0)]
    assert recall3.broken == [] and recall3.difference == pytest.approx(1 / 8)


def test_latest_and_previous_name_the_last_two_runs(floors):
    db, base, zero = floors
    assert resolve_run(db, "latest") == resolve_run(db, zero.run)
    assert resolve_run(db, "previous") == resolve_run(db, base.run)
    assert resolve_run(db, base.run.split(":", 1)[1]) == resolve_run(db, base.run)
    by_name = compare_runs(db, "previous", "latest", metrics=["recall@3"])
    by_id = compare_runs(db, base.run, zero.run, metrics=["recall@3"])
    assert by_name.model_dump() == by_id.model_dump()


def test_run_references_that_name_nothing_are_refused(db):
    with pytest.raises(NotFound, match="no finished run yet"):
        resolve_run(db, "latest")
    with pytest.raises(NotFound, match="seval_run:nope"):
        resolve_run(db, "nope")


def test_previous_needs_two_runs(seeded):
    evaluate(seeded, ks=[3])
    with pytest.raises(NotFound, match="needs two finished runs"):
        resolve_run(seeded, "previous")


def test_metric_and_retriever_selection(floors):
    db, base, zero = floors
    one = compare_runs(db, base.run, zero.run, metrics=["recall@3"], retrievers=["hybrid_floor"])
    assert [(r.retriever, r.metric) for r in one.rows] == [("hybrid_floor", "recall@3")]
    bare = compare_runs(db, base.run, zero.run, metrics=["recall"], retrievers=["vector"])
    assert [r.metric for r in bare.rows] == ["recall@1", "recall@3", "recall@5"]
    with pytest.raises(ConfigError, match="k = 1, 3, 5"):
        compare_runs(db, base.run, zero.run, metrics=["recall@10"])
    with pytest.raises(ConfigError, match="unknown metric"):
        compare_runs(db, base.run, zero.run, metrics=["recal@3"])
    with pytest.raises(ConfigError, match="hybrid_linear"):
        compare_runs(db, base.run, zero.run, retrievers=["hybrid_linear"])


def test_only_shared_cutoffs_and_retrievers_are_compared(seeded):
    a = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "vector"])
    b = evaluate(seeded, ks=[3, 5], retrievers=["vector", "hybrid"])
    comparison = compare_runs(seeded, a.run, b.run, metrics=["recall"])
    assert [(r.retriever, r.metric) for r in comparison.rows] == [("vector", "recall@3")]
    assert set(comparison.skipped) == {
        "retriever bm25 is only in A", "retriever hybrid is only in B", "k = 1 is only in A", "k = 5 is only in B"}


def test_a_significant_regression_has_the_hand_worked_p_value(seeded):
    base = evaluate(seeded, ks=KS, per_question=True)
    reverse_embeddings(seeded)
    broken = evaluate(seeded, ks=KS, per_question=True)
    recall3 = row(compare_runs(seeded, base.run, broken.run, metrics=["recall@3"]), "vector", "recall@3")
    assert {d.question.split(":")[1] for d in recall3.broken} == {
        "money_back", "new_card", "send_back", "stop_plan", "where_parcel", "signin"}
    assert recall3.fixed == []
    # six questions fell and none rose: of the 2**6 sign patterns only the observed one is as
    # extreme in its tail, so the two-sided p is 2 x 1/64
    assert recall3.p_value == pytest.approx(2 / 64)
    # signin kept one of its three labels: 1/3; the others lost everything
    assert [d.after for d in recall3.broken if d.question == "seval_question:signin"] == [pytest.approx(1 / 3)]
    a, b = question_scores(base, "vector", "recall@3"), question_scores(broken, "vector", "recall@3")
    oracle = paired_test(list(a.values()), list(b.values()))
    assert (recall3.p_value, recall3.low, recall3.high) == (oracle.p_value, oracle.low, oracle.high)
    assert recall3.mean_b == pytest.approx(0.875 - (5 + 2 / 3) / 8)


def test_different_golden_sets_are_compared_on_shared_questions_with_a_loud_warning(seeded):
    base = evaluate(seeded, ks=KS)
    add_question(seeded, category='billing')
    more = evaluate(seeded, ks=KS)
    comparison = compare_runs(seeded, base.run, more.run, metrics=["recall@3"])
    assert not comparison.same_golden
    assert (comparison.questions_a, comparison.questions_b, comparison.shared) == (8, 9, 8)
    assert comparison.only_b == ["seval_question:refund_status"] and comparison.only_a == []
    warning = comparison.warnings[0]
    assert warning.startswith("WARNING") and "DIFFERENT GOLDEN SETS" in warning
    assert "8 questions" in warning and "9 questions" in warning and "1 only in B" in warning
    assert all(r.n == 8 for r in comparison.rows)
    assert {c.field for c in comparison.changes} >= {"golden.fingerprint", "golden.questions"}


def test_edited_labels_on_the_same_questions_also_warn(seeded):
    base = evaluate(seeded, ks=KS)
    seeded.query("UPDATE seval_question:money_back SET grades = [1, 1]")
    edited = evaluate(seeded, ks=KS)
    comparison = compare_runs(seeded, base.run, edited.run, metrics=["ndcg@3"])
    assert comparison.shared == 8 and not comparison.same_golden
    assert "labels or grades changed" in comparison.warnings[0]


def test_compare_two_retrievers_within_one_run(floors):
    db, base, _ = floors
    # the lesson: vector misses rate_limit, which hybrid recovers; hybrid loses money_back
    within = compare_retrievers(db, base.run, "vector", "hybrid", "recall@3")
    (delta,) = within.rows
    assert [d.question for d in delta.fixed] == ["seval_question:rate_limit"]
    assert [d.question for d in delta.broken] == ["seval_question:money_back"]
    assert delta.difference == 0.0 and delta.p_value == 1.0  # +1 and -1: every pattern is as extreme
    # the floor fixes money_back and keeps the 429 fix: 0.875 -> 1.000
    (floored,) = compare_retrievers(db, base.run, "hybrid", "hybrid_floor", "recall@3").rows
    assert [(d.question, d.before, d.after) for d in floored.fixed] == [("seval_question:money_back", 0.0, 1.0)]
    assert floored.broken == [] and floored.difference == pytest.approx(1 / 8)
    every = compare_retrievers(db, base.run, "vector", "hybrid", None)
    assert len(every.rows) == len(base.metrics) * len(KS)
    with pytest.raises(ConfigError, match="did not evaluate retriever hybrid_linear"):
        compare_retrievers(db, base.run, "vector", "hybrid_linear")


def test_compare_reports_needs_per_question_results(floors):
    _, base, zero = floors
    with pytest.raises(ConfigError, match="per_question"):
        compare_reports(base.model_copy(update={"per_question": None}), zero)


# ---------------------------------------------------------------------------------------------
# The CLI
# ---------------------------------------------------------------------------------------------


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


def test_cli_compare_prints_changes_and_broken_questions(tmp_path):
    store = tmp_path / "store"
    assert cli(store, "init", "--demo").exit_code == 0
    assert cli(store, "evaluate", "--k", "1,3,5", "--note", "floor 3").exit_code == 0
    assert cli(store, "evaluate", "--k", "1,3,5", "--floor", "0", "--note", "floor 0").exit_code == 0

    result = cli(store, "compare", "previous", "latest", "--metric", "recall@3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["label_a"], data["label_b"]) == ("floor 3", "floor 0")
    (floored,) = [r for r in data["rows"] if r["retriever"] == "hybrid_floor"]
    assert floored["broken"] == [{"question": "question:money_back", "before": 1.0, "after": 0.0}]
    assert data["changes"] == [{"field": "params.floor", "a": 3.0, "b": 0.0}]

    text = cli(store, "compare", "previous", "latest", "--metric", "recall@3").stdout
    assert "params.floor" in text and "money_back 1.00→0.00" in text and "broken" in text

    within = cli(store, "compare", "latest", "--retriever", "vector", "--retriever", "hybrid", "--metric", "recall@3")
    assert within.exit_code == 0 and "rate_limit 0.00→1.00" in within.stdout

    alone = cli(store, "compare", "latest")
    assert alone.exit_code == 2 and "two or more --retriever" in alone.stderr
    missing = cli(store, "compare", "latest", "nope")
    assert missing.exit_code == 2 and "no finished run seval_run:nope" in missing.stderr
    bad = cli(store, "compare", "previous", "latest", "--metric", "recall@9")
    assert bad.exit_code == 2 and "recall@9" in bad.stderr


def test_cli_compare_warns_loudly_about_different_golden_sets(tmp_path):
    store = tmp_path / "store"
    cli(store, "init", "--demo")
    cli(store, "evaluate", "--k", "3")
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        add_question(db, category='billing')
    cli(store, "evaluate", "--k", "3")
    result = cli(store, "compare", "previous", "latest", "--metric", "recall@3")
    assert result.exit_code == 0
    assert "WARNING" in result.stdout and "DIFFERENT GOLDEN SETS" in result.stdout
    assert "paired over 8 questions (A has 8, B has 9)" in result.stdout


def test_differences_within_the_means_resolution_are_called_tied(floors):
    db, base, zero = floors
    comparison = compare_runs(db, base.run, zero.run, metrics=["recall@3"])
    assert row(comparison, "bm25", "recall@3").tied and row(comparison, "bm25", "recall@3").resolution > 0
    assert not row(comparison, "hybrid_floor", "recall@3").tied  # money_back moved by a whole step
    assert not any("cannot be told apart" in w for w in comparison.warnings)
    same = compare_runs(db, base.run, zero.run, metrics=["recall@3"], retrievers=["bm25", "vector"])
    assert any(w.startswith("the runs cannot be told apart") for w in same.warnings)


def test_cli_compare_marks_tied_rows(tmp_path):
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    for _ in range(2):
        assert runner.invoke(app, [*url, "evaluate", "--k", "3"]).exit_code == 0
    shown = runner.invoke(app, [*url, "compare", "previous", "latest", "--metric", "recall@3"])
    assert shown.exit_code == 0, shown.output
    assert "cannot be told apart" in shown.stdout and " tied" in shown.stdout


# ---------------------------------------------------------------------------------------------
# An approximate vector index built again between two runs (issue 26, 5)
# ---------------------------------------------------------------------------------------------


def reload_articles(db) -> None:
    """Load the demo's ten articles into seval_article again, as they are: the same rows and vectors, a new HNSW graph."""
    from surreal_eval.load.bulk import load_corpus

    from .conftest import lesson_rows

    load_corpus(db, lesson_rows()[0])


def test_a_reload_of_identical_data_is_noted_for_the_retrievers_that_search_the_hnsw_index(seeded):
    """Issue 26, 5: after a reload of the same data the HNSW graph is built again (an approximate search may
    answer otherwise) while nothing recorded differs; compare says so for the retrievers that search it."""
    first = evaluate(seeded, ks=KS)
    same_graph = evaluate(seeded, ks=KS)
    assert compare_runs(seeded, first.run, same_graph.run).notes == []
    reload_articles(seeded)
    rebuilt = evaluate(seeded, ks=KS)
    comparison = compare_runs(seeded, same_graph.run, rebuilt.run)
    assert comparison.changes == []  # same rows, vectors, parameters and golden set
    (note,) = comparison.notes
    assert note.startswith("the HNSW index of seval_article was built again between the runs")
    assert "vector, hybrid, hybrid_floor may have moved" in note and "--ann-check" in note and "vector_exact" in note
    # a BM25 ranking is the same on either graph: no note for it alone, nor for two runs of BM25 only
    assert compare_runs(seeded, same_graph.run, rebuilt.run, retrievers=["bm25"]).notes == []
    bm25_before = evaluate(seeded, ks=KS, retrievers=["bm25"])
    reload_articles(seeded)
    bm25_after = evaluate(seeded, ks=KS, retrievers=["bm25"])
    assert compare_runs(seeded, bm25_before.run, bm25_after.run).notes == []


def test_a_run_recorded_before_build_times_is_judged_by_the_loads_between_the_runs(seeded):
    old = evaluate(seeded, ks=[3], retrievers=["vector"])
    seeded.query("UPDATE type::record($run) SET corpus.vector_built = NONE", {"run": old.run})  # as a run of an earlier version
    assert compare_runs(seeded, old.run, evaluate(seeded, ks=[3], retrievers=["vector"]).run).notes == []
    reload_articles(seeded)
    (note,) = compare_runs(seeded, old.run, evaluate(seeded, ks=[3], retrievers=["vector"]).run).notes
    assert note.startswith("seval_article was loaded 1 time between the runs") and "vector may have moved" in note


def test_hnsw_rankings_that_moved_with_nothing_recorded_are_noted(seeded):
    """A graph built again outside the harness (REBUILD INDEX by hand, a table attached in place and reloaded by its
    owner) leaves no trace but the moved rankings themselves (here: one moved by hand)."""
    a, b = evaluate(seeded, ks=KS), evaluate(seeded, ks=KS)
    seeded.query("UPDATE seval_ranking SET ranked = array::reverse(ranked) WHERE run = type::record($run) AND retriever = 'vector' "
                 "AND question = seval_question:money_back", {"run": b.run})
    (note,) = compare_runs(seeded, a.run, b.run).notes
    assert note.startswith("vector ranked otherwise though nothing recorded differs")


def test_cli_compare_notes_a_rebuilt_hnsw_index_beside_nothing_recorded(tmp_path):
    from .conftest import seed_own

    store = tmp_path / "store"
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        from surreal_eval import HarnessConfig, import_harness

        import_harness(db, HarnessConfig(dimension=4))
        seed_own(db)
        evaluate(db, ks=KS, retrievers=["bm25", "vector"])
        reload_articles(db)
        evaluate(db, ks=KS, retrievers=["bm25", "vector"])
    text = cli(store, "compare", "previous", "latest").stdout
    assert "nothing recorded differs between the runs" in text
    assert "note: the HNSW index of seval_article was built again between the runs" in text
    assert "HNSW" not in cli(store, "compare", "previous", "latest", "--retriever", "bm25").stdout
