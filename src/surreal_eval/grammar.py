"""The metric list and the one parser for metric names such as `recall@5`, cutoff lists `1,3,5` and retriever names."""

from __future__ import annotations

from typing import NamedTuple

from .errors import ConfigError

__all__ = ["METRICS", "MetricSpec", "parse_metric", "parse_ks", "parse_retrievers"]

#: Every metric the database computes: one SurrealQL function fn::metric_<name> each
#: (a test checks this tuple against the functions defined in the database).
METRICS = ("recall", "hit_rate", "precision", "mrr", "ndcg", "map", "r_precision")


class MetricSpec(NamedTuple):
    """A metric at a cutoff: `recall@5` is MetricSpec('recall', 5)."""

    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"


def _positive_int(text: str, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"{what} must be a whole number, got {text.strip()!r}") from None
    if value < 1:
        raise ConfigError(f"{what} must be at least 1, got {value}")
    return value


def parse_metric(text: str) -> MetricSpec:
    """`recall@5` -> MetricSpec('recall', 5); the name must be one of METRICS."""
    name, sep, k = text.strip().partition("@")
    if name not in METRICS or not sep:
        raise ConfigError(f"unknown metric {text!r}: use NAME@K with NAME one of {', '.join(METRICS)}")
    return MetricSpec(name, _positive_int(k, f"the cutoff in {text!r}"))


def parse_ks(text: str) -> list[int]:
    """`1,3,5` -> [1, 3, 5]: distinct positive cutoffs, sorted."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ConfigError("no cutoff given: pass --k as a comma-separated list such as 1,3,5")
    return sorted({_positive_int(p, "every k") for p in parts})


def parse_retrievers(names: list[str] | None, *, known: list[str], defaults: list[str]) -> list[str]:
    """The retrievers asked for (`defaults` when none), each one of `known` (the registry, in report order), in that order."""
    if not names:
        return list(defaults)
    wanted = {n.strip() for name in names for n in name.split(",") if n.strip()}
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ConfigError(f"unknown retriever {', '.join(unknown)}: use {', '.join(known)}")
    return [r for r in known if r in wanted]


def parse_weights(text: str) -> list[float]:
    """`0.3,0.7` -> [0.3, 0.7]: the linear fusion weights of BM25 and vector, two non-negative numbers."""
    try:
        weights = [float(p) for p in text.split(",")]
    except ValueError:
        raise ConfigError(f"--weights must be two numbers such as 0.3,0.7, got {text!r}") from None
    if len(weights) != 2 or any(w < 0 for w in weights) or sum(weights) == 0:
        raise ConfigError(f"--weights must be two non-negative numbers, not both 0 (BM25,vector), got {text!r}")
    return weights
