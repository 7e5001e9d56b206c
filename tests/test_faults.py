"""Faults: a killed evaluation leaves the whole run or none of it; a busy store says so; servers that drop."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surreal_eval import ConnectionFailed, Settings, StoreBusy, connect, evaluate, history

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
            ranked = db.value("RETURN count(SELECT question FROM eval_ranking WHERE run = $r AND retriever != 'floor_sweep' GROUP BY question)", {"r": rid})
            results = db.value("RETURN count(SELECT id FROM eval_result WHERE run = $r AND retriever != 'floor_sweep')", {"r": rid})
            assert ranked == run.questions
            assert results == run.questions * len(run.retrievers) * len(run.ks)
            assert len(run.results) == len(run.retrievers) * len(run.ks)
        # the store is still usable: a new run completes
        report = evaluate(db, ks=[1])
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
        done = cli(store, "history", check=False)
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
    import surreal_eval.connection as connection

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
    started = seeded.value("RETURN fn::start_run([1], ['bm25'], {}, 'dead')")
    seeded.value("RETURN fn::evaluate_questions($r, $ids)", {"r": started["run"], "ids": started["questions"][:3]})
    assert history(seeded) == []  # partial: invisible
    assert seeded.value("RETURN count(SELECT id FROM eval_result)") > 0
    evaluate(seeded, ks=[1])  # the next evaluation on this (embedded) store clears it
    assert seeded.value("RETURN record::exists($r)", {"r": started["run"]}) is False
    assert seeded.value("RETURN count(SELECT id FROM eval_ranking WHERE run = $r)", {"r": started["run"]}) == 0
    assert len(history(seeded)) == 1


def test_finishing_a_run_with_unscored_questions_is_refused(seeded):
    started = seeded.value("RETURN fn::start_run([1], ['bm25'], {}, 'partial')")
    seeded.value("RETURN fn::evaluate_questions($r, $ids)", {"r": started["run"], "ids": started["questions"][:2]})
    with pytest.raises(Exception, match="scored 2 of its 8 questions"):
        seeded.value("RETURN fn::finish_run($r)", {"r": started["run"]})
    assert history(seeded) == []
