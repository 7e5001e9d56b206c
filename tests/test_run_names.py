"""One way to name a run (a tag, given at `evaluate --tag` or by `tag add`), and `latest` / `previous` meaning the
same in every command, gate included (docs/cli-grammar.md)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from surreal_eval import Settings, connect, evaluate, list_tags
from surreal_eval.present.cli import app

from .conftest import as_evaluator, assert_cli_refuses_the_evaluator, evaluator_store

runner = CliRunner()


def cli(url: str, *args: str):
    return runner.invoke(app, ["--url", url, *args])


def finished_runs(url: str) -> list[str]:
    with connect(Settings(url=url)) as db:
        return db.value("SELECT VALUE record::id(id) FROM seval_run WHERE finished_at != NONE ORDER BY created_at")


def test_a_name_given_at_evaluate_is_a_run_reference_every_command_takes(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert cli(url, "init", "--demo").exit_code == 0
    first = cli(url, "evaluate", "--k", "1,3", "--tag", "baseline", "--note", "before the floor")
    assert first.exit_code == 0, first.output
    assert cli(url, "evaluate", "--k", "1,3", "--floor", "2").exit_code == 0
    compared = cli(url, "compare", "baseline", "latest", "--json")
    assert compared.exit_code == 0, compared.output
    baseline, latest = finished_runs(url)
    assert json.loads(compared.stdout)["run_a"] == f"seval_run:{baseline}"
    listed = json.loads(cli(url, "runs", "list", "--json").stdout)
    assert [(r.get("tags"), r.get("label")) for r in listed if r["kind"] == "run"] == [(["baseline"], "before the floor"), ([], None)]
    # a later run of that name takes the name over, as `tag add` moves a tag
    assert cli(url, "evaluate", "--k", "1,3", "--tag", "baseline").exit_code == 0
    assert cli(url, "tag", "list", "--json").stdout.count("baseline") == 1
    assert json.loads(cli(url, "tag", "list", "--json").stdout)[0]["run"] == f"seval_run:{finished_runs(url)[-1]}"


def test_latest_and_previous_mean_the_same_in_gate_as_everywhere(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert cli(url, "init", "--demo").exit_code == 0
    for floor in ("0", "2", "4"):
        assert cli(url, "evaluate", "--k", "1,3", "--floor", floor).exit_code == 0
    first, second, third = finished_runs(url)
    by_default = json.loads(cli(url, "gate", "--metric", "recall@3", "--json").stdout)
    named = json.loads(cli(url, "gate", "--metric", "recall@3", "--json", "--baseline", "previous", "--candidate", "latest").stdout)
    assert (by_default["baseline"], by_default["candidate"]) == (f"seval_run:{second}", f"seval_run:{third}")
    assert named == by_default
    # `latest` is the newest run in gate as well: against itself it is refused, not read as the run before it
    same = cli(url, "gate", "--metric", "recall@3", "--baseline", "latest", "--candidate", third)
    assert same.exit_code == 2 and "same run" in same.stderr
    # and `previous` is the run before the latest in every command
    compared = json.loads(cli(url, "compare", "previous", "latest", "--json").stdout)
    assert (compared["run_a"], compared["run_b"]) == (f"seval_run:{second}", f"seval_run:{third}")
    assert f"seval_run:{second}" in cli(url, "tag", "add", "previous", "second").stdout


def test_a_tag_is_checked_before_the_evaluation_runs(seeded):
    before = seeded.value("SELECT VALUE id FROM seval_run")
    for name, said in (("latest", "run reference"), ("1st", "not a valid name")):
        try:
            evaluate(seeded, ks=[1], tag=name)
        except Exception as error:  # noqa: BLE001 - the message is what is checked
            assert said in str(error)
        else:
            raise AssertionError(f"tag {name} accepted")
    try:
        evaluate(seeded, ks=[1], tag="main", record=False)
    except Exception as error:  # noqa: BLE001
        assert "--no-record" in str(error)
    else:
        raise AssertionError("a tag on an unrecorded run accepted")
    assert seeded.value("SELECT VALUE id FROM seval_run") == before
    report = evaluate(seeded, ks=[1], tag="main")
    assert [(t.name, t.run) for t in list_tags(seeded)] == [("main", report.run)]


def test_the_evaluator_may_not_take_over_an_owners_tag_by_evaluating(tmp_path):
    url = evaluator_store(tmp_path / "store")
    with connect(Settings(url=url)) as owner:
        evaluate(owner, ks=[1], tag="main")
    assert_cli_refuses_the_evaluator(url, ["evaluate", "--k", "1", "--tag", "main"])
    # its own name on its own run it may give
    with as_evaluator(url) as evaluator:
        mine = evaluate(evaluator, ks=[1], tag="ci-latest")
        assert ("ci-latest", mine.run) in [(t.name, t.run) for t in list_tags(evaluator)]
