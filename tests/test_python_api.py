"""The library as the docs' "Python library" page shows it: the page's code runs as written, and the
library takes the commands' defaults and run names (issue 25)."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from surreal_eval import (
    ConfigError, NotFound, compare_retrievers, connect, evaluate, gate, import_seed, load_beir, load_run, Settings, slices,
)
from surreal_eval.grammar import DEFAULT_KS, parse_ks
from surreal_eval.present import commands_analysis, commands_runs

from .conftest import fresh_db, reverse_embeddings
from .datasets import cisi
from .docs_pages import blocks
from .test_loaders import beir_folder

ROOT = Path(__file__).resolve().parents[1]


def python_blocks() -> list[str]:
    """The ```python blocks of the docs' Python library page, in order."""
    return blocks("Python library", "python")


def run_script(code: str, cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], input=code, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_readme_shows_a_library_tour_a_pytest_file_and_how_to_end_a_script():
    tour, test_file, ending = python_blocks()
    for name in ("connected", "Settings", "load_beir", "evaluate", "load_run", "per_question", "compare_runs", "gate",
                 ".summary"):
        assert name in tour
    assert "surreal_eval_db" in test_file and "assert_no_regression" in test_file
    assert "os._exit" in ending


@pytest.mark.slow
def test_the_readme_library_tour_runs_as_written_on_cisi(tmp_path):
    (tmp_path / "cisi").symlink_to(cisi(), target_is_directory=True)
    done = run_script(python_blocks()[0], tmp_path, "-")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1460 76 384"  # documents, judged test questions, the dimension the load imported
    assert "gate passed:" in done.stdout or "gate FAILED:" in done.stdout


def test_the_readme_script_ending_runs_as_written(tmp_path):
    done = run_script(python_blocks()[2], tmp_path, "-")
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr


# ------------------------------------------------------------------ the commands' defaults and names


def test_load_beir_imports_the_harness_on_a_fresh_store_as_the_command_does(tmp_path):
    db = connect(Settings(url="mem://"))
    try:
        report = load_beir(db, beir_folder(tmp_path / "beir"))
        assert report.corpus.harness_imported == 4
        assert db.value("SELECT VALUE dimension FROM ONLY seval_config:current") == 4
    finally:
        db.close()


def test_load_run_takes_latest_and_previous_as_gate_and_compare_do():
    db = fresh_db()
    try:
        import_seed(db)
        with pytest.raises(NotFound, match="no finished run yet"):
            load_run(db, "latest")
        first = evaluate(db, ks=[1, 3], label="first")
        second = evaluate(db, ks=[1, 3], label="second")
        assert load_run(db, "latest").run == second.run
        assert load_run(db, "previous").label == "first"
        assert load_run(db, first.run.split(":", 1)[1]).run == first.run
        with pytest.raises(ConfigError, match="empty run id"):
            load_run(db, " ")
    finally:
        db.close()


def test_the_library_defaults_are_the_commands_defaults():
    def default(function, name):
        return inspect.signature(function).parameters[name].default

    assert list(DEFAULT_KS) == parse_ks(default(commands_runs.evaluate, "k")) == list(default(evaluate, "ks"))
    assert default(slices, "run") == default(commands_analysis.slices, "run") == "latest"
    assert default(compare_retrievers, "metric") is default(commands_analysis.compare, "metric") is None
    for name in ("baseline", "max_drop", "alpha"):
        assert default(gate, name) == default(commands_analysis.gate, name)


def test_evaluate_without_ks_measures_the_commands_cutoffs():
    db = fresh_db()
    try:
        import_seed(db)
        assert evaluate(db).ks == list(DEFAULT_KS)
    finally:
        db.close()


# ------------------------------------------------------------------------------- GateResult as text


def test_a_failed_gate_summarises_itself_in_a_paragraph_and_reprs_in_one_line():
    db = fresh_db()
    try:
        import_seed(db)
        evaluate(db, ks=[1, 3, 5], label="good")
        reverse_embeddings(db)
        evaluate(db, ks=[1, 3, 5], label="reversed")
        result = gate(db, metric="recall@3", retriever="vector")
    finally:
        db.close()
    (check,) = result.checks
    assert not result.passed and str(result) == result.summary
    text = result.summary
    head, paragraph = text.splitlines()[:2]
    assert head.startswith(f"gate FAILED: candidate {result.candidate} ('reversed') against baseline {result.baseline} ('good')")
    assert "1 of 1 check failed" in head
    assert paragraph.startswith(f"vector recall@3: {check.baseline:.4f} (baseline) -> {check.candidate:.4f} (candidate) "
                                f"over {check.n} questions")
    assert f"95% interval {check.low:+.4f} to {check.high:+.4f}" in paragraph
    assert f"p = {check.p_value:.4f} raw" in paragraph
    shown = re.findall(r"(\w+) \(1\.00 -> 0\.00\)", paragraph)
    assert shown == [d.question.split(":")[1] for d in check.broken[:5]]
    assert paragraph.endswith(f"and {len(check.broken) - 5} more.")
    assert repr(result) == (f"GateResult(passed=False, candidate={result.candidate!r}, baseline={result.baseline!r}, "
                            "metrics=['recall@3'], checks=1, failed=1)")
    assert len(text) < 1500


def test_a_passed_gate_gives_a_line_per_check():
    db = fresh_db()
    try:
        import_seed(db)
        evaluate(db, ks=[3], label="one")
        evaluate(db, ks=[3], label="two")
        result = gate(db, metric="recall@3")
    finally:
        db.close()
    lines = result.summary.splitlines()
    assert lines[0].startswith("gate passed:") and "0 of 4 checks failed" in lines[0]
    assert [line.split(" ", 1)[0] for line in lines[1:5]] == result.checks[0:0] + [c.retriever for c in result.checks]
    assert all("Passed: recall@3 unchanged." in line for line in lines[1:5])
