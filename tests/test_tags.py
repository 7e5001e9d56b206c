"""Named baselines (`tag add`) and a history you can keep tidy (`evaluate --no-record`, `runs remove`, `runs prune`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import ConfigError, NotFound, PermissionDenied, Settings, compare_runs, connect, evaluate, gate, history, load_run
from surreal_eval.present.cli import app
from surreal_eval import delete_runs, prune_runs, tag_run, untag
from surreal_eval.runs.tune import assign_splits, tune
from surreal_eval.store.connection import record_str

from .conftest import EVALUATOR, EVALUATOR_PASSWORD, as_evaluator, assert_cli_refuses_the_evaluator, evaluator_store, snapshot

runner = CliRunner()


def cli(url, *args, evaluator=False):
    extra = EVALUATOR if evaluator else []
    return runner.invoke(app, ["--url", url, *extra, *args], env={"SURREAL_EVAL_PASS": EVALUATOR_PASSWORD} if evaluator else None)


def rows_of(db, run):
    """Every row that belongs to run `run`: the run, its rankings, its questions' labels and its tags."""
    found = {"run": "SELECT * FROM seval_run WHERE id = type::record($run)",
             "rankings": "SELECT * FROM seval_ranking WHERE run = type::record($run) ORDER BY id",
             "labels": "SELECT * FROM seval_run_label WHERE run = type::record($run) ORDER BY id",
             "tags": "SELECT * FROM seval_tag WHERE run = type::record($run) ORDER BY id"}
    return {what: db.value(sql, {"run": run}) for what, sql in found.items()}


def without(state, run_ids):
    """`snapshot` with the rows of runs `run_ids` (ids as strings) left out of every table."""
    def belongs(row):
        return any(record_str(row[key]) in run_ids for key in ("id", "run") if key in row) and (
            record_str(row["id"]).startswith(("seval_run:", "seval_ranking:", "seval_run_label:", "seval_tag:")))
    return {table: [r for r in rows if not belongs(r)] for table, rows in state["rows"].items()}


def test_a_tag_names_a_run_everywhere_and_moves_when_put_on_another(seeded):
    first = evaluate(seeded, ks=[1, 5], label="main build")
    assert tag_run(seeded, "latest", "main").before is None
    second = evaluate(seeded, ks=[1, 5], label="feature")
    assert load_run(seeded, first.run).tags == ["main"]
    assert gate(seeded, baseline="main").baseline == first.run
    assert compare_runs(seeded, "main", "latest").run_a == first.run
    assert [r.tags for r in history(seeded)] == [["main"], []]
    moved = tag_run(seeded, second.run, "main")
    assert (moved.before, moved.run) == (first.run, second.run)
    assert [r.tags for r in history(seeded)] == [[], ["main"]]
    assert untag(seeded, "main").before == second.run
    with pytest.raises(NotFound):
        gate(seeded, baseline="main")


@pytest.mark.parametrize("name", ["latest", "previous", "1main", "ma in", "seval_run:x", "a" * 65, "abcdefghij0123456789", ""])
def test_a_tag_name_that_could_not_be_read_back_is_refused(seeded, name):
    evaluate(seeded, ks=[1])
    before = snapshot(seeded)
    with pytest.raises(ConfigError):
        tag_run(seeded, "latest", name)
    assert snapshot(seeded) == before


def test_the_cli_tags_reports_and_refuses_in_one_line(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert cli(url, "init", "--demo").exit_code == 0
    assert cli(url, "evaluate", "--k", "1,5", "--note", "first").exit_code == 0
    assert cli(url, "tag", "add", "latest", "main").stdout.startswith("tagged seval_run:")
    assert cli(url, "evaluate", "--k", "1,5", "--tag", "second").exit_code == 0
    report = cli(url, "report", "main", "latest", "--html", str(tmp_path / "r.html"))
    assert report.exit_code == 0, report.output
    gated = cli(url, "gate", "--baseline", "main")
    assert gated.exit_code == 0, gated.output
    assert "first" in gated.stdout
    assert cli(url, "compare", "main", "latest").exit_code == 0
    assert "moved tag main from" in cli(url, "tag", "add", "latest", "main").stdout
    assert "main" in cli(url, "runs", "list").stdout
    refused = cli(url, "tag", "add", "latest", "previous")
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert cli(url, "tag", "remove", "main").exit_code == 0
    assert cli(url, "tag", "remove", "main").exit_code == 2


def test_a_tag_survives_tune_and_the_gate_compares_against_it(seeded):
    main = evaluate(seeded, ks=[1, 3, 5], label="main")
    tag_run(seeded, main.run, "main")
    assign_splits(seeded, dev_fraction=0.5, seed=0)
    tune(seeded, param="floor", values=[0, 3], metric="recall@3")  # a run on the test split only
    candidate = evaluate(seeded, ks=[1, 3, 5], label="after tune")
    result = gate(seeded, baseline="main")
    assert (result.baseline, result.candidate, result.passed) == (main.run, candidate.run, True)


def test_the_evaluator_tags_its_own_run_but_not_anothers(tmp_path):
    url = evaluator_store(tmp_path / "store")
    with connect(Settings(url=url)) as owner:
        theirs = evaluate(owner, ks=[1]).run
        tag_run(owner, theirs, "owners")
    with as_evaluator(url) as db:
        mine = evaluate(db, ks=[1]).run
        assert tag_run(db, mine, "ci").run == mine
        assert load_run(db, mine).tags == ["ci"]
        with pytest.raises(PermissionDenied):
            tag_run(db, theirs, "ci")  # onto a run it did not make
        with pytest.raises(PermissionDenied):
            tag_run(db, mine, "owners")  # moving a tag off the owner's run
        with pytest.raises(PermissionDenied):
            untag(db, "owners")
        # and the table itself refuses it, whatever the client sends
        for statement in ("UPDATE seval_tag:owners SET run = $mine", "DELETE seval_tag:owners",
                          "CREATE seval_tag:sneaky SET run = $theirs", "UPDATE seval_tag:ci SET run = $theirs"):
            try:
                db.query(statement, {"mine": mine, "theirs": theirs})
            except Exception:
                pass  # refused loudly or silently: what matters is that nothing changed
    with connect(Settings(url=url)) as owner:
        assert {t["name"]: record_str(t["run"]) for t in owner.value("RETURN fn::seval::tags()")} == {"ci": mine, "owners": theirs}
    assert_cli_refuses_the_evaluator(url, ["tag", "add", theirs, "ci"])
    assert_cli_refuses_the_evaluator(url, ["tag", "add", mine, "owners"])


def test_evaluate_no_record_prints_and_leaves_history_as_it_was(seeded):
    evaluate(seeded, ks=[1, 3])
    before = snapshot(seeded)
    report = evaluate(seeded, ks=[1, 3, 5], per_question=True, record=False)
    assert not report.recorded and report.questions == 8 and report.per_question
    assert report.results[0].intervals  # intervals as for a recorded run
    after = snapshot(seeded)
    # the candidate lists it fetched (deeper here) are what a later run on the same inputs stores itself
    cache = "seval_candidate_cache"
    assert {t: r for t, r in after["rows"].items() if t != cache} == {t: r for t, r in before["rows"].items() if t != cache}
    assert after["info"] == before["info"]
    recorded = evaluate(seeded, ks=[1, 3, 5], fresh=True)
    assert [r.scores for r in recorded.results] == [r.scores for r in report.results]
    stored = {(str(r["id"]), r["key"], str(r["hits"])) for r in seeded.value(f"SELECT * FROM {cache}")}
    assert {(str(r["id"]), r["key"], str(r["hits"])) for r in after["rows"][cache]} <= stored


def test_evaluate_no_record_on_the_cli_records_nothing(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert cli(url, "init", "--demo").exit_code == 0
    done = cli(url, "evaluate", "--k", "1,3", "--no-record")
    assert done.exit_code == 0 and "not recorded" in done.stdout
    assert cli(url, "runs", "list", "--json").stdout.strip() == "[]"


def test_runs_delete_removes_every_row_of_the_run_and_nothing_else(seeded):
    keep = evaluate(seeded, ks=[1, 3]).run
    gone = evaluate(seeded, ks=[1, 3], label="gone").run
    tag_run(seeded, keep, "main")
    before = snapshot(seeded)
    assert rows_of(seeded, gone)["rankings"]
    removed = delete_runs(seeded, [gone])
    assert [(r.run, r.label, r.rankings) for r in removed] == [(gone, "gone", len(rows_of(seeded, keep)["rankings"]))]
    after = snapshot(seeded)
    assert rows_of(seeded, gone) == {"run": [], "rankings": [], "labels": [], "tags": []}
    assert after["rows"] == without(before, {gone})
    with pytest.raises(ConfigError, match="tagged"):
        delete_runs(seeded, ["main"])
    assert snapshot(seeded) == after
    assert [r.tags for r in delete_runs(seeded, ["main"], include_tagged=True)] == [["main"]]
    assert seeded.value("SELECT * FROM seval_tag") == [] and history(seeded) == []


def test_runs_delete_of_an_unknown_run_is_one_line_exit_2_and_deletes_nothing(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert cli(url, "init", "--demo").exit_code == 0
    assert cli(url, "evaluate", "--k", "1").exit_code == 0
    with connect(Settings(url=url)) as db:
        before = snapshot(db)
    result = cli(url, "runs", "remove", "latest", "nosuch")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    with connect(Settings(url=url)) as db:
        assert snapshot(db) == before


def test_prune_keeps_the_newest_and_the_tagged_and_respects_older_than(seeded):
    runs = [evaluate(seeded, ks=[1], label=f"run {i}").run for i in range(5)]
    tag_run(seeded, runs[0], "main")
    assert prune_runs(seeded, keep=2, older_than="30d") == []  # every run is seconds old
    planned = prune_runs(seeded, keep=2, dry_run=True)
    assert [r.run for r in planned] == runs[1:3] and len(history(seeded)) == 5
    assert [r.run for r in prune_runs(seeded, keep=2)] == runs[1:3]
    assert [r.run for r in history(seeded)] == [runs[0], *runs[3:]]
    assert gate(seeded, baseline="main", metric="recall@1").baseline == runs[0]
    seeded.query("UPDATE type::record($run) SET created_at = time::now() - 40d", {"run": runs[3]})
    assert [r.run for r in prune_runs(seeded, keep=0, older_than="30d")] == [runs[3]]
    with pytest.raises(ConfigError):
        prune_runs(seeded, keep=1, older_than="a month")


def test_the_evaluator_may_not_delete_or_prune_runs(tmp_path):
    url = evaluator_store(tmp_path / "store")
    with as_evaluator(url) as db:
        mine = evaluate(db, ks=[1]).run
        with pytest.raises(PermissionDenied):
            delete_runs(db, [mine])
        with pytest.raises(PermissionDenied):  # nor by calling the function itself
            db.value("RETURN fn::seval::delete_runs([$run])", {"run": mine})
        assert [r.run for r in history(db)] == [mine]
    assert_cli_refuses_the_evaluator(url, ["runs", "remove", mine])
    assert_cli_refuses_the_evaluator(url, ["runs", "prune", "--keep", "0"])
