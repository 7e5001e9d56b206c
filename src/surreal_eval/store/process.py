"""What a surreal-eval process sets for itself once its imports are done: how often Python's garbage collector runs.
The console script sets it, and so do the benchmarks' measured processes, which stand for its commands."""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "collect_rarely"]

#: Allocations between two collections of the youngest generation (Python's default: 700). A command allocates
#: many short-lived objects decoding results and building reports, very few of them in cycles: in a watched CISI
#: load the collector took 26 to 28 ms with this, against 36 to 42 at the default (46 collections fewer).
YOUNG_THRESHOLD = 100_000


def collect_rarely() -> None:
    """Collect the youngest generation every YOUNG_THRESHOLD allocations, the older ones as before."""
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
