"""The code passes the linter CI runs (ruff, configured in pyproject.toml: pycodestyle errors and warnings,
pyflakes, lines under 160), and the linter fails on a planted violation (issue 33, 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_code_passes_the_linter():
    done = ruff()
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_fails_on_a_long_line_and_an_unused_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import os\n\nTEXT = '" + "x" * 170 + "'\n", encoding="utf-8")
    done = ruff("--config", str(ROOT / "pyproject.toml"), str(planted), cwd=tmp_path)
    assert done.returncode == 1
    assert "E501" in done.stdout and "F401" in done.stdout
