"""The docs' "Walkthrough: a golden set that improves every time you look" runs as written from a
fresh clone's layout: a search log made from CISI becomes click questions, a label found while
diagnosing is added and named by compare, a rewritten document makes its labels stale, the set exports,
and two retrievers are compared on a question set nobody judged."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest


from .conftest import run_doc_block
from .docs_pages import shell_commands

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_golden_set_walkthrough_runs_as_written(tmp_path, monkeypatch):
    commands = shell_commands("Walkthrough: a golden set that improves")
    for folder in ("tests", "benchmarks"):  # the clone's own files, where the block expects them
        (tmp_path / folder).symlink_to(ROOT / folder)
    monkeypatch.chdir(tmp_path)
    printed = run_doc_block(commands, tmp_path, monkeypatch)
    # the click questions sit beside CISI's own, with the gap, real first
    assert "click" in printed["slices --by"] and "gap" in printed["slices --by"]
    # diagnose printed the very command the block runs next
    label = next(line for line in commands if line.startswith("surreal-eval golden label"))
    assert shlex.join(shlex.split(label, comments=True)[:5]) in printed["diagnose 1"]
    # compare names the label added between the two runs
    assert "label-added seval_question:1 -> seval_article:759" in printed["compare previous"]
    # the rewritten document's labels are stale
    stale = [row for row in printed["golden stale"].splitlines() if "-> seval_article:429:" in row]
    assert stale and "labels of seval_question are stale" in printed["golden stale"]
    # the export holds the added label with its provenance
    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "golden.jsonl").read_text().splitlines())}
    assert rows["1"]["provenance"]["759"]["note"] == "compares titles with other fields"
    # on the question set nobody judged, compare gives overlap and RBO
    assert "no question is judged" in printed["compare latest"] and "RBO" in printed["compare latest"]
