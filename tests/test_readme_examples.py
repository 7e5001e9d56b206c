"""The README's document and question examples load as written (JSONL and CSV) on a fresh store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from surreal_eval.present.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"
runner = CliRunner()


def _examples(kind: str) -> tuple[str, str]:
    """The documents and the questions example of `kind` (jsonl or csv) under "Loading your own data"."""
    section = README.read_text(encoding="utf-8").split("## Loading your own data", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"```{kind}\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2, f"expected a documents and a questions {kind} example"
    return blocks[0], blocks[1]


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_the_readme_examples_load_as_written(tmp_path, kind):
    documents, questions = _examples(kind)
    (tmp_path / f"docs.{kind}").write_text(documents, encoding="utf-8")
    (tmp_path / f"golden.{kind}").write_text(questions, encoding="utf-8")
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    loaded = runner.invoke(app, [*url, "load", "corpus", str(tmp_path / f"docs.{kind}")])
    assert loaded.exit_code == 0, loaded.output
    golden = runner.invoke(app, [*url, "load", "golden", str(tmp_path / f"golden.{kind}")])
    assert golden.exit_code == 0, golden.output
    assert "loaded 1 question (2 labels)" in golden.stdout
