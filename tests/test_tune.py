"""Held-out tuning: sweep on dev, report on test; same-question tuning refused unless forced."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from surreal_eval import Rejected, evaluate, history
from surreal_eval.runs import tune as tune_module
from surreal_eval.present.cli import app
from surreal_eval.store.schema import harness_config
from surreal_eval.runs.tune import assign_splits, parse_values, tune


def test_tuning_without_a_split_is_refused_and_records_nothing(seeded):
    with pytest.raises(Rejected, match="no held-out split"):
        tune(seeded, param="floor", values=[0, 3])
    assert history(seeded) == []


def test_forced_tuning_is_marked_in_history(seeded):
    result = tune(seeded, param="floor", values=[0, 1, 2, 3], metric="recall@3", force=True)
    assert result.forced and result.report.questions == 8
    (run,) = history(seeded)
    assert run.tuning["forced"] is True and run.trigger == "tune"
    # floors 0 and 1 keep money_back broken (recall@3 0.5 of 1 -> 7.5/8), 2 and up fix it
    assert [r["mean"] for r in result.sweep] == pytest.approx([0.9375, 0.9375, 1.0, 1.0])
    assert result.best == 2  # the first of the equal best values


def test_held_out_tuning_sweeps_dev_and_reports_test(seeded):
    sizes = assign_splits(seeded, dev_fraction=0.5, seed=0)
    assert sizes["dev"] + sizes["test"] == 8 and sizes["dev"] > 0 and sizes["test"] > 0
    result = tune(seeded, param="floor", values=[0, 3], metric="recall@3")
    assert not result.forced
    assert all(r["questions"] == sizes["dev"] for r in result.sweep)
    assert result.report.questions == sizes["test"] and result.report.params["split"] == "test"
    assert result.report.params["floor"] == result.best
    assert result.report.tuning["tuned_on"] == "dev"


def test_splits_are_stable_for_a_seed(seeded):
    first = assign_splits(seeded, seed=7)
    splits = seeded.value("SELECT VALUE split FROM seval_question ORDER BY id")
    assert assign_splits(seeded, seed=7) == first
    assert seeded.value("SELECT VALUE split FROM seval_question ORDER BY id") == splits


def test_tuning_knn_ef_restores_the_harness(seeded):
    assign_splits(seeded, seed=0)
    before = harness_config(seeded)
    result = tune(seeded, param="knn_ef", values=[10, 40], metric="recall@3")
    assert [r["value"] for r in result.sweep] == [10, 40]
    assert harness_config(seeded) == before


def _harness_state(db) -> dict:
    """What an ordinary evaluation reads of the harness: its definitions, config and checksum."""
    functions = db.value("INFO FOR DB")["functions"]
    return {"functions": {name: body for name, body in functions.items() if name != "seval::vec_candidates_at_ef"},
            "config": harness_config(db), "checksum": db.value("RETURN fn::seval::harness_checksum()")}


def _scores(db) -> dict:
    """Every mean of an ordinary evaluation, by retriever and k (means may differ in the last bit: summation order)."""
    return {(r.retriever, r.k): pytest.approx(r.scores, rel=1e-12) for r in evaluate(db, ks=[1, 3], intervals=False).results}


@pytest.mark.parametrize("killed_at", [1, 2, 3, "final evaluation"])
def test_a_knn_ef_sweep_killed_at_any_point_leaves_what_evaluations_read_unchanged(seeded, monkeypatch, killed_at):
    """A SIGKILL runs no clean-up: the sweep dies after its Nth ef was rendered (3: the best ef, for
    the recorded run) or inside the recorded run, and nothing restores anything afterwards."""
    assign_splits(seeded, seed=0)
    before, scores = _harness_state(seeded), _scores(seeded)
    assert scores  # it evaluates
    calls = []
    original = tune_module.define_vector_ef

    def define(db, ef):
        calls.append(ef)
        original(db, ef)
        if calls and len(calls) == killed_at:
            raise KeyboardInterrupt(f"killed after rendering ef {ef}")

    def killed_evaluation(*args, **kwargs):
        raise KeyboardInterrupt("killed inside the recorded run")

    monkeypatch.setattr(tune_module, "define_vector_ef", define)
    monkeypatch.setattr(tune_module, "_restore_ef", lambda db: None)  # a killed process cleans nothing up
    # on ten articles every ef ranks alike: let equal means count as a pick, so the sweep goes on to
    # render the best ef and record its run (points 3 and the final evaluation)
    monkeypatch.setattr(tune_module, "resolution", lambda counts, metric: 0.0)
    if killed_at == "final evaluation":
        monkeypatch.setattr(tune_module, "evaluate", killed_evaluation)
    with pytest.raises(KeyboardInterrupt):
        tune(seeded, param="knn_ef", values=[10, 40], metric="recall@3")
    assert calls  # it did render another ef before it died
    assert _harness_state(seeded) == before
    assert {key: value.expected for key, value in _scores(seeded).items()} == scores
    assert [r.run for r in history(seeded) if r.trigger == "tune"] == []  # the killed tune recorded no run


def test_a_tuned_knn_ef_is_recorded_in_the_runs_parameters(seeded, monkeypatch):
    assign_splits(seeded, seed=0)
    monkeypatch.setattr(tune_module, "resolution", lambda counts, metric: 0.0)  # equal means: the first is picked
    result = tune(seeded, param="knn_ef", values=[10, 40], metric="recall@3")
    assert result.report.params["knn_ef"] == result.best
    (run,) = history(seeded)
    assert run.params["knn_ef"] == result.best


@pytest.mark.parametrize(("param", "text", "expected"), [
    ("floor", "0,1.5,3", [0.0, 1.5, 3.0]),
    ("rrf_k", "20,60", [20, 60]),
    ("weights", "0.3,0.7;0.5,0.5", [[0.3, 0.7], [0.5, 0.5]]),
])
def test_parse_values(param, text, expected):
    assert parse_values(param, text) == expected


def test_cli_tune_and_split(tmp_path):
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    refused = runner.invoke(app, [*url, "tune", "--param", "floor", "--values", "0,3"])
    assert refused.exit_code == 2 and "no held-out split" in refused.stderr
    assert "dev" in runner.invoke(app, [*url, "split"]).stdout
    done = runner.invoke(app, [*url, "tune", "--param", "floor", "--values", "0,3", "--metric", "recall@3"])
    assert done.exit_code == 0, done.output
    assert "<- best" in done.stdout


def test_reloading_the_golden_set_keeps_each_questions_split(seeded, tmp_path):
    from surreal_eval.golden.files import load_golden
    from surreal_eval.models import Question
    from surreal_eval.runs.evaluate import evaluate

    sizes = assign_splits(seeded, seed=0)
    before = dict(seeded.value("SELECT VALUE [record::id(id), split] FROM seval_question"))
    rows = seeded.value("SELECT record::id(id) AS id, text, embedding, relevant, grades FROM seval_question")
    questions = [Question(id=r["id"], text=r["text"], embedding=r["embedding"], grades=r["grades"],
                          relevant=[f"seval_article:{x.id}" for x in r["relevant"]]) for r in rows]
    questions[0] = questions[0].model_copy(update={"split": "test" if before[questions[0].id] == "dev" else "dev"})
    load_golden(seeded, questions)
    after = dict(seeded.value("SELECT VALUE [record::id(id), split] FROM seval_question"))
    assert {q: s for q, s in after.items() if q != questions[0].id} == {q: s for q, s in before.items() if q != questions[0].id}
    assert after[questions[0].id] == questions[0].split  # a split the reloaded row names wins
    assert evaluate(seeded, ks=[3], params={"split": "dev"}).questions == sum(s == "dev" for s in after.values())
    assert sizes["dev"] > 0


def test_tuning_that_cannot_tell_the_values_apart_names_no_best_and_records_nothing(seeded):
    assign_splits(seeded, seed=0)
    above = max(s for q in seeded.value("SELECT VALUE fn::seval::bm25_candidates('seval_article', text, 3).score FROM seval_question") for s in q)
    # floors above every BM25 score fuse the vector list alone: every value ranks alike
    result = tune(seeded, param="floor", values=[above + 1, above + 2, above + 3], metric="recall@3")
    assert result.best is None and result.report is None
    assert result.tied == [row["value"] for row in result.sweep]
    assert "cannot tell them apart" in result.note
    assert [r.run for r in history(seeded) if r.trigger == "tune"] == []  # the killed tune recorded no run


def test_values_tied_for_the_best_are_named(seeded):
    result = tune(seeded, param="floor", values=[0, 1, 2, 3], metric="recall@3", force=True)
    assert result.best == 2 and result.tied == [2, 3]
    assert "tie for the best recall@3" in result.note and result.report.tuning["tied"] == [2, 3]


def test_the_default_floor_grid_comes_from_the_bm25_scores_seen(seeded):
    assign_splits(seeded, seed=0)
    dev = seeded.value("SELECT VALUE fn::seval::bm25_candidates('seval_article', text, 5).score FROM seval_question WHERE split = 'dev'")
    scores = sorted(s for q in dev for s in q)
    result = tune(seeded, param="floor", metric="recall@5")
    grid = [row["value"] for row in result.sweep]
    assert grid[0] == 0 and grid == sorted(set(grid)) and len(grid) > 2
    assert all(scores[0] - 0.01 <= v <= scores[-1] for v in grid[1:])
    assert grid[-1] == pytest.approx(float(np.floor(np.percentile(scores, 90) * 100) / 100))


def test_cli_tune_refuses_to_pick_among_tied_values(tmp_path):
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    runner.invoke(app, [*url, "split"])
    tied = runner.invoke(app, [*url, "tune", "--values", "100,200", "--metric", "recall@3"])
    assert tied.exit_code == 2 and "cannot tell them apart" in tied.stderr
    assert "(tied)" in tied.stdout and "<- best" not in tied.stdout
