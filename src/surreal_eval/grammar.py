"""The metric list and the one parser for metric names such as `recall@5` and cutoff lists `1,3,5`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from .errors import ConfigError

__all__ = ["METRICS", "RETRIEVERS", "MetricSpec", "parse_metric", "parse_ks", "surql_dir", "file_metrics"]

_METRIC_FUNCTION = re.compile(r"^DEFINE FUNCTION (?:OVERWRITE )?fn::metric_([A-Za-z0-9_]+)\(", re.MULTILINE)


def surql_dir() -> Path:
    """The folder holding the .surql files: inside the installed package, or the source tree's surql/."""
    packaged = resources.files("surreal_eval") / "surql"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[2] / "surql"
    if source.is_dir():
        return source
    raise ConfigError("the harness's surql/ folder is missing from this installation")


def file_metrics(text: str | None = None) -> tuple[str, ...]:
    """The metric names of metrics.surql (or of `text`): every function fn::metric_<name>, in file order."""
    if text is None:
        text = (surql_dir() / "metrics.surql").read_text(encoding="utf-8")
    return tuple(dict.fromkeys(_METRIC_FUNCTION.findall(text)))


#: Every metric the harness defines: one SurrealQL function fn::metric_<name> each in
#: surql/metrics.surql, in file order (a database may hold more: fn::scored_metrics() lists them).
METRICS = file_metrics()
#: Every retriever an evaluation knows, in report order (fn::retriever_names in evaluate.surql).
RETRIEVERS = ("bm25", "vector", "hybrid", "hybrid_floor", "hybrid_linear")
#: The retrievers evaluated when none are named (fn::default_retrievers).
DEFAULT_RETRIEVERS = ("bm25", "vector", "hybrid", "hybrid_floor")


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


def parse_metric(text: str, known: Sequence[str] | None = None) -> MetricSpec:
    """`recall@5` -> MetricSpec('recall', 5); the name must be one of `known` (default METRICS)."""
    known = METRICS if known is None else known
    name, sep, k = text.strip().partition("@")
    if name not in known or not sep:
        raise ConfigError(f"unknown metric {text!r}: use NAME@K with NAME one of {', '.join(known)}")
    return MetricSpec(name, _positive_int(k, f"the cutoff in {text!r}"))


def parse_ks(text: str) -> list[int]:
    """`1,3,5` -> [1, 3, 5]: distinct positive cutoffs, sorted."""
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ConfigError("no cutoff given: pass --k as a comma-separated list such as 1,3,5")
    return sorted({_positive_int(p, "every k") for p in parts})


def parse_retrievers(names: list[str] | None) -> list[str]:
    """The retrievers asked for (the defaults when none), checked against RETRIEVERS, in report order."""
    if not names:
        return list(DEFAULT_RETRIEVERS)
    wanted = {n.strip() for name in names for n in name.split(",") if n.strip()}
    unknown = sorted(wanted - set(RETRIEVERS))
    if unknown:
        raise ConfigError(f"unknown retriever {', '.join(unknown)}: use {', '.join(RETRIEVERS)}")
    return [r for r in RETRIEVERS if r in wanted]


def parse_weights(text: str) -> list[float]:
    """`0.3,0.7` -> [0.3, 0.7]: the linear fusion weights of BM25 and vector, two non-negative numbers."""
    try:
        weights = [float(p) for p in text.split(",")]
    except ValueError:
        raise ConfigError(f"--weights must be two numbers such as 0.3,0.7, got {text!r}") from None
    if len(weights) != 2 or any(w < 0 for w in weights) or sum(weights) == 0:
        raise ConfigError(f"--weights must be two non-negative numbers, not both 0 (BM25,vector), got {text!r}")
    return weights
