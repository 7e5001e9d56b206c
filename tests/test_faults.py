"""Faults: a killed evaluation leaves the whole run or none of it; a busy store says so; servers that drop."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surreal_eval import ConnectionFailed, Settings, StoreBusy, SurrealEvalError, connect, evaluate, history

from .conftest import seed_own

pytestmark = pytest.mark.slow  # kills processes: not in the fast subset

CHILD_ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def cli(store: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "--url", f"surrealkv://{store}", *args],
                          capture_output=True, text=True, timeout=120, env=CHILD_ENV)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def assert_runs_complete(store: Path) -> int:
    """Every run history shows is whole: all questions ranked and scored at every k, means stored."""
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        runs = history(db)
        for run in runs:
            rid = db.value("RETURN type::record($r)", {"r": run.run})
            ranked = db.value("RETURN count(SELECT question FROM seval_ranking WHERE run = $r AND retriever != 'floor_sweep' GROUP BY question)", {"r": rid})
            results = db.value("RETURN math::sum(SELECT VALUE array::len(results) FROM seval_ranking WHERE run = $r "
                               "AND retriever != 'floor_sweep')", {"r": rid})
            assert ranked == run.questions
            assert results == run.questions * len(run.retrievers) * len(run.ks)
            assert len(run.results) == len(run.retrievers) * len(run.ks)
        # the store is still usable: a new run completes
        # BM25 only: on these 1,500 nearly collinear vectors the HNSW graph misses even a record's own
        # embedding, which the vector engine check rightly refuses; what is tested here is the loads
        report = evaluate(db, ks=[1], retrievers=["bm25"])
        assert report.questions == 8
        return len(runs)
    finally:
        db.close()


def test_sigkill_during_evaluations_leaves_whole_runs_or_none(tmp_path):
    store = tmp_path / "store"
    cli(store, "init", "--demo")
    rng = random.Random(1234)
    for attempt in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import sys; from surreal_eval import *\n"
             "db = connect(Settings(url=sys.argv[1]))\n"
             "while True: evaluate(db, ks=[1, 3, 5, 10])\n",
             f"surrealkv://{store}"],
            env=CHILD_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0 + rng.random() * 1.5)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        assert_runs_complete(store)
    assert assert_runs_complete(store) > 0


#: A child that loads a corpus (1,500 documents, one replacing a demo article) then a golden set
#: (300 questions), again and again, every load marked with its generation; moves commit 100 rows
#: a part, so each load's move is many transactions. It prints each progress step.
LOADER = """
import sys
from surreal_eval import *
from surreal_eval.store import journal

journal.MOVE_PART = 100
db = connect(Settings(url=sys.argv[1]))
N, M, gen = 1500, 300, 0
show = lambda step, done, total: print(f"{step}|{done}|{total}", flush=True)
while True:
    gen += 1
    docs = [Article(id=f"n{i}", content=f"gen{gen} document {i}", embedding=[1, 0, (i % 7) / 7, i / N]) for i in range(N)]
    docs.append(Article(id="track_order", content=f"gen{gen} parcel", embedding=[0, 0, 1, 0]))
    load_corpus(db, docs, batch_size=100, progress=show)
    load_golden(db, [Question(id=f"g{i}", text=f"gen{gen} question {i}", embedding=[1, 0, 0, i / M],
                              relevant=[f"n{i}"]) for i in range(M)], batch_size=100, progress=show)
"""


def unfinished_moves(store: Path) -> list:
    """The journal of a store as a killed process left it, read before surreal-eval opens (and repairs) it."""
    from surrealdb import Surreal

    raw = Surreal(f"surrealkv://{store}")
    try:
        raw.use("surreal_eval", "surreal_eval")
        return raw.query("SELECT VALUE [record::id(id), state] FROM seval_ingest_journal").execute()[0]
    finally:
        raw.close()


def assert_loads_whole(store: Path) -> tuple[int, int]:
    """Every load is in whole or not at all: one generation across the loaded documents and the
    questions, indexes built, no journal or staging left, and the store evaluates."""
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        loaded = db.value("SELECT VALUE content FROM seval_article WHERE string::starts_with(record::id(id), 'n') "
                          "OR id = seval_article:track_order")
        doc_gens = {text.split()[0] for text in loaded}
        assert len(loaded) in (1, 1501)
        assert len(doc_gens) == 1  # all of one load: never some rows of one and some of another
        questions = db.value("SELECT VALUE text FROM seval_question WHERE string::starts_with(record::id(id), 'g')")
        q_gens = {text.split()[0] for text in questions}
        assert len(questions) in (0, 300) and len(q_gens) <= 1
        assert db.value("SELECT VALUE id FROM seval_ingest_journal") == []
        assert [t for t in db.value("INFO FOR DB")["tables"] if t.startswith(("seval_stage_", "_undo_"))] == []
        for index in ("seval_article_content", "seval_article_embedding"):
            assert db.value(f"INFO FOR INDEX {index} ON seval_article")["building"]["status"] == "ready"
        assert db.value("SELECT VALUE record::id(id) FROM seval_article WHERE bm25_text @1,OR@ 'parcel' "
                        "AND id = seval_article:track_order") == ["track_order"]
        # BM25 only: on these 1,500 nearly collinear vectors the HNSW graph misses even a record's own
        # embedding, which the vector engine check rightly refuses; what is tested here is the loads
        report = evaluate(db, ks=[1], retrievers=["bm25"])
        assert report.questions == 8 + len(questions)
        generation = int(doc_gens.pop().removeprefix("gen")) if len(loaded) > 1 else 0
        return generation, int(q_gens.pop().removeprefix("gen")) if q_gens else 0
    finally:
        db.close()


@pytest.mark.parametrize("attempt", range(6))
def test_sigkill_during_loads_leaves_each_load_whole_or_none(tmp_path, attempt):
    """Killed mid-move of the documents, mid-move of the questions, between the move and the index
    build, or at a random moment: reopened, the store holds each load whole or not at all."""
    store = tmp_path / "store"
    cli(store, "init", "--dimension", "4")
    with connect(Settings(url=f"surrealkv://{store}")) as db:  # the demo's articles and questions in the harness's tables
        seed_own(db)
    # (the step to kill in, and the journal row it must leave) or None: a random moment
    targets = [("moving into seval_article", ["seval_article", "moving"]), ("moving into seval_question", ["seval_question", "moving"]),
               ("building indexes", ["seval_article", "indexing"]), None, None, None]
    target, rng = targets[attempt], random.Random(attempt)
    child = subprocess.Popen([sys.executable, "-c", LOADER, f"surrealkv://{store}"],
                             env=CHILD_ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if target is None:
            time.sleep(1.0 + rng.random() * 3)
        else:
            for line in child.stdout:  # kill on the first report of that step under way
                step, done, total = line.strip().split("|")
                if step == target[0] and (total == "1" or 0 < int(done) < int(total)):
                    break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    left = unfinished_moves(store)
    if target is not None:  # the kill did land where it was aimed
        assert target[1] in left
    docs_gen, questions_gen = assert_loads_whole(store)
    assert questions_gen <= docs_gen
    assert_loads_whole(store)  # and opening it again changes nothing


def test_a_second_process_on_a_busy_store_gets_a_clear_message(tmp_path):
    store = tmp_path / "store"
    cli(store, "init", "--demo")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from surreal_eval import *\n"
         "db = connect(Settings(url=sys.argv[1])); print('open', flush=True); time.sleep(60)\n",
         f"surrealkv://{store}"],
        env=CHILD_ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        started = time.monotonic()
        done = cli(store, "runs", "list", check=False)
        assert time.monotonic() - started < 30  # no hang
        assert done.returncode == 3
        assert done.stderr.strip().startswith("error: the store") and "open in another process" in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        with pytest.raises(StoreBusy):
            connect(Settings(url=f"surrealkv://{store}"))
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_a_server_that_is_not_there_fails_fast_with_exit_3(tmp_path):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "--url", "http://127.0.0.1:9", "evaluate"],
                          capture_output=True, text=True, timeout=120, env=CHILD_ENV)
    assert done.returncode == 3 and "cannot reach" in done.stderr
    assert time.monotonic() - started < 60
    with pytest.raises(ConnectionFailed):
        connect(Settings(url="ws://127.0.0.1:9"))


def test_connecting_to_a_server_retries_then_fails_clearly(monkeypatch):
    import surreal_eval.store.connection as connection

    attempts = []
    real_open = connection._open

    async def counting_open(settings):
        attempts.append(settings.url)
        return await real_open(settings)

    monkeypatch.setattr(connection, "_open", counting_open)
    with pytest.raises(ConnectionFailed, match="cannot reach"):
        connect(Settings(url="ws://127.0.0.1:9"))
    assert len(attempts) == connection.CONNECT_ATTEMPTS
    attempts.clear()
    with pytest.raises(ConnectionFailed):  # an embedded store is opened once: no retry
        connect(Settings(url="surrealkv:///dev/null/not-a-folder"))
    assert len(attempts) == 1


def test_an_unfinished_run_left_by_a_dead_process_is_discarded_and_never_shown(seeded):
    started = seeded.value("RETURN fn::seval::start_run([1], ['bm25'], {}, 'dead')")
    seeded.value("RETURN fn::seval::evaluate_questions($r, $ids)", {"r": started["run"], "ids": started["questions"][:3]})
    assert history(seeded) == []  # partial: invisible
    assert seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE results != NONE)") > 0
    evaluate(seeded, ks=[1])  # the next evaluation on this (embedded) store clears it
    assert seeded.value("RETURN record::exists($r)", {"r": started["run"]}) is False
    assert seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE run = $r)", {"r": started["run"]}) == 0
    assert len(history(seeded)) == 1


def test_finishing_a_run_with_unscored_questions_is_refused(seeded):
    started = seeded.value("RETURN fn::seval::start_run([1], ['bm25'], {}, 'partial')")
    seeded.value("RETURN fn::seval::evaluate_questions($r, $ids)", {"r": started["run"], "ids": started["questions"][:2]})
    with pytest.raises(Exception, match="scored 2 of its 8 questions"):
        seeded.value("RETURN fn::seval::finish_run($r)", {"r": started["run"]})
    assert history(seeded) == []


def test_a_run_finished_from_its_means_read_in_parts_records_what_one_read_gives_and_refuses_parts_missing(seeded):
    # runs/evaluate.py reads a run's means a ranking at a time, the rankings in parts side by side, and finishes the run
    # with them (fn::seval::finish_run_with): the same means as one read, and only from every ranking, each once
    started = seeded.value("RETURN fn::seval::start_run([1, 3], ['bm25', 'vector', 'hybrid_floor'], {}, 'parts')")
    run = started["run"]
    seeded.value("RETURN fn::seval::evaluate_questions($r, $ids)", {"r": run, "ids": started["questions"]})
    whole = seeded.value("RETURN fn::seval::run_summary($r)", {"r": run})
    configs = seeded.value("RETURN fn::seval::summary_configs($r)", {"r": run})
    assert configs[0] == ["bm25", None] and ["vector", None] in configs and sum(c[0] == "floor_sweep" for c in configs) > 1
    parts = [seeded.value("RETURN fn::seval::summary_groups($r, $c)", {"r": run, "c": part}) for part in (configs[1::2], configs[::2])]
    for groups in (parts[0], parts[0] + parts[1] + parts[1][:1]):
        with pytest.raises(Exception, match="taken from every ranking it makes, each once"):
            seeded.value("RETURN fn::seval::finish_run_with($r, $g)", {"r": run, "g": groups})
    assert history(seeded) == []
    seeded.value("RETURN fn::seval::finish_run_with($r, $g)", {"r": run, "g": parts[0] + parts[1]})
    row = seeded.value("SELECT means, sweep FROM ONLY $r", {"r": run})
    assert (row["means"], row["sweep"]) == (whole["means"], whole["sweep"]) and len(row["means"]) == 6 and len(history(seeded)) == 1


def test_after_a_failing_statement_no_further_statement_of_a_batch_starts(db):
    """query_many (the evaluation's batches): a failure stops the rest, it does not run them all."""
    db.query("DEFINE TABLE marker SCHEMALESS")
    calls = [("RETURN 1", {})] * 3 + [("THROW 'batch 4 failed'", {})] + [("CREATE marker RETURN NONE", {})] * 50
    with pytest.raises(SurrealEvalError, match="batch 4 failed"):
        db.query_many(calls, concurrency=2)
    # the other worker may finish what it took while the failing call was in flight (under load, a
    # few), but none of the 50 queued after it starts once the failure is known
    assert db.value("RETURN count(SELECT id FROM marker)") < 10
    assert db.query_many([("RETURN $x", {"x": i}) for i in range(5)], concurrency=3) == [[i] for i in range(5)]


def test_a_store_with_a_memtable_waiting_is_reopened_between_statements_and_keeps_everything(tmp_path):
    """Database.flush_if_full: the SDK's async embedded engine never runs surrealkv's memtable flush, and
    writes stall for good after ~2 memtables (found at 100,000 documents). The trigger (a second
    write-ahead log file) takes GBs of writes to reach, so here it is pointed at a folder made to
    look like it; the reopening itself is real."""
    url = f"surrealkv://{tmp_path / 'store'}"
    db = connect(Settings(url=url))
    try:
        assert db._wal == str(tmp_path / "store" / "wal") and db.flush_if_full() is False  # one log: nothing waits
        db.query("CREATE note:a SET text = 'kept'")
        waiting = tmp_path / "looks_like_wal"
        waiting.mkdir()
        (waiting / "00000000000000000000.wal").write_bytes(b"")
        (waiting / "00000000000000000001.wal").write_bytes(b"")
        db._wal = str(waiting)
        client = db._client
        assert db.flush_if_full() is True and db._client is not client
        assert db.value("RETURN note:a.text") == "kept"  # same store, same namespace and database
        db.query("CREATE note:b SET text = 'after'")
    finally:
        db.close()
    db = connect(Settings(url=url))
    try:
        assert db.value("SELECT VALUE text FROM note ORDER BY id") == ["kept", "after"]
    finally:
        db.close()
    memory = connect(Settings(url="mem://"))
    try:
        assert memory._wal is None and memory.flush_if_full() is False
    finally:
        memory.close()


def test_an_evaluation_gives_the_store_a_chance_to_flush_between_groups_of_batches(seeded, monkeypatch):
    import surreal_eval.runs.evaluate as evaluation
    from surreal_eval import Database

    monkeypatch.setattr(evaluation, "GROUP", 1)  # one statement (BATCH = 4 questions) a group
    calls = []
    monkeypatch.setattr(Database, "flush_if_full", lambda db: calls.append(1) or False)
    seen = []
    report = evaluate(seeded, ks=[1, 3], progress=lambda done, total: seen.append((done, total)))
    # two groups for the pass that takes the sweep's floors from the data, two for the questions' own
    assert report.questions == 8 and len(calls) == 4
    assert seen == [(4, 8), (8, 8)]


def test_two_evaluations_through_one_connection_each_record_their_own_run(seeded, monkeypatch):
    """Two threads evaluating through one library connection: the second starts while the first is
    writing (after its first batch of questions), and neither discards the other's unfinished run
    as stale (an embedded store discards any other unfinished run at once)."""
    import threading

    import surreal_eval.runs.evaluate as evaluation

    monkeypatch.setattr(evaluation, "BATCH", 1)  # eight statements a run: the first is mid-run for long
    first_batch = threading.Event()
    reports, failures = {}, []

    def run(label, progress=None):
        try:
            reports[label] = evaluate(seeded, ks=[1, 3], label=label, concurrency=1, progress=progress)
        except BaseException as error:  # noqa: BLE001 - collected and asserted below
            failures.append(error)

    first = threading.Thread(target=run, args=("first", lambda done, total: first_batch.set()))
    second = threading.Thread(target=lambda: first_batch.wait(60) and run("second"))
    first.start(), second.start()
    first.join(timeout=120), second.join(timeout=120)
    assert failures == []
    assert sorted(reports) == ["first", "second"]
    assert sorted(r.run for r in history(seeded)) == sorted(r.run for r in reports.values())
    assert seeded.value("RETURN count(SELECT id FROM seval_run WHERE finished_at = NONE)") == 0
