"""The README's "Walkthrough: a model writes and judges" runs as written against the tests' local chat and
embeddings server: generate writes synthetic questions for CISI with drops counted, the evaluation shows real
and synthetic side by side with the gap, judge fills the unjudged top 10 and prints its agreement, and the
human+model run differs from the human one and says so."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from surreal_eval.present.cli import app

from .conftest import readme_commands

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def wait_for(port: int, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


@pytest.mark.slow
def test_the_model_walkthrough_runs_as_written(tmp_path, monkeypatch):
    commands = readme_commands("Walkthrough: a model writes and judges")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SURREAL_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    printed: dict[str, str] = {}
    background: list[subprocess.Popen] = []
    try:
        for line in commands:
            words = shlex.split(line, comments=True)
            if words[-1] == "&":  # the server, as a reader starts it
                assert words[:2] == ["python", "tests/chat_server.py"], line
                background.append(subprocess.Popen([sys.executable, *words[1:-1]], cwd=tmp_path, stdout=subprocess.DEVNULL))
                wait_for(int(words[words.index("--port") + 1]))
            elif words[0] == "export":
                name, value = words[1].split("=", 1)
                monkeypatch.setenv(name, value)
            elif words[0] == "surreal-eval":
                result = runner.invoke(app, words[1:])
                assert result.exit_code == 0, (line, result.output)
                printed[" ".join(words[1:3])] = printed.get(" ".join(words[1:3]), "") + result.output
            else:
                done = subprocess.run(line, shell=True, cwd=tmp_path, capture_output=True, text=True, env=os.environ.copy())
                assert done.returncode == 0, (line, done.stderr)
    finally:
        for process in background:
            process.kill()
            process.wait()
    generated = printed["golden generate"]
    assert "synthetic questions" in generated and "copies the passage" in generated and "min / q1 / median / q3 / max" in generated
    evaluated = printed["evaluate --retriever"]
    assert "real" in evaluated and "synthetic" in evaluated and "gap +" in evaluated
    judged = printed["golden judge"]
    assert "model judgments" in judged and "Cohen's kappa" in judged
    assert "scored on human plus model judgments" in evaluated
    assert "A scored on human judgments, B on human+model" in printed["compare previous"]
