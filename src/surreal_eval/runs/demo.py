"""The lesson's demo: the seed in a throwaway in-memory store, evaluated at k = 1, 3, 5."""

from __future__ import annotations

from ..store.opening import connected
from .evaluate import evaluate
from ..store.schema import DEMO_DIMENSION, HarnessConfig, import_harness, import_seed
from ..models import RunReport
from ..store.settings import Settings

__all__ = ["DEMO_KS", "run_demo"]

DEMO_KS = [1, 3, 5]


def run_demo(*, settings: Settings | None = None) -> RunReport:
    """Import the harness and seed into `settings` (default mem://), evaluate, return the full report."""
    settings = settings or Settings(url="mem://")
    with connected(settings) as db:
        import_harness(db, HarnessConfig(dimension=DEMO_DIMENSION))
        import_seed(db)
        return evaluate(db, ks=DEMO_KS, label="demo", per_question=True)
