"""The README's first example runs as written, on the database a reader of the lesson has (its `article` and
`question` tables and its own retrieval functions: ../shared/LESSON.md), and the retriever it registers is
evaluated beside the built-ins."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from surreal_eval import Settings, connect, import_lesson
from surreal_eval.present.cli import app

from .conftest import run_doc_block
from .docs_pages import README

HEADING = "On your own database"


def readme_commands() -> list[str]:
    """The commands of the first shell block under the README's heading HEADING."""
    import shlex

    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {HEADING}", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)
    return [line for line in block.splitlines() if shlex.split(line, comments=True)]


def test_the_readme_first_example_runs_as_written_on_a_lesson_readers_database(tmp_path, monkeypatch):
    commands = readme_commands()
    assert any(c.startswith("surreal-eval retriever add") for c in commands) and any(c.startswith("surreal-eval gate") for c in commands)
    monkeypatch.chdir(tmp_path)
    url = next((line.split("=", 1)[1].split()[0] for line in commands if line.startswith("export SURREAL_EVAL_URL=")),
               "surrealkv://surreal-eval.db")
    with connect(Settings(url=url)) as db:
        import_lesson(db)
    printed = run_doc_block(commands, tmp_path, monkeypatch)
    assert "PASS" in printed["gate --baseline"]
    # the retriever it registered was evaluated with the built-ins, in every run the example made
    monkeypatch.setenv("SURREAL_EVAL_URL", url)
    runs = [r for r in json.loads(CliRunner().invoke(app, ["runs", "list", "--json"]).stdout) if r["kind"] == "run"]
    added = re.search(r"retriever add (\S+)", " ".join(commands)).group(1)
    assert len(runs) >= 2
    for run in runs:
        assert {added, "bm25", "vector", "hybrid", "hybrid_floor"} <= set(run["retrievers"]), run["retrievers"]
