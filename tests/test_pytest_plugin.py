"""The pytest plugin (surreal_eval/pytest_plugin.py): the docs' test file (docs/python.md) passes as written and fails
with the gate's paragraph after a bad change, and a session that used it ends with pytest's own
exit status every time, never the engine's abort at interpreter exit (issue 25)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from .test_python_api import ROOT, python_blocks

GOOD_LINE = '    evaluate(surreal_eval_db, label="change")'
#: The docs' test with a broken embedding model between the two evaluations.
BREAK = ('    surreal_eval_db.query("FOR $a IN (SELECT id, embedding FROM article) '
         '{ UPDATE $a.id SET embedding = array::reverse($a.embedding) };")\n')


def readme_test_file() -> str:
    return python_blocks()[1]


def broken_test_file() -> str:
    text = readme_test_file()
    assert text.count(GOOD_LINE) == 1
    return text.replace(GOOD_LINE, BREAK + GOOD_LINE)


def installed() -> list:
    """The plugin's pytest11 entry point as the installed distribution declares it (none before `pip install`)."""
    return [ep for ep in entry_points(group="pytest11") if ep.dist is not None and ep.dist.name == "surreal-eval"]


def pytest_session(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m pytest` in `folder` (no ini file, no conftest) with the plugin: by its entry point once
    the package is installed with it, else named with -p."""
    plugin = [] if installed() else ["-p", "surreal_eval.pytest_plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", *plugin, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_the_plugin_is_declared_as_a_pytest11_entry_point():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["pytest11"]
    assert declared == {"surreal_eval": "surreal_eval.pytest_plugin"}
    found = installed()
    assert found, "the installed surreal-eval has no pytest11 entry point: `pip install -e .` registers it"
    assert [(ep.name, ep.value) for ep in found] == [("surreal_eval", "surreal_eval.pytest_plugin")]


def test_the_readme_test_passes_unchanged_and_fails_with_the_gates_paragraph_after_a_bad_change(tmp_path):
    (tmp_path / "test_retrieval.py").write_text(readme_test_file(), encoding="utf-8")
    passed = pytest_session(tmp_path, "test_retrieval.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout

    (tmp_path / "test_retrieval.py").write_text(broken_test_file(), encoding="utf-8")
    failed = pytest_session(tmp_path, "test_retrieval.py", "--junitxml=report.xml")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    out = failed.stdout
    assert "E       AssertionError: gate FAILED: candidate seval_run:" in out and "('change') against baseline" in out
    assert "1 of 1 check failed" in out
    assert "vector recall@3: 0.8750 (baseline) -> 0.1667 (candidate) over 8 questions" in out
    assert "p = 0.0312 raw, 0.0312 Holm-adjusted" in out and "95% interval -0.9583 to -0.3750" in out
    assert "broken: money_back (1.00 -> 0.00)," in out and "and 1 more." in out
    assert "GateResult(" not in out  # the paragraph, never the object
    # the JUnit report pytest writes at the end of the session is whole although the plugin ends the process
    case = ET.parse(tmp_path / "report.xml").getroot().find(".//testcase")
    assert "gate FAILED" in case.find("failure").get("message")


def test_a_program_that_calls_pytest_main_itself_keeps_running(tmp_path):
    (tmp_path / "test_retrieval.py").write_text(readme_test_file(), encoding="utf-8")
    plugin = "([] if any(e.name == 'surreal_eval' for e in entry_points(group='pytest11')) else ['-p', 'surreal_eval.pytest_plugin'])"
    code = ("import pytest\nfrom importlib.metadata import entry_points\n"
            f"code = pytest.main([*{plugin}, '-q', '-p', 'no:cacheprovider', 'test_retrieval.py'])\n"
            "print('still here', int(code))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "still here 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_fifty_sessions_that_use_the_plugin_end_with_pytests_own_codes(tmp_path):
    """The engine aborts a few library processes in a hundred at exit (exit 134): the plugin's sessions never."""
    (tmp_path / "test_good.py").write_text(readme_test_file(), encoding="utf-8")
    (tmp_path / "test_bad.py").write_text(broken_test_file(), encoding="utf-8")
    files = ["test_good.py", "test_bad.py"] * 25
    with ThreadPoolExecutor(max_workers=4) as pool:
        codes = list(pool.map(lambda name: (name, pytest_session(tmp_path, name).returncode), files))
    assert sorted(set(codes)) == [("test_bad.py", 1), ("test_good.py", 0)]
    assert len(codes) == 50
