"""The docs' document and question examples load as written (JSONL and CSV) on a fresh store."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval.present.cli import app

from .docs_pages import blocks

runner = CliRunner()


def _examples(kind: str) -> tuple[str, str]:
    """The documents and the questions example of `kind` (jsonl or csv) under "Loading your own data"."""
    found = blocks("Loading your own data", kind)
    assert len(found) == 2, f"expected a documents and a questions {kind} example"
    return found[0], found[1]


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_the_docs_examples_load_as_written(tmp_path, kind):
    documents, questions = _examples(kind)
    (tmp_path / f"docs.{kind}").write_text(documents, encoding="utf-8")
    (tmp_path / f"golden.{kind}").write_text(questions, encoding="utf-8")
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    loaded = runner.invoke(app, [*url, "load", "corpus", str(tmp_path / f"docs.{kind}")])
    assert loaded.exit_code == 0, loaded.output
    golden = runner.invoke(app, [*url, "load", "golden", str(tmp_path / f"golden.{kind}")])
    assert golden.exit_code == 0, golden.output
    assert "loaded 1 question (2 labels)" in golden.stdout


#: The docs' shell blocks marked `<!-- run: tests/test_docs_examples.py -->`: (section heading, block index,
#: what a reader has done before, environment). Each runs as written, in bash, on a fresh store.
RUNNABLE = [
    ("Score rankings made elsewhere", 0, [], {}),
    ("Compare, gate, report", 1, ["surreal-eval init --demo", "surreal-eval evaluate --k 1,3,5",
                                   "surreal-eval evaluate --k 1,3,5 --floor 3"], {}),
    ("A CI job that gates retrieval", 0, ["surreal-eval init --demo", "surreal-eval evaluate --k 1,5,10"],
     {"GITHUB_SHA": "abc123", "GITHUB_REF": "refs/heads/main"}),
    ("A CI job that gates retrieval", 0, ["surreal-eval init --demo", "surreal-eval evaluate --k 1,5,10",
                                          "surreal-eval tag add latest main"],
     {"GITHUB_SHA": "def456", "GITHUB_REF": "refs/heads/feature"}),
    ("Relevance level and self-retrieval", 0, ["surreal-eval init --demo"], {}),
    ("Candidate lists reused across runs", 0, [], {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("heading", "index", "before", "env"), RUNNABLE,
                         ids=[f"{h}-{i}-{e.get('GITHUB_REF', '')}" for h, i, _, e in RUNNABLE])
def test_the_docs_shell_examples_run_as_written(tmp_path, heading, index, before, env):
    import os
    import subprocess
    import sys
    from pathlib import Path

    block = blocks(heading, "sh")[index]
    script = "\n".join(["set -e", *before, block])
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env, "PATH": path, "SURREAL_EVAL_URL": f"surrealkv://{tmp_path / 'store'}"})
    assert done.returncode == 0, (block, done.stdout[-2000:], done.stderr[-2000:])
