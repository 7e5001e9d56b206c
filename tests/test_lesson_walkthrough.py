"""The docs' "You followed the lesson" walkthrough runs as written on a database built exactly as the
lesson builds it (examples/lesson/setup.py applies surql/lesson.surql), every function of the reader's
scores the recall@k the reader's own fn::evaluate(k) returns, and nothing of the reader's changes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from surreal_eval.present.cli import app
from surreal_eval.store.opening import connect
from surreal_eval.store.settings import Settings

from .docs_pages import shell_commands

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
#: What a reader of the lesson has in their database (../shared/LESSON.md): every name of it.
READERS_TABLES = ("article", "question", "eval_run")
READERS_FUNCTIONS = ("retrieve_vec", "retrieve_bm25", "retrieve_hybrid", "retrieve_hybrid_floor", "recall_at", "precision_at",
                     "rr", "evaluate", "evaluate_floor")
#: The reader's function behind each retriever the walkthrough registers, by fn::evaluate's key.
EVALUATED = {"lesson_bm25": "bm25", "lesson_vec": "vector", "lesson_hybrid": "hybrid"}


def walkthrough() -> list[str]:
    """The commands of the docs' walkthrough block, in order."""
    return shell_commands("You followed the lesson")


def readers_own(url: str) -> dict:
    """Every definition and row of the reader's database, as the engine reports them."""
    db = connect(Settings(url=url))
    try:
        info = db.value("INFO FOR DB")
        return {
            "tables": {t: (info["tables"].get(t), db.value("INFO FOR TABLE $t", {"t": t}),
                           db.value("SELECT * FROM type::table($t) ORDER BY id", {"t": t})) for t in READERS_TABLES},
            "analyzer": info["analyzers"].get("english"),
            "functions": {f: info["functions"].get(f) for f in READERS_FUNCTIONS},
            "theirs": sorted(n for kind in ("tables", "analyzers", "functions", "accesses", "params")
                             for n in info[kind] if not n.startswith(("seval_", "seval::"))),
        }
    finally:
        db.close()


def lessons_own_evaluation(url: str, k: int) -> dict:
    """What the reader's own fn::evaluate(k) returns in the database at `url`."""
    db = connect(Settings(url=url))
    try:
        return db.value("RETURN fn::evaluate($k)", {"k": k})
    finally:
        db.close()


def test_the_lesson_walkthrough_runs_as_written_scores_as_fn_evaluate_and_changes_nothing_of_the_readers(tmp_path, monkeypatch):
    commands = walkthrough()
    first = shlex.split(commands[0], comments=True)
    assert first[0] == "export" and first[1].startswith("SURREAL_EVAL_URL="), commands[0]
    url = first[1].split("=", 1)[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SURREAL_EVAL_URL", url)
    before, outputs = None, {}
    for line in commands[1:]:
        words = shlex.split(line, comments=True)
        if words[0] == "python":
            assert words[1] == "examples/lesson/setup.py", line
            done = subprocess.run([sys.executable, str(ROOT / words[1])], capture_output=True, text=True, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            before = readers_own(url)
            continue
        assert words[0] == "surreal-eval", line
        result = runner.invoke(app, words[1:])
        assert result.exit_code == 0, (line, result.output)
        outputs[" ".join(words[1:])] = result.stdout
    assert before is not None
    # the harness beside the reader's database: the reader's names are all still the reader's, unchanged
    assert set(before["theirs"]) >= {*READERS_TABLES, "english", *READERS_FUNCTIONS}
    assert readers_own(url) == before
    # each of the reader's functions scores the recall@k the reader's own fn::evaluate(k) returns
    (report,) = [json.loads(text) for line, text in outputs.items() if line.startswith("evaluate") and line.endswith("--json")]
    recall = {(r["retriever"], r["k"]): r["recall"] for r in report["results"]}
    for k in (1, 3, 5):
        theirs = lessons_own_evaluation(url, k)
        for retriever, key in EVALUATED.items():
            assert recall[(retriever, k)] == theirs[key], (retriever, k, theirs)
        assert recall[("bm25", k)] == theirs["bm25"] and recall[("vector", k)] == theirs["vector"]
    assert report["questions"] == 8 and report["params"]["golden"] == "question" and report["params"]["corpus"] == "article"
    # what the docs say the rest shows
    said = {line.split(" --")[0]: text for line, text in outputs.items()}
    assert "fixed: money_back 0.00→1.00" in said["compare latest"]
    assert "question:money_back" in said["diagnose money_back"]
    assert "through index article_content_search" in said["attach article"]
