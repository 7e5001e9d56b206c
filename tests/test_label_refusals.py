"""Every refusal of `golden label` through the CLI: one line on stderr, exit 2 (5 for the evaluator), and
the database exactly as before (its schema and every row)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import HarnessConfig, Settings, connect, import_harness
from surreal_eval.present.cli import app
from surreal_eval.store.access import grant_evaluator

from .conftest import seed_own, snapshot

runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store on disk: the demo in the harness's own tables, a table of the user's that is not attached
    (with one record), and an evaluator account."""
    url = f"surrealkv://{tmp_path_factory.mktemp('labels') / 'store'}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
        owner.query("CREATE notes:memo CONTENT { text: 'refunds take a week' }")
        grant_evaluator(owner, "ci", "correct horse battery")
    return url


def label(url: str, args: list[str], *, evaluator: bool = False):
    """`golden label ARGS` on `url`; the result, after checking the database is exactly as before."""
    with connect(Settings(url=url)) as owner:
        before = snapshot(owner)
    who = ["--access", "seval_evaluator", "--user", "ci"] if evaluator else []
    result = runner.invoke(app, ["--url", url, *who, "golden", "label", *args], env={"SURREAL_EVAL_PASS": "correct horse battery"})
    with connect(Settings(url=url)) as owner:
        assert snapshot(owner) == before
    return result


@pytest.mark.parametrize(("args", "says"), [
    (["nowhere", "track_order"], "no question seval_question:nowhere in the golden set seval_question"),
    (["money_back", "gone"], "no record seval_article:gone"),
    (["money_back", "notes:memo"], "notes:memo is a record of table notes: the labels name another table than the corpus"),
    (["money_back", "track_order", "--grade", "0"], "--grade must be a number above 0"),
    (["money_back", "track_order", "--grade", "-1"], "--grade must be a number above 0"),
    (["money_back", "refund_request", "--grade", "2"], "already labelled with seval_article:refund_request at grade 2"),
    (["money_back", "track_order", "--golden", "nowhere"], "no golden set nowhere"),
])
def test_golden_label_refuses_in_one_line_with_exit_2_changing_nothing(store, args, says):
    result = label(store, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert says in result.stderr


def test_golden_label_refuses_the_same_label_twice(store, tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
    assert runner.invoke(app, ["--url", url, "golden", "label", "money_back", "track_order"]).exit_code == 0
    again = label(url, ["money_back", "track_order"])
    assert again.exit_code == 2 and "already labelled with seval_article:track_order at grade 1" in again.stderr


def test_the_evaluator_may_not_label_exit_5_changing_nothing(store):
    result = label(store, ["money_back", "track_order"], evaluator=True)
    assert result.exit_code == 5, result.output
    assert result.stderr.count("\n") == 1 and "sign in as an owner" in result.stderr
