"""Many checks at once: Holm's adjustment of p-values, and the sides that cannot be told apart.

    holm(p_values)                 Holm's step-down adjusted p-values, in the order given
    inseparable_groups(sides, ok)  the maximal sets of sides in which no pair is separable

Holm (1979): with the m p-values sorted p(1) <= ... <= p(m), the adjusted p(i) is
max over j <= i of min(1, (m - j + 1) p(j)). Rejecting every check whose adjusted p is below alpha
keeps the chance of even one false alarm among all m checks at most alpha, whatever their
dependence (statsmodels' multipletests(method='holm') computes the same numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["holm", "inseparable_groups"]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values of `p_values`, in the same order (an empty list for none)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def inseparable_groups(sides: Sequence[str], inseparable: Callable[[str, str], bool]) -> list[list[str]]:
    """Every maximal set of two or more `sides` whose members are pairwise `inseparable` (the maximal
    cliques of that relation), each in the order of `sides`, the sets in the order of their first member.

    A side in no set can be told apart from every other side. Sets may overlap: with A~B and B~C
    but A and C separable, the sets are {A, B} and {B, C}, never {A, B, C}."""
    near = {s: {t for t in sides if t != s and inseparable(s, t)} for s in sides}
    found: list[set[str]] = []

    def extend(clique: set[str], candidates: set[str], excluded: set[str]) -> None:  # Bron-Kerbosch
        if not candidates and not excluded:
            if len(clique) > 1:
                found.append(clique)
            return
        for side in [s for s in sides if s in candidates]:
            extend(clique | {side}, candidates & near[side], excluded & near[side])
            candidates = candidates - {side}
            excluded = excluded | {side}

    extend(set(), set(sides), set())
    position = {s: i for i, s in enumerate(sides)}
    groups = [sorted(g, key=position.__getitem__) for g in found]
    return sorted(groups, key=lambda g: [position[s] for s in g])
