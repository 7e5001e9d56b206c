"""The docs' "Walkthrough: a model writes and judges" runs as written against the tests' local chat and
embeddings server: generate writes synthetic questions for CISI with drops counted, the evaluation shows real
and synthetic side by side with the gap, judge fills the unjudged top 10 and prints its agreement, and the
human+model run differs from the human one and says so."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest


from .conftest import run_doc_block
from .docs_pages import shell_commands

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_model_walkthrough_runs_as_written(tmp_path, monkeypatch):
    commands = shell_commands("Walkthrough: a model writes and judges")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SURREAL_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    started = [shlex.split(line, comments=True) for line in commands if shlex.split(line, comments=True)[-1] == "&"]
    assert [words[:2] for words in started] == [["python", "tests/chat_server.py"]]  # the tests' server, nothing else
    printed = run_doc_block(commands, tmp_path, monkeypatch)
    generated = printed["golden generate"]
    assert "synthetic questions" in generated and "copies the passage" in generated and "min / q1 / median / q3 / max" in generated
    evaluated = printed["evaluate --retriever"]
    assert "real" in evaluated and "synthetic" in evaluated and "gap +" in evaluated
    judged = printed["golden judge"]
    assert "model judgments" in judged and "Cohen's kappa" in judged
    assert "scored on human plus model judgments" in evaluated
    assert "A scored on human judgments, B on human+model" in printed["compare previous"]
