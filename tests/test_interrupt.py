"""Ctrl-C: a command interrupted mid-way exits 130 with one line saying what it kept and what it discarded,
and the store holds exactly that. Each CLI test runs `surreal-eval` as its own process with its stderr on a
terminal (so it draws its progress), sends it SIGINT at a stated point of that progress, and opens the
store after it."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from surreal_eval import Settings, connect, evaluate
from surreal_eval.golden.files import load_beir
from surreal_eval.store.connection import to_record

from .chat_server import chat_server
from .datasets import cisi
from .conftest import lists_reused

#: cursor movements and colours of the progress display
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LINE = re.compile(r"interrupted: ([^\r\n]*)")


def ctrl_c_as_in_a_terminal() -> None:
    """In the child, before Python starts: SIGINT handled by default, as a terminal's foreground job has it. A
    process started in the background by a non-interactive shell inherits SIGINT ignored, and Python then
    installs no KeyboardInterrupt handler: the child would never see the Ctrl-C these tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def python_ctrl_c() -> Iterator[None]:
    """Python's KeyboardInterrupt handler for SIGINT in this process during the test (see ctrl_c_as_in_a_terminal:
    pytest started in the background has SIGINT ignored), the one it had after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def interrupted(args: list[str], when: Callable[[str], bool], *, env: dict[str, str] | None = None,
                timeout: float = 180) -> tuple[int, str, str]:
    """Run `surreal-eval ARGS`, send it SIGINT as soon as `when(what its stderr showed so far)` is true, and return
    its exit code, its stdout, and the text of its one `interrupted: ...` line."""
    master, terminal = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "surreal_eval", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=terminal, env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200", **(env or {})},
                             preexec_fn=ctrl_c_as_in_a_terminal)
    shown, sent, deadline = b"", False, time.monotonic() + timeout
    try:  # the terminal stays open here until the end: closed by its last holder, it may drop what was not read yet
        while True:
            if select.select([master], [], [], 0.05)[0]:
                shown += os.read(master, 65536)
            elif child.poll() is not None:  # ended, and all it wrote is read
                break
            if not sent and when(ANSI.sub("", shown.decode(errors="replace"))):
                child.send_signal(signal.SIGINT)
                sent = True
            if time.monotonic() > deadline:
                child.kill()
                raise AssertionError(f"surreal-eval {' '.join(args)} still running after {timeout} s")
        stdout, code = child.stdout.read().decode(), child.wait()
    finally:
        os.close(terminal)
        os.close(master)
        child.stdout.close()
    text = ANSI.sub("", shown.decode(errors="replace"))
    assert sent, f"never reached the point to interrupt at; it showed: {text[-2000:]}"
    lines = LINE.findall(text)
    assert len(lines) == 1, text[-3000:]
    return code, stdout, lines[0].strip()


def scored(shown: str) -> int:
    """How many questions the evaluation's progress says it has scored so far."""
    return max((int(n.replace(",", "")) for n in re.findall(r"evaluating questions \(([\d,]+)\)", shown)), default=0)


@pytest.fixture(scope="module")
def cisi_store(tmp_path_factory) -> Path:
    """A persistent store holding CISI (1,460 articles, 76 judged questions), copied by each test that changes it."""
    folder = tmp_path_factory.mktemp("cisi") / "store"
    with connect(Settings(url=f"surrealkv://{folder}")) as db:
        load_beir(db, cisi())
    return folder


def copy_of(store: Path, tmp_path: Path) -> Path:
    shutil.copytree(store, tmp_path / "store")
    return tmp_path / "store"


def count(db, table: str) -> int:
    return db.value(f"RETURN count(SELECT id FROM {table})")


@pytest.mark.slow
def test_an_interrupted_evaluation_records_no_run_and_says_which_candidate_lists_it_kept(cisi_store, tmp_path):
    store = copy_of(cisi_store, tmp_path)
    code, _, said = interrupted(["--url", f"surrealkv://{store}", "evaluate"], lambda shown: scored(shown) >= 8)
    assert code == 130
    found = re.fullmatch(r"no run was recorded \(history is as it was\); the (\d+) candidate lists it had fetched stay "
                         r"cached, and the next run on the same inputs reads them", said)
    assert found, said
    kept = int(found[1])
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        # nothing of the run is left, not even the rankings of the batches that had finished
        assert (count(db, "seval_run"), count(db, "seval_ranking")) == (0, 0)
        assert count(db, "seval_candidate_cache") == kept
        # a BM25 and a vector list for each question scored before the interruption, and here every one: the sweep's
        # floors are taken from the data (the BM25 scores of every list) before the first question is scored
        assert 2 * 8 <= kept <= 2 * 76
        again = evaluate(db)
    assert lists_reused(again) == {"lists": 2 * 76, "reused": kept}  # the next run read them


@pytest.mark.slow
def test_an_interrupted_watched_load_keeps_its_documents_and_records_no_run(cisi_store, tmp_path):
    store = copy_of(cisi_store, tmp_path)
    documents = tmp_path / "new.jsonl"
    rows = (cisi() / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    vectors = (cisi() / "embeddings" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    documents.write_text("".join(json.dumps({"id": f"new_{r['_id']}", "title": r["title"], "content": r["text"],
                                             "embedding": v["embedding"]}) + "\n"
                                 for r, v in zip(map(json.loads, rows), map(json.loads, vectors))))
    url = ["--url", f"surrealkv://{store}"]
    assert subprocess.run([sys.executable, "-m", "surreal_eval", *url, "watch", "set"], capture_output=True).returncode == 0
    code, printed, said = interrupted([*url, "load", "corpus", str(documents)],
                                lambda shown: "evaluating after the ingest (" in shown)
    assert code == 130
    # the load committed before the evaluation started: its documents stay, its ingest is pending again, no run
    assert "loaded 20 articles into seval_article" in printed
    found = re.fullmatch(r"1 ingest not yet evaluated is pending again \(surreal-eval watch drain takes it\); no run was "
                         r"recorded \(history is as it was\); the (\d+) candidate lists it had fetched stay cached, and the "
                         r"next run on the same inputs reads them", said)
    assert found, said
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        assert count(db, "seval_article") == 1460 + 20
        ingests = db.value("SELECT documents, state, at FROM seval_ingest ORDER BY at")
        assert [(i["documents"], i["state"]) for i in ingests] == [(1460, "unwatched"), (20, "pending")]
        assert (count(db, "seval_run"), count(db, "seval_ranking")) == (0, 0)


def test_an_interrupted_load_is_undone_and_says_nothing_was_loaded(tmp_path):
    store, url = tmp_path / "store", ["--url", f"surrealkv://{tmp_path / 'store'}"]
    first, many = tmp_path / "first.jsonl", tmp_path / "many.jsonl"
    first.write_text("".join(json.dumps({"id": f"a{i}", "title": "t", "content": "alpha beta", "embedding": [1, 0, i, 1]}) + "\n"
                             for i in range(3)))
    # enough rows for several parts of the move (journal.MOVE_PART each), so that it is interrupted part-way
    many.write_text("".join(json.dumps({"id": f"b{i}", "title": f"title {i}", "content": f"gamma delta word{i} " * 20,
                                        "embedding": [1, i % 7, i % 5, 1]}) + "\n" for i in range(6000)))
    assert subprocess.run([sys.executable, "-m", "surreal_eval", *url, "load", "corpus", str(first)],
                          capture_output=True).returncode == 0
    code, _, said = interrupted([*url, "load", "corpus", str(many)],
                                lambda shown: re.search(r"moving into seval_article \([\d,]*[1-9][\d,]*\)", shown) is not None)
    assert code == 130
    assert said == "nothing was loaded: a load is kept whole or not at all, and this one was undone"
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        assert sorted(db.value("SELECT VALUE record::id(id) FROM seval_article")) == ["a0", "a1", "a2"]
        tables = db.value("INFO FOR DB")["tables"]
        assert not [t for t in tables if t.startswith(("seval_staging", "seval_undo"))]
        assert count(db, "seval_ingest_journal") == 0


def test_an_interrupted_generation_stores_nothing_and_keeps_the_answers_received_in_the_cache(tmp_path):
    store, cache = tmp_path / "store", tmp_path / "cache"
    url = ["--url", f"surrealkv://{store}"]
    assert subprocess.run([sys.executable, "-m", "surreal_eval", *url, "init", "--demo"], capture_output=True).returncode == 0
    env = {"SURREAL_EVAL_CACHE_DIR": str(cache), "SURREAL_EVAL_CHAT_KEY": "", "SURREAL_EVAL_CHAT": ""}
    with chat_server(dimension=4) as server:
        server.delay = 0.4
        generate = [*url, "golden", "generate", "--count", "10", "--concurrency", "1", "--chat", f"openai:tiny@{server.url}",
                    "--embedder", f"openai:emb@{server.url}"]
        code, _, said = interrupted(generate, lambda shown: server.requests >= 3, env=env)
        assert code == 130
        found = re.fullmatch(r"no question was stored in the database; the (\d+) answers received are kept in the chat "
                             r"cache (.+): the same command asks only for the rest", said)
        assert found and Path(found[2]) == cache / "chat", said
        kept = int(found[1])
        assert 3 <= kept < 10 and len(list((cache / "chat").rglob("*.json"))) == kept
        with connect(Settings(url=f"surrealkv://{store}")) as db:
            assert db.value("SELECT VALUE id FROM seval_question WHERE source = 'synthetic'") == []
        asked = server.requests
        server.delay = 0
        done = subprocess.run([sys.executable, "-m", "surreal_eval", *generate], capture_output=True, text=True,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        assert server.requests - asked == 10 - kept  # only the rest was asked


def test_an_interruption_drops_the_statements_in_flight_and_starts_no_other(tmp_path, python_ctrl_c):
    """In one process: Ctrl-C while several statements run at once (Database.query_many) stops there; none is
    left running behind the caller, so nothing is written after the interruption."""
    with connect(Settings(url=f"surrealkv://{tmp_path / 'store'}")) as db:
        db.query("DEFINE TABLE slow SCHEMALESS")
        calls = [("SLEEP 1s; CREATE slow CONTENT { i: $i } RETURN NONE", {"i": i}) for i in range(8)]
        timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))  # mid-way through the second pair
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            db.query_many(calls, concurrency=2)
        timer.join()
        written = count(db, "slow")
        time.sleep(2.5)  # the statements that were running, or next, would have written by now
        assert count(db, "slow") == written == 2


def test_discarding_a_finished_run_leaves_it_whole(seeded):
    """A client interrupted after a server finished its run discards it (runs.evaluate): the run keeps its rankings."""
    run = to_record(evaluate(seeded, ks=[3]).run, "seval_run")
    rankings = seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE run = $run)", {"run": run})
    seeded.value("RETURN fn::seval::discard_run($run)", {"run": run})
    assert seeded.value("RETURN fn::seval::is_finished_run($run)", {"run": run})
    assert seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE run = $run)", {"run": run}) == rankings > 0
