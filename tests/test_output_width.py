"""Output follows the terminal: COLUMNS when set, the terminal's width, a readable default when piped with
neither (issue 33, 5). Piped, every table used to be forced 200 wide: `surreal-eval demo | cat` printed lines
of 210 characters whatever COLUMNS said."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from surreal_eval.present.app import PIPED_WIDTH, output_width


def piped_demo(folder, columns: str | None) -> list[str]:
    """The lines `surreal-eval demo | cat` prints in `folder`, with COLUMNS `columns` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONWARNINGS"] = "ignore"
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "demo"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "hybrid_floor" in done.stdout and "money_back" in done.stdout  # the demo's tables are there
    return done.stdout.splitlines()


@pytest.mark.parametrize(("environ", "terminal", "width"), [
    ({"COLUMNS": "100"}, False, 100),
    ({"COLUMNS": " 90 "}, True, 90),
    ({}, True, None),  # rich asks the terminal
    ({}, False, PIPED_WIDTH),
    ({"COLUMNS": "wide"}, False, PIPED_WIDTH),
    ({"COLUMNS": "0"}, False, PIPED_WIDTH),
    ({"COLUMNS": "-5"}, True, None),
])
def test_output_width_is_columns_then_the_terminal_then_the_piped_default(environ, terminal, width):
    assert output_width(environ, terminal) == width


def test_piped_demo_fits_the_columns_it_is_given(tmp_path):
    lines = piped_demo(tmp_path, "100")
    assert max(len(line) for line in lines) <= 100


def test_piped_demo_without_columns_fits_the_readable_default(tmp_path):
    lines = piped_demo(tmp_path, None)
    assert max(len(line) for line in lines) <= PIPED_WIDTH
    assert PIPED_WIDTH <= 120
