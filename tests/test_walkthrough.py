"""The docs' walkthrough (examples/own_database) runs as written, and leaves the user's own
definitions and rows byte for byte as their application made them."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from surreal_eval.present.cli import app
from surreal_eval.store.opening import connect
from surreal_eval.store.settings import Settings

from .docs_pages import shell_commands

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own_database"
runner = CliRunner()


def walkthrough() -> list[str]:
    """The commands of the docs' walkthrough block, in order."""
    return shell_commands("Walkthrough: your database")


def users_own(url: str) -> dict:
    db = connect(Settings(url=url))
    try:
        info = db.value("INFO FOR DB")
        return {"table": db.value("INFO FOR TABLE kb"), "rows": db.value("SELECT * FROM kb ORDER BY id"),
                "analyzer": info["analyzers"]["kb_words"], "function": info["functions"]["kb_search"],
                "tables": sorted(t for t in info["tables"] if t == "kb")}
    finally:
        db.close()


@pytest.fixture
def search_api():
    sys.path.insert(0, str(EXAMPLE))
    try:
        import search_api
    finally:
        sys.path.remove(str(EXAMPLE))
    server = search_api.server(0)  # a free port on 127.0.0.1
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    yield server, thread
    server.shutdown()
    server.server_close()


def test_the_readme_walkthrough_runs_as_written_and_changes_nothing_of_the_users(tmp_path, search_api, monkeypatch):
    server, thread = search_api
    port = str(server.server_address[1])
    work = tmp_path / "own_database"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("__pycache__", "*.db"))
    commands = walkthrough()
    first = shlex.split(commands[0], comments=True)
    assert first[:2] == ["cd", "examples/own_database"] and first[3] == "export", commands[0]
    variable, url = first[4].split("=", 1)
    assert variable == "SURREAL_EVAL_URL"
    monkeypatch.chdir(work)
    monkeypatch.setenv(variable, url)
    before = None
    outputs = {}
    for line in commands[1:]:
        words = shlex.split(line.replace("8765", port), comments=True)
        if words[:2] == ["python", "setup.py"]:
            done = subprocess.run([sys.executable, *words[1:]], capture_output=True, text=True, cwd=work)
            assert done.returncode == 0, done.stderr
            before = users_own(url)
        elif words[:2] == ["python", "search_api.py"]:
            assert words[-1] == "&" and words[2] == port
            thread.start()
        elif words[0] == "kill":
            server.shutdown()
        else:
            assert words[0] == "surreal-eval", line
            result = runner.invoke(app, words[1:])
            assert result.exit_code == 0, (line, result.output)
            outputs[" ".join(words[1:4])] = result.stdout
    assert before is not None
    # what the docs say the walkthrough shows
    assert "through index kb_body" in outputs["attach kb --content"] and "kb_vec" in outputs["attach kb --content"]
    assert all(name in outputs["evaluate --corpus kb"] for name in ("mine_hybrid", "http:api", "hybrid"))
    assert "mine precision@1 broken: money 1.00→0.00, where 1.00→0.00" in outputs["compare previous latest"]
    assert "not separable" in outputs["compare previous --retriever"]
    assert "PASS" in outputs["gate --baseline previous"]
    assert (work / "report.html").stat().st_size > 0
    assert users_own(url) == before
