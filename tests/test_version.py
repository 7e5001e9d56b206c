"""The version is written in one place (src/surreal_eval/__init__.py; pyproject.toml reads it) and
`surreal-eval --version` prints it, exit 0, before any command or connection (issue 33, 3)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import surreal_eval

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_written_once_and_the_installed_package_carries_it():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and not re.search(r'(?m)^version\s*=', pyproject)
    assert re.fullmatch(r"\d+\.\d+\.\d+", surreal_eval.__version__)
    assert importlib.metadata.version("surreal-eval") == surreal_eval.__version__


def test_version_option_prints_the_version_and_exits_0_without_a_store(tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "SURREAL_EVAL_URL": f"surrealkv://{tmp_path / 'never'}"}
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "--version"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"surreal-eval {surreal_eval.__version__}"
    assert not (tmp_path / "never").exists()  # no store opened, none created


def test_the_changelog_names_this_version_as_its_newest_release():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog)
    assert releases and releases[0] == surreal_eval.__version__, releases
    assert "## [Unreleased]" in changelog.split(f"## [{releases[0]}]")[0]
