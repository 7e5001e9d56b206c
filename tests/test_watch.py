"""Evaluate after every ingest, off the writer's path: an ingest is one row written in the writer's own
transaction; the evaluation runs afterwards in transactions of its own (drain, or a server's ASYNC event)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import history
from surreal_eval.errors import PermissionDenied
from surreal_eval.load.bulk import load_corpus, record_ingest
from surreal_eval.models import Article
from surreal_eval.present.cli import app
from surreal_eval.store.record_ids import record_str, to_record
from surreal_eval.runs.watch import clear_watch, drain_ingests, get_watch, set_watch

from .conftest import EVALUATOR, EVALUATOR_PASSWORD, evaluator_store, snapshot

GHOST = ("CREATE question:ghost CONTENT { text: 'where is my ghost order', embedding: [0.1, 0.2, 0.3, 0.4], "
         "relevant: [article:ghost_article] }")
#: the application's own transaction from the issue: a new article and its ingest row, committed together
APP_WRITE = ("BEGIN; CREATE article:new1 CONTENT { title: 'Gift cards', content: 'Gift cards never expire.', "
             "embedding: [0.1, 0.6, 0.1, 0.1] }; CREATE seval_ingest CONTENT { corpus: 'article', documents: 1 }; COMMIT;")
#: the same, its ingest row naming the record it added (docs/watch.md)
APP_WRITE_NAMED = APP_WRITE.replace("documents: 1 }", "documents: 1, added: [article:new1], changed: [], removed: [] }")


def state(db, ingest):
    return db.value("SELECT state, error, run FROM ONLY type::record($i)", {"i": ingest})


def test_an_ingest_only_records_itself_and_its_evaluation_comes_after(seeded):
    set_watch(seeded, ks=[1, 3], retrievers=["bm25", "hybrid_floor"], params={"floor": 2.0})
    ingest = record_ingest(seeded, corpus="seval_article", documents=3)
    assert history(seeded) == [] and state(seeded, ingest)["state"] == "pending"  # the writer waited for nothing
    report = drain_ingests(seeded)
    (done,) = report.evaluated
    runs = history(seeded)
    assert [r.run for r in runs] == [done.run] and done.error is None and done.ingests == [ingest]
    assert runs[0].trigger == "ingest" and runs[0].retrievers == ["bm25", "hybrid_floor"] and runs[0].ingests == [ingest]
    assert runs[0].params["floor"] == 2.0 and runs[0].label == "after ingest of 3 into seval_article"
    assert state(seeded, ingest)["state"] == "done" and record_str(state(seeded, ingest)["run"]) == done.run
    assert drain_ingests(seeded).evaluated == []  # nothing pending any more


def test_ingests_pending_together_are_one_run_that_names_them_all(seeded):
    set_watch(seeded, ks=[3])
    first = record_ingest(seeded, corpus="seval_article", documents=10)
    second = record_ingest(seeded, corpus="seval_article", documents=2)
    (done,) = drain_ingests(seeded).evaluated
    (run,) = history(seeded)
    assert run.ingests == [first, second] == done.ingests and run.label == "after 2 ingests of 12 into seval_article"


def test_row_writes_alone_never_evaluate(seeded):
    set_watch(seeded, ks=[3])
    seeded.query("UPDATE seval_article SET title = title + '' RETURN NONE")
    assert drain_ingests(seeded).evaluated == [] and history(seeded) == []


def test_an_ingest_recorded_while_nothing_is_watched_is_unwatched_and_never_evaluated(seeded):
    set_watch(seeded, ks=[3])
    clear_watch(seeded)
    assert get_watch(seeded) is None
    ingest = record_ingest(seeded, corpus="seval_article", documents=10)
    assert state(seeded, ingest)["state"] == "unwatched"
    set_watch(seeded, ks=[3])
    assert drain_ingests(seeded).evaluated == [] and history(seeded) == []


def test_watching_bad_settings_is_refused(seeded):
    with pytest.raises(Exception, match="at least 1"):
        set_watch(seeded, ks=[0])
    assert get_watch(seeded) is None


def test_a_drop_appears_next_to_the_ingest_that_caused_it(seeded):
    set_watch(seeded, ks=[1])
    record_ingest(seeded, corpus="seval_article", documents=10)
    (first,) = drain_ingests(seeded).evaluated
    # an ingest that replaces the rate-limit article with text that no longer matches "429"
    seeded.query("UPDATE seval_article:api_rate_limits SET content = 'Limits apply to the public interface.'")
    record_ingest(seeded, corpus="seval_article", documents=1)
    (second,) = drain_ingests(seeded).evaluated
    runs = {r.run: r for r in history(seeded)}
    assert runs[second.run].mean("bm25", "recall", 1) < runs[first.run].mean("bm25", "recall", 1)


def test_an_application_ingest_naming_its_records_is_evaluated_from_those_and_the_state_on_an_attached_table(lesson):
    assert "added: [article:new1], changed: [], removed: []" in APP_WRITE_NAMED
    set_watch(lesson, ks=[1, 3])
    lesson.query("CREATE seval_ingest CONTENT { corpus: 'article', documents: 0 }")
    (first,) = drain_ingests(lesson).evaluated  # the state a later run compares with
    lesson.query(APP_WRITE_NAMED)
    (done,) = drain_ingests(lesson).evaluated
    assert done.error is None and done.since["named"] == 1 and done.since["added"] == 1
    assert [record_str(x) for x in done.since["ids"]["added"]] == ["article:new1"]
    fingerprint = lesson.value("SELECT VALUE corpus.fingerprint FROM ONLY $r", {"r": to_record(done.run, "seval_run")})
    assert fingerprint == lesson.value("RETURN fn::seval::corpus_fingerprint('article').fingerprint")


def test_the_application_transaction_commits_and_the_failed_evaluation_is_recorded_on_its_ingest(lesson):
    """The issue's case: the golden set gains a question whose label names an article that does not exist; the
    application's transaction writing an article and its ingest row commits all the same."""
    set_watch(lesson, ks=[1, 3])
    lesson.query(GHOST)
    lesson.query(APP_WRITE)  # raised "The query was not executed due to a failed transaction" before
    assert lesson.value("RETURN count(SELECT id FROM article)") == 11
    (ingest,) = lesson.value("SELECT VALUE id FROM seval_ingest")
    assert state(lesson, ingest)["state"] == "pending"
    report = drain_ingests(lesson)
    (failed,) = report.failed
    row = state(lesson, ingest)
    assert row["state"] == "failed" and row["run"] is None and row["error"] == failed.error
    assert "question:ghost" in row["error"] and "article:ghost_article" in row["error"] and "\n" not in row["error"]
    assert history(lesson) == [] and lesson.value("RETURN count(SELECT id FROM article)") == 11


def test_the_database_event_is_async_and_its_function_settles_ingests_as_a_server_would(lesson):
    """On a server the ASYNC event calls fn::seval::evaluate_ingests after the writer's commit; an embedded engine never
    runs it, so it is called here as the event would: a refusal it foresees is recorded, a good evaluation too."""
    events = lesson.value("INFO FOR TABLE seval_ingest")["events"]
    assert " ASYNC " in events["seval_evaluate_after_ingest"]
    # imported through an embedded engine, which never runs it, the event is disarmed: a watched commit queues nothing
    # (tests/test_server.py: imported through a server, it is armed)
    assert "WHEN 0 = 1 AND " in events["seval_evaluate_after_ingest"]
    set_watch(lesson, ks=[1, 3])
    lesson.query(GHOST)
    lesson.query(APP_WRITE)
    (failed,) = lesson.value("RETURN fn::seval::evaluate_ingests()")
    assert failed["run"] is None and "article:ghost_article" in failed["error"]
    assert lesson.value("SELECT VALUE state FROM seval_ingest") == ["failed"]
    lesson.query("DELETE question:ghost")
    lesson.query("CREATE seval_ingest CONTENT { corpus: 'article', documents: 0 }")
    (done,) = lesson.value("RETURN fn::seval::evaluate_ingests()")
    assert done["error"] is None and done["run"] is not None
    assert sorted(lesson.value("SELECT VALUE state FROM seval_ingest")) == ["done", "failed"]
    assert [r.trigger for r in history(lesson)] == ["ingest"]


def test_load_corpus_names_what_it_added_and_changed_on_its_ingest(seeded):
    set_watch(seeded, ks=[1, 3])
    report = load_corpus(seeded, [Article(id="gift_cards", title="Gift cards", content="Gift cards never expire.", embedding=[0.1, 0.6, 0.1, 0.1]),
                                  Article(id="track_order", title="Track", content="Where is my parcel", embedding=[0.1, 0.1, 0.6, 0.1])],
                         source="new.jsonl")
    ingest = seeded.value("SELECT * FROM ONLY type::record($i)", {"i": report.ingest})
    assert ingest["documents"] == 2 and ingest["source"] == "new.jsonl" and ingest["state"] == "pending"
    assert [str(r) for r in ingest["added"]] == ["seval_article:gift_cards"] and [str(r) for r in ingest["changed"]] == ["seval_article:track_order"]
    (done,) = drain_ingests(seeded).evaluated
    assert history(seeded)[0].corpus["documents"] == 11 and done.run == history(seeded)[0].run


def test_cli_load_after_watch_evaluates_after_its_commit_and_says_so(tmp_path):
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "watch", "set", "--k", "1,3"]).exit_code == 0
    docs = tmp_path / "more.jsonl"
    docs.write_text(json.dumps({"id": "gift_cards", "title": "Gift cards", "content": "Gift cards never expire.",
                                "embedding": [0.1, 0.6, 0.1, 0.1]}) + "\n")
    loaded = runner.invoke(app, [*url, "load", "corpus", str(docs)])
    assert loaded.exit_code == 0, loaded.output
    assert "the ingest recorded run seval_run:" in loaded.stdout
    entries = json.loads(runner.invoke(app, [*url, "runs", "list", "--json"]).stdout)
    assert entries[-1]["kind"] == "run" and entries[-1]["trigger"] == "ingest" and entries[-1]["ingests"]


def test_cli_drain_exits_6_naming_the_failure_and_history_shows_it_in_its_place(tmp_path):
    from surreal_eval import Settings, connect

    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "watch", "set", "--k", "1,3"]).exit_code == 0
    with connect(Settings(url=f"surrealkv://{tmp_path / 's'}")) as db:
        db.query(GHOST)
        db.query(APP_WRITE)
    drained = runner.invoke(app, [*url, "watch", "drain"])
    assert drained.exit_code == 6, drained.output
    assert "question:ghost" in drained.stderr and "article:ghost_article" in drained.stderr
    shown = runner.invoke(app, [*url, "runs", "list"]).stdout
    assert "evaluation failed" in shown and "article:ghost_article" in shown
    (entry,) = json.loads(runner.invoke(app, [*url, "runs", "list", "--json"]).stdout)
    assert entry["kind"] == "ingest" and entry["state"] == "failed" and "question:ghost" in entry["error"]
    again = runner.invoke(app, [*url, "watch", "drain"])
    assert again.exit_code == 0 and "no ingest was pending" in again.stdout


def test_watch_refuses_settings_beside_drain_in_one_line():
    result = CliRunner().invoke(app, ["--url", "mem://", "watch", "--drain", "--k", "1"])
    assert result.exit_code == 2 and "one of --off, --drain, --follow" in result.stderr


def test_an_interrupted_drain_leaves_its_ingests_pending(seeded, monkeypatch):
    from surreal_eval.runs import evaluate as evaluation

    set_watch(seeded, ks=[1])
    ingest = record_ingest(seeded, corpus="seval_article", documents=1)

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluation, "evaluate", stop)
    with pytest.raises(KeyboardInterrupt) as interrupt:
        drain_ingests(seeded)
    assert "pending again" in " ".join(interrupt.value.__notes__)
    assert state(seeded, ingest)["state"] == "pending"


def test_the_evaluator_may_not_drain_or_change_the_watch_and_nothing_changes(tmp_path):
    url = evaluator_store(tmp_path / "s")
    runner = CliRunner()
    with_pass = {"SURREAL_EVAL_PASS": EVALUATOR_PASSWORD}
    from surreal_eval import Settings, connect

    with connect(Settings(url=url)) as owner:
        set_watch(owner, ks=[1])
        record_ingest(owner, corpus="seval_article", documents=1)
        before = snapshot(owner)
    for command in (["watch", "drain"], ["watch", "set", "--k", "1,3"], ["watch", "remove"]):
        result = runner.invoke(app, ["--url", url, *EVALUATOR, *command], env=with_pass)
        assert result.exit_code == 5, (command, result.output)
        assert "evaluator account may not" in result.stderr
    with connect(Settings(url=url)) as owner:
        assert snapshot(owner) == before


def test_the_evaluator_may_not_write_ingests_or_settle_them(tmp_path):
    from pydantic import SecretStr

    from surreal_eval import Settings, connect

    url = evaluator_store(tmp_path / "s")
    with connect(Settings(url=url)) as owner:
        set_watch(owner, ks=[1])
        ingest = record_ingest(owner, corpus="seval_article", documents=1)
    evaluator = connect(Settings(url=url, access="seval_evaluator", user="ci", password=SecretStr(EVALUATOR_PASSWORD)))
    try:
        with pytest.raises(PermissionDenied):
            drain_ingests(evaluator)
        for sql in ("RETURN fn::seval::claim_ingests(0s)", "RETURN fn::seval::evaluate_ingests()",
                    "RETURN fn::seval::settle_ingests([type::record($i)], NONE, 'x')"):
            with pytest.raises(PermissionDenied):
                evaluator.query(sql, {"i": ingest})
        # the table's permissions: a record user's writes to it do nothing
        evaluator.query("CREATE seval_ingest CONTENT { corpus: 'seval_article', documents: 1 }")
        evaluator.query("UPDATE seval_ingest SET state = 'done'")
    finally:
        evaluator.close()
    with connect(Settings(url=url)) as owner:
        assert state(owner, ingest)["state"] == "pending" and owner.value("RETURN count(SELECT id FROM seval_ingest)") == 1


@pytest.mark.slow
def test_the_docs_walkthrough_runs_as_written(tmp_path):
    """docs/watch.md, "Where the evaluation runs": the shell block in bash, its application the page's Python block."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from .docs_pages import blocks

    (tmp_path / "write_article.py").write_text(blocks("Where the evaluation runs", "python")[0], encoding="utf-8")
    script = "set -e\n" + blocks("Where the evaluation runs", "sh")[0]
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PATH": path, "SURREAL_EVAL_URL": f"surrealkv://{tmp_path / 'store'}"})
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "the ingest recorded run seval_run:" in done.stdout and "[incremental]" in done.stdout
