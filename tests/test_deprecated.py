"""Every 0.1 spelling of a command or option still works for one release, printing one deprecation line that names
the new form, and does what the new form does (present/deprecated.py; docs/upgrading.md)."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.present.cli import app
from surreal_eval.present.deprecated import OLD_SPELLINGS

runner = CliRunner()
PASSWORD = {"SURREAL_EVAL_EVALUATOR_PASS": "correct horse battery"}
CHAT = "openai:judge@http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A store on disk with the demo and two finished runs, the first tagged main, and the first's run file."""
    folder = tmp_path_factory.mktemp("deprecated")
    url = f"surrealkv://{folder / 'store'}"
    for args in (["init", "--demo"], ["evaluate", "--k", "1,3", "--tag", "main"],
                 ["runs", "export", "latest", "--retriever", "bm25", "-o", str(folder / "run.trec")], ["evaluate", "--k", "1,3", "--floor", "2"]):
        done = runner.invoke(app, ["--url", url, *args])
        assert done.exit_code == 0, (args, done.output)
    return folder


def copy(base, tmp_path, name: str) -> str:
    shutil.copytree(base / "store", tmp_path / name)
    return f"surrealkv://{tmp_path / name}"


def cli(url: str, args: list[str]):
    return runner.invoke(app, ["--url", url, *args], env=PASSWORD)


def run_ids(url: str) -> list[dict]:
    with connect(Settings(url=url)) as db:
        return db.value("SELECT record::id(id) AS id, label, (SELECT VALUE record::id(id) FROM seval_tag WHERE run = $parent.id) AS tags, "
                        "params.supplied.names AS supplied, created_at FROM seval_run WHERE finished_at != NONE ORDER BY created_at")


def rows(url: str, table: str) -> list | None:
    """The rows of `table` (None: there is no such table)."""
    with connect(Settings(url=url)) as db:
        if table not in db.value("RETURN (INFO FOR DB).tables"):
            return None
        return db.value(f"SELECT * OMIT created_at, at, written_at FROM {table} ORDER BY id")


# old spelling -> (setup commands, the old command line, the new command line, what to compare: stdout, or a table, or runs)
CASES = {
    ("history", "runs list"): ([], ["history", "--json"], ["runs", "list", "--json"], "stdout"),
    ("untag NAME", "tag remove NAME"): ([], ["untag", "main"], ["tag", "remove", "main"], "stdout"),
    ("runs delete RUN...", "runs remove RUN..."): ([], ["runs", "delete", "previous", "--json"], ["runs", "remove", "previous", "--json"], "stdout"),
    ("export run RUN", "runs export RUN"): ([], ["export", "run", "latest"], ["runs", "export", "latest"], "stdout"),
    ("tag RUN NAME", "tag add RUN NAME"): ([], ["tag", "latest", "next"], ["tag", "add", "latest", "next"], "stdout"),
    ("tag --remove NAME", "tag remove NAME"): ([], ["tag", "--remove", "main"], ["tag", "remove", "main"], "stdout"),
    ("retrievers", "retriever list"): ([], ["retrievers", "--json"], ["retriever", "list", "--json"], "stdout"),
    ("grant NAME", "access add NAME"): ([], ["grant", "ci"], ["access", "add", "ci"], "stdout"),
    ("grant NAME --revoke", "access remove NAME"): ([["access", "add", "ci"]], ["grant", "ci", "--revoke"], ["access", "remove", "ci"], "stdout"),
    ("watch [settings]", "watch set [settings]"): ([], ["watch", "--k", "1,3"], ["watch", "set", "--k", "1,3"], "seval_watch"),
    ("watch --off", "watch remove"): ([["watch", "set", "--k", "1"]], ["watch", "--off"], ["watch", "remove"], "seval_watch"),
    ("watch --drain", "watch drain"): ([["watch", "set", "--k", "1"]], ["watch", "--drain", "--json"], ["watch", "drain", "--json"], "stdout"),
    ("watch --follow", "watch follow"): ([], ["watch", "--follow", "--every", "1", "--help"], ["watch", "follow", "--every", "1", "--help"], "stdout"),
    ("golden detach TABLE", "golden remove TABLE"): ([], ["golden", "detach", "nosuch"], ["golden", "remove", "nosuch"], "stderr"),
    ("export qrels [--run RUN] [-o FILE]", "golden export [FILE] --format qrels [--from-run RUN]"): (
        [], ["export", "qrels", "--run", "main"], ["golden", "export", "--format", "qrels", "--from-run", "main"], "stdout"),
    ("load corpus --table T", "load corpus --corpus T"): (
        [], ["load", "corpus", "{docs}", "--table", "seval_more"], ["load", "corpus", "{docs}", "--corpus", "seval_more"], "seval_more"),
    ("chunk --from T", "chunk --corpus T"): ([], ["chunk", "--from", "no such", "--into", "seval_chunk"],
                                            ["chunk", "--corpus", "no such", "--into", "seval_chunk"], "stderr"),
    ("evaluate --label TEXT", "evaluate --tag NAME or --note TEXT"): (
        [], ["evaluate", "--k", "1", "--label", "base line"], ["evaluate", "--k", "1", "--note", "base line"], "runs"),
    ("score --label TEXT", "score --tag NAME or --note TEXT"): (
        [], ["score", "{run}", "--k", "1", "--label", "base"], ["score", "{run}", "--k", "1", "--tag", "base", "--note", "base"], "runs"),
    ("score --name R", "score --retriever R"): ([], ["score", "{run}", "--k", "1", "--name", "mine"], ["score", "{run}", "--k", "1", "--retriever", "mine"],
                                               "runs"),
    ("report --run RUN", "report RUN (positional)"): ([], ["report", "--html", "{out}", "--run", "main", "--run", "latest"],
                                                      ["report", "main", "latest", "--html", "{out}"], "file"),
    ("golden judge --run RUN", "golden judge RUN (positional)"): ([], ["golden", "judge", "--run", "nosuch", "--k", "3", "--chat", CHAT],
                                                                  ["golden", "judge", "nosuch", "--k", "3", "--chat", CHAT], "stderr"),
    ("golden promote --run RUN", "golden promote --from-run RUN"): (
        [], ["golden", "promote", "--run", "latest", "--metric", "recall@1"], ["golden", "promote", "--from-run", "latest", "--metric", "recall@1"],
        "stdout"),
    ("compare --metric NAME", "compare --metric NAME@K (repeatable)"): (
        [], ["compare", "main", "latest", "--metric", "recall", "--json"], ["compare", "main", "latest", "--metric", "recall@1", "--metric", "recall@3",
                                                                            "--json"], "stdout"),
    ("gate --baseline latest", "gate --baseline previous"): ([], ["gate", "--baseline", "latest", "--json"], ["gate", "--json"], "stdout"),
    ("runs list --metric NAME", "runs list --metric NAME@K"): ([], ["runs", "list", "--metric", "ndcg", "--json"],
                                                               ["runs", "list", "--metric", "ndcg@3", "--json"], "stdout"),
}


def test_every_old_spelling_has_a_case_here():
    registered = set(OLD_SPELLINGS)
    assert len(registered) == len(OLD_SPELLINGS), "an old spelling registered twice"
    assert registered == set(CASES), (registered - set(CASES), set(CASES) - registered)


@pytest.mark.parametrize("spelling", list(CASES), ids=[old for old, _ in CASES])
def test_an_old_spelling_works_once_with_one_line_naming_the_new_form(spelling, base, tmp_path):
    setup, old_args, new_args, compared = CASES[spelling]
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "x1", "title": "t", "content": "a new article about refunds", "embedding": [0.1, 0.2, 0.3, 0.4]}) + "\n")
    fill = {"{docs}": str(docs), "{run}": str(base / "run.trec")}
    results = []
    for side, args in (("old", old_args), ("new", new_args)):
        url = copy(base, tmp_path, side)
        for step in setup:
            assert cli(url, step).exit_code == 0, step
        if compared.startswith("seval_"):
            written = rows(url, compared)
        out = tmp_path / f"{side}.html"
        done = cli(url, [fill.get(a, str(out) if a == "{out}" else a) for a in args])
        results.append((url, done, out))
    (old_url, old, old_out), (new_url, new, new_out) = results
    assert old.exit_code == new.exit_code, (old.output, new.output)
    said = [line for line in old.stderr.splitlines() if line.startswith("deprecated:")]
    assert len(said) == 1, old.stderr
    assert "is now" in said[0] and "0.3.0" in said[0], said
    assert not [line for line in new.stderr.splitlines() if line.startswith("deprecated:")], new.stderr
    assert f"`{spelling[1]}`" in said[0] or (spelling[0].startswith(("evaluate --label", "score --label")) and "--note" in said[0]), said
    if compared == "stdout":
        assert old.stdout == new.stdout
    elif compared == "stderr":
        assert old.exit_code != 0
        assert old.stderr.splitlines()[-1] == new.stderr.splitlines()[-1]
    elif compared == "file":
        assert old_out.read_bytes() and new_out.read_bytes()
    elif compared == "runs":
        before = {r["id"] for r in run_ids(f"surrealkv://{base / 'store'}")}
        made = [[{k: v for k, v in r.items() if k not in ("id", "created_at")} for r in run_ids(url) if r["id"] not in before]
                for url in (old_url, new_url)]
        assert len(made[0]) == 1 and made[0] == made[1], made
    else:  # a table the command writes: both changed it alike
        assert rows(old_url, compared) == rows(new_url, compared) != written


def test_the_library_gate_reads_the_old_latest_with_a_warning(base, tmp_path):
    from surreal_eval.analysis.gate import gate

    with connect(Settings(url=copy(base, tmp_path, "store"))) as db:
        with pytest.warns(DeprecationWarning, match="previous"):
            old = gate(db, baseline="latest", metric="recall@3")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            new = gate(db, metric="recall@3")
    assert old.model_dump() == new.model_dump()
