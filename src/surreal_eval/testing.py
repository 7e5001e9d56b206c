"""Retrieval quality as a test: a fresh store for a test, and an assertion that a run did not regress.

    from surreal_eval.testing import assert_no_regression
    assert_no_regression(db, baseline="previous", metric="recall@5", max_drop=0.02)

`assert_no_regression` runs `gate` (the same rules and defaults as `surreal-eval gate`) and raises
AssertionError whose message is GateResult.summary. The pytest plugin (surreal_eval/pytest_plugin.py,
registered by installing the package) gives the `surreal_eval_db` fixture built by `fresh_store`.
pytest is not needed to import this module.
"""

from __future__ import annotations

from collections.abc import Iterable

from .analysis.gate import GateResult, gate
from .store.connection import Database, RecordID
from .store.opening import connect
from .store.schema import HarnessConfig, import_harness
from .store.settings import Settings

__all__ = ["DEFAULT_DIMENSION", "assert_no_regression", "fresh_store"]

#: The embedding dimension of a fresh store when none is asked for (all-MiniLM-L6-v2's, as the docs' examples).
DEFAULT_DIMENSION = 384
#: Set once this process used fresh_store or assert_no_regression: the pytest plugin then ends the
#: session with os._exit (pytest_plugin.py says why).
used = False


def fresh_store(dimension: int | None = DEFAULT_DIMENSION, **config: int) -> Database:
    """A new in-memory embedded store (`mem://`) with the harness imported at `dimension` (and
    `knn_depth` / `knn_ef` if given); `dimension=None` imports nothing (a load imports the harness
    with its data's dimension). Close it when done (the pytest fixture does)."""
    global used
    used = True
    db = connect(Settings(url="mem://"))
    try:
        if dimension is not None:
            import_harness(db, HarnessConfig(dimension=dimension, **config))
    except BaseException:
        db.close()
        raise
    return db


def assert_no_regression(
    db: Database,
    *,
    baseline: str | RecordID = "previous",
    metric: str | Iterable[str] = "recall@5",
    max_drop: float = 0.02,
    retriever: str | Iterable[str] | None = None,
    candidate: str | RecordID = "latest",
    alpha: float = 0.05,
    allow_different_golden: bool = False,
    per_check: bool = False,
) -> GateResult:
    """Gate run `candidate` (default: the latest) against `baseline` (default `previous`, the run before the latest;
    a run id, a tag, or any name `surreal-eval gate` takes) and raise
    AssertionError with the gate's summary when it fails; return the GateResult when it passes.

    A check fails when `metric` (NAME@K, one or several) of `retriever` (default: every retriever
    both runs evaluated) fell by more than `max_drop` and the paired p-value, Holm-adjusted over the
    checks (raw with `per_check`), is below `alpha`. Bad input raises the library's errors
    (ConfigError, NotFound, NotComparable), not AssertionError.
    """
    global used
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    used = True
    result = gate(db, baseline=baseline, candidate=candidate, metric=metric, retriever=retriever, max_drop=max_drop,
                  alpha=alpha, allow_different_golden=allow_different_golden, per_check=per_check)
    if not result.passed:
        raise AssertionError(result.summary)
    return result
