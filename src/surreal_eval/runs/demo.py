"""The lesson's demo: the lesson reader's database in a throwaway in-memory store, the harness beside it
(its article attached as a corpus, its question table as a golden set), evaluated at k = 1, 3, 5."""

from __future__ import annotations

from ..store.opening import connected
from .evaluate import evaluate
from ..golden.lesson import import_seed
from ..store.schema import DEMO_DIMENSION, HarnessConfig, import_harness
from ..models import RunReport
from ..store.settings import Settings

__all__ = ["DEMO_FLOORS", "DEMO_KS", "run_demo"]

DEMO_KS = [1, 3, 5]
#: The floors the demo sweeps: whole floors 0 to 5, where the lesson's "every floor from 1.5 to 4 scores the same"
#: shows (a run's default sweep takes its floors from the data: fn::seval::keep_floors).
DEMO_FLOORS = [0, 1, 2, 3, 4, 5]


def run_demo(*, settings: Settings | None = None) -> RunReport:
    """Build the demo's database in `settings` (default mem://), import the harness, evaluate, return the full report."""
    settings = settings or Settings(url="mem://")
    with connected(settings) as db:
        import_harness(db, HarnessConfig(dimension=DEMO_DIMENSION))
        import_seed(db)
        return evaluate(db, ks=DEMO_KS, label="demo", per_question=True, params={"floors": DEMO_FLOORS})
