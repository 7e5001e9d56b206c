"""The pytest plugin (entry point `surreal_eval` in the `pytest11` group: installing the package loads it).

- Fixture `surreal_eval_db`: a fresh in-memory embedded store (`mem://`) with the harness imported,
  closed after the test. Its embedding dimension is the ini option `surreal_eval_dimension` (default
  384), or per test `@pytest.mark.parametrize("surreal_eval_db", [4], indirect=True)`; `0` imports no
  harness (the first load imports it with its data's dimension).
- The session's exit status is pytest's own. The embedded SurrealDB engine can abort the interpreter
  while it finalizes (exit 134, docs/exit-codes.md); so once pytest is done (every report written,
  every plugin unconfigured), a pytest process that used the fixture or `assert_no_regression`
  closes every store still open, flushes its output and ends with `os._exit(exit status)`, as the
  `surreal-eval` command does. Only a process that pytest itself started (`pytest ...` or
  `python -m pytest ...`), never one that called `pytest.main()` from its own code.

Importing this module loads nothing of the engine: a session that does not use the fixture pays nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_cmdline_main", "surreal_eval_db"]

DIMENSION_INI = "surreal_eval_dimension"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(DIMENSION_INI, "surreal_eval_db's embedding dimension (0: import no harness)", default="384")


@pytest.fixture
def surreal_eval_db(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh in-memory embedded store with the harness imported (dimension: the ini option
    surreal_eval_dimension, default 384, or the test's indirect parameter), closed after the test."""
    from .testing import fresh_store

    raw = getattr(request, "param", None)
    if raw is None:
        raw = request.config.getini(DIMENSION_INI)
    try:
        dimension = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{DIMENSION_INI} must be a whole number, got {raw!r}") from None
    db = fresh_store(dimension or None)
    try:
        yield db
    finally:
        db.close()


def _started_by_pytest(config: pytest.Config) -> bool:
    """Is this whole process the pytest run `config` belongs to (not pytest.main() called by other code)?"""
    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if program is None:
        return False
    ours = program.stem in {"pytest", "py.test"} or (program.name == "__main__.py" and program.parent.name == "pytest")
    return ours and tuple(config.invocation_params.args) == tuple(sys.argv[1:])


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config: pytest.Config):
    """Around the whole session (sessionfinish, reports, unconfigure all inside): then end the process."""
    status = yield
    testing = sys.modules.get("surreal_eval.testing")
    if testing is not None and testing.used and _started_by_pytest(config):
        from .store.shutdown import end_process

        _save_coverage()
        end_process(int(status) if status is not None else 0)
    return status


def _save_coverage() -> None:
    """`coverage run -m pytest` saves its data at interpreter exit, which os._exit skips: save it now
    (pytest-cov has saved and stopped its own by this point)."""
    coverage = sys.modules.get("coverage")
    current = getattr(getattr(coverage, "Coverage", None), "current", None)
    measuring = current() if current is not None else None
    if measuring is not None:
        measuring.stop()
        measuring.save()
