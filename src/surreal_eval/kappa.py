"""How far two judges agree on the same binary judgments (relevant or not): Cohen's kappa.

With n pairs, a = both relevant, b = only the first relevant, c = only the second, d = neither:

    observed  p_o = (a + d) / n
    chance    p_e = ((a + b)(a + c) + (c + d)(b + d)) / n^2      (each judge's own share of "relevant")
    kappa     (p_o - p_e) / (1 - p_e)

1 is perfect agreement, 0 what chance alone gives, below 0 worse than chance (Cohen 1960; the value
scikit-learn's cohen_kappa_score gives for two binary label lists). When p_e is 1 (both judges gave one
and the same answer to every pair) kappa is undefined: None.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

__all__ = ["Agreement", "agreement"]


class Agreement(BaseModel):
    """Two judges' binary judgments of the same pairs: the confusion counts, p_o, and Cohen's kappa."""

    #: both relevant, only the first (human) relevant, only the second (model) relevant, neither
    both: int
    first_only: int
    second_only: int
    neither: int
    observed: float | None
    kappa: float | None

    @property
    def pairs(self) -> int:
        return self.both + self.first_only + self.second_only + self.neither


def agreement(first: Sequence[bool], second: Sequence[bool]) -> Agreement:
    """The agreement of two judges' binary judgments, pair by pair (True: relevant), as the module says."""
    if len(first) != len(second):
        raise ValueError(f"the judges judged {len(first)} and {len(second)} pairs: they must judge the same ones")
    a = sum(x and y for x, y in zip(first, second))
    b = sum(x and not y for x, y in zip(first, second))
    c = sum(y and not x for x, y in zip(first, second))
    d = len(first) - a - b - c
    n = len(first)
    if n == 0:
        return Agreement(both=0, first_only=0, second_only=0, neither=0, observed=None, kappa=None)
    observed = (a + d) / n
    chance = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
    kappa = None if chance == 1 else (observed - chance) / (1 - chance)
    return Agreement(both=a, first_only=b, second_only=c, neither=d, observed=observed, kappa=kappa)
