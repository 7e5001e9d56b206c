"""A run records the commit checked out where it was made (runs/evaluate.py: git_commit)."""

from __future__ import annotations

import subprocess

from surreal_eval import evaluate
from surreal_eval.runs.evaluate import git_commit


def commit_in(folder, message: str) -> str:
    (folder / "file.txt").write_text(message)
    for command in (["git", "add", "file.txt"], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message]):
        subprocess.run(command, cwd=folder, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, check=True, capture_output=True, text=True).stdout.strip()


def test_a_run_records_the_commit_checked_out_where_it_was_made(tmp_path, monkeypatch, seeded):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    head = commit_in(tmp_path, "one")
    report = evaluate(seeded, retrievers=["bm25"], ks=[3], intervals=False)
    assert seeded.value("SELECT VALUE git_commit FROM ONLY <record> $r", {"r": report.run}) == head
    second = commit_in(tmp_path, "two")
    assert git_commit() == second


def test_outside_a_repository_or_without_git_there_is_no_commit(tmp_path, monkeypatch, seeded):
    monkeypatch.chdir(tmp_path)
    assert git_commit() is None
    report = evaluate(seeded, retrievers=["bm25"], ks=[3], intervals=False)
    assert seeded.value("SELECT VALUE git_commit FROM ONLY <record> $r", {"r": report.run}) is None
    monkeypatch.setenv("PATH", str(tmp_path))  # no git to start
    assert git_commit() is None
