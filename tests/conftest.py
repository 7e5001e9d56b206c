"""One fixture family: a fresh embedded SurrealDB 3 (mem://) with the harness imported."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# piped output follows COLUMNS (surreal_eval.present.app.output_width): the tests read the CLI's output 200 wide,
# whatever the shell running them says; tests/test_output_width.py checks other widths in processes of their own
os.environ["COLUMNS"] = "200"

from surreal_eval import Article, Database, HarnessConfig, Question, Settings, connect, import_harness, import_lesson, import_seed
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_golden

SERVER_URL = os.environ.get("SURREAL_EVAL_TEST_URL")
needs_server = pytest.mark.skipif(
    not SERVER_URL,
    reason="no server: `docker compose up -d` then SURREAL_EVAL_TEST_URL=ws://localhost:8000 "
    "SURREAL_EVAL_TEST_USER=root SURREAL_EVAL_TEST_PASS=... pytest",
)


def run_doc_block(commands: list[str], folder, monkeypatch) -> dict[str, str]:
    """Run a docs shell block as a reader would, in `folder`: `export` sets the variable, a line ending in
    `&` starts `python SCRIPT ... --port N` in the background (stopped at the end), `surreal-eval` runs in
    process (each must exit 0), anything else in the shell. Returns the output of each command by its first
    two words (`compare previous`), concatenated when a command runs twice."""
    import shlex
    import socket
    import subprocess
    import sys
    import time

    from typer.testing import CliRunner

    from surreal_eval.present.cli import app

    printed: dict[str, str] = {}
    background: list[subprocess.Popen] = []
    try:
        for line in commands:
            words = shlex.split(line, comments=True)
            if words[-1] == "&":
                background.append(subprocess.Popen([sys.executable, *words[1:-1]], cwd=folder, stdout=subprocess.DEVNULL))
                port, end = int(words[words.index("--port") + 1]), time.monotonic() + 10
                while True:
                    with socket.socket() as probe:
                        if probe.connect_ex(("127.0.0.1", port)) == 0:
                            break
                    assert time.monotonic() < end, f"nothing listens on 127.0.0.1:{port}"
                    time.sleep(0.05)
            elif words[0] == "export":
                name, value = words[1].split("=", 1)
                monkeypatch.setenv(name, value)
            elif words[0] == "surreal-eval":
                result = CliRunner().invoke(app, words[1:])
                assert result.exit_code == 0, (line, result.output)
                key = " ".join(words[1:3])
                printed[key] = printed.get(key, "") + result.output
            else:  # tar, python, mkdir, grep: the shell's
                done = subprocess.run(line, shell=True, cwd=folder, capture_output=True, text=True, env=os.environ.copy())
                assert done.returncode == 0, (line, done.stderr)
    finally:
        for process in background:
            process.kill()
            process.wait()
    return printed


@pytest.fixture
def chat_env(monkeypatch, tmp_path):
    """No chat model or key from the environment, and a chat cache of the test's own."""
    for name in ("SURREAL_EVAL_CHAT_KEY", "SURREAL_EVAL_CHAT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SURREAL_EVAL_CACHE_DIR", str(tmp_path / "cache"))


def peak_memory_mb(script: str) -> int:
    """The peak resident memory, in MB, of a Python process of its own running `script` (which may import
    tests.conftest: it runs from the repository's root); the script failing fails the caller."""
    import subprocess
    import sys
    from pathlib import Path

    # the process's own high-water mark (VmHWM), not ru_maxrss: that keeps the peak of the process it was forked from
    # across the exec (a child of the suite's pytest read its 2 GB)
    # (and it leaves by os._exit once it has printed: the embedded engine may abort at interpreter exit, docs/exit-codes.md)
    measured = script + ("\nprint([int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0] // 1024, flush=True)"
                         "\nimport os\nos._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", measured], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


def fresh_db(dimension: int = 4, **config: int) -> Database:
    db = connect(Settings(url="mem://"))
    import_harness(db, HarnessConfig(dimension=dimension, **config))
    return db


@pytest.fixture
def db() -> Iterator[Database]:
    """A fresh in-memory database with the harness imported (dimension 4)."""
    database = fresh_db()
    yield database
    database.close()


def lesson_rows() -> tuple[list[Article], list[Question]]:
    """The demo's ten articles and eight questions (surql/lesson.surql and seed.surql), read from a
    throwaway database built as the demo builds it."""
    source = connect(Settings(url="mem://"))
    try:
        import_lesson(source)
        from surreal_eval.golden.lesson import SEED_SCRIPT, _read

        source.query(_read(SEED_SCRIPT))
        articles = source.value("SELECT record::id(id) AS id, title, content, embedding FROM article ORDER BY id")
        questions = source.value("SELECT record::id(id) AS id, text, embedding, relevant.map(|$r| record::id($r)) AS relevant, "
                                 "grades, category FROM question ORDER BY id")
    finally:
        source.close()
    return ([Article(**a) for a in articles],
            [Question(**{k: v for k, v in q.items() if v is not None}) for q in questions])


def seed_own(db: Database) -> None:
    """The demo's articles and questions loaded into the harness's own tables (seval_article, seval_question),
    indexed with seval_english as the demo was before it became the lesson reader's database."""
    articles, questions = lesson_rows()
    load_corpus(db, articles, analyzer="seval_english")
    load_golden(db, questions)
    db.query("DELETE seval_ingest")  # the loads are the fixture's, not ingests a test watches


@pytest.fixture
def seeded(db: Database) -> Database:
    """`db` with the demo's ten articles and eight questions in the harness's own tables."""
    seed_own(db)
    return db


@pytest.fixture
def lesson(db: Database) -> Database:
    """`db` as the demo builds it: the lesson reader's database, article and question attached in place."""
    import_seed(db)
    return db


def lists_reused(report) -> dict:
    """How many candidate lists a run used and how many of them it read as kept (RunReport.retrieval)."""
    return {key: report.retrieval[key] for key in ("lists", "reused")}


def snapshot(db: Database) -> dict:
    """Everything a test needs to prove the database did not change: schema and every row."""
    info = db.value("INFO FOR DB")
    rows = {table: db.value("SELECT * FROM type::table($t) ORDER BY id", {"t": table}) for table in sorted(info["tables"])}
    return {"info": info, "rows": rows}


def without_build_times(state: dict) -> dict:
    """A `snapshot` without when each corpus table's HNSW graph was built (seval_corpus.vector_built): a load undone
    after its move began puts every row back but builds the graph again, which is recorded (analysis.rebuilt)."""
    rows = {**state["rows"], "seval_corpus": [{k: v for k, v in row.items() if k != "vector_built"}
                                              for row in state["rows"].get("seval_corpus", [])]}
    return {**state, "rows": rows}


def build_time(db, table: str = "seval_article"):
    """When the harness last built corpus table `table`'s HNSW graph (seval_corpus.vector_built)."""
    return db.value("RETURN type::record('seval_corpus', $t).vector_built", {"t": table})


def demo_tables(db) -> tuple[str, str]:
    """(corpus, golden set) of the demo in `db`: the lesson reader's article and question when the demo
    attached them (`init --demo`, the `lesson` fixture), else the harness's own (the `seeded` fixture)."""
    attached = db.value("RETURN record::exists(seval_golden:question)")
    return ("article", "question") if attached else ("seval_article", "seval_question")


def reverse_embeddings(db) -> None:
    """Reverse the axes of every article embedding: a broken embedding model, same texts."""
    corpus, _ = demo_tables(db)
    db.query("FOR $a IN (SELECT id, embedding FROM type::table($t)) { UPDATE $a.id SET embedding = array::reverse($a.embedding) };",
             {"t": corpus})


def add_question(db, **extra) -> None:
    """One more golden question (a different golden set than the demo's)."""
    corpus, golden = demo_tables(db)
    db.query(
        "CREATE type::record($g, 'refund_status') CONTENT object::extend({text: 'when will my refund arrive', "
        "embedding: [0.1, 0.9, 0.1, 0.0], relevant: [type::record($c, 'refund_request')]}, $extra)",
        {"extra": extra, "g": golden, "c": corpus},
    )


@pytest.fixture
def regressed(seeded):
    """A good run at k = 1, 3, 5, then a run after the article embeddings were reversed: (db, good, bad)."""
    from surreal_eval.runs.evaluate import evaluate

    base = evaluate(seeded, ks=[1, 3, 5], label="good")
    reverse_embeddings(seeded)
    bad = evaluate(seeded, ks=[1, 3, 5], label="reversed")
    return seeded, base, bad


#: The evaluator account the refusal tests use, and its password.
EVALUATOR_PASSWORD = "correct horse battery"
EVALUATOR = ["--access", "seval_evaluator", "--user", "ci"]


def evaluator_store(path) -> str:
    """A store on disk at `path` with the demo in the harness's own tables and an evaluator account `ci`; its URL."""
    from surreal_eval.store.access import grant_evaluator

    url = f"surrealkv://{path}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
        grant_evaluator(owner, "ci", EVALUATOR_PASSWORD)
    return url


def demo_store_with_run(path, retrievers: list[str], *, before=None) -> tuple[str, str]:
    """A store on disk at `path` with the demo in the harness's own tables, `before(db)` applied (labels, accounts), and
    one run at k 1 and 3 of `retrievers`: (its URL, the run)."""
    from surreal_eval.runs.evaluate import evaluate

    url = f"surrealkv://{path}"
    with connect(Settings(url=url)) as owner:
        import_harness(owner, HarnessConfig(dimension=4))
        seed_own(owner)
        if before is not None:
            before(owner)
        run = evaluate(owner, ks=[1, 3], retrievers=retrievers).run
    return url, run


def as_evaluator(url: str) -> Database:
    """A connection to `url` as the evaluator account of `evaluator_store` (a context manager)."""
    return connect(Settings(url=url, access="seval_evaluator", user="ci", password=EVALUATOR_PASSWORD))


def assert_cli_refuses_the_evaluator(url: str, args: list[str], env: dict | None = None) -> None:
    """`surreal-eval ARGS` as the evaluator exits 5 with one line on stderr and leaves the store exactly as it was."""
    from typer.testing import CliRunner

    from surreal_eval.present.cli import app

    with connect(Settings(url=url)) as owner:
        before = snapshot(owner)
    result = CliRunner().invoke(app, ["--url", url, *EVALUATOR, *args], env={"SURREAL_EVAL_PASS": EVALUATOR_PASSWORD, **(env or {})})
    assert result.exit_code == 5, result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    with connect(Settings(url=url)) as owner:
        assert snapshot(owner) == before
