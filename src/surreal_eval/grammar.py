"""The metric list and the one parser for metric names such as `recall@5`, cutoff lists `1,3,5` and retriever names."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator, Field

from .errors import ConfigError

__all__ = ["DEFAULT_KS", "LIMITS", "METRICS", "QUOTED_KEY", "MetricSpec", "RecordKey", "check_number", "check_params", "file_metrics",
           "metric_suggestion",
           "parse_ks", "parse_metric", "parse_retrievers", "quoted_key", "surql_dir"]

_METRIC_FUNCTION = re.compile(r"^DEFINE FUNCTION (?:OVERWRITE )?fn::seval::metric_([A-Za-z0-9_]+)\(", re.MULTILINE)


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
    """The metric names of metrics.surql (or of `text`): every function fn::seval::metric_<name>, in file order."""
    if text is None:
        text = (surql_dir() / "metrics.surql").read_text(encoding="utf-8")
    return tuple(dict.fromkeys(_METRIC_FUNCTION.findall(text)))


#: Every metric the harness defines: one SurrealQL function fn::metric_<name> each in
#: surql/metrics.surql, in file order (a database may hold more: fn::scored_metrics() lists them).
METRICS = file_metrics()
#: The cutoffs an evaluation measures when none are given (`surreal-eval evaluate --k`'s default too).
DEFAULT_KS = (1, 3, 5, 10)


class MetricSpec(NamedTuple):
    """A metric at a cutoff: `recall@5` is MetricSpec('recall', 5)."""

    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"


#: The range of every numeric option and parameter, checked where it is parsed (`check_number`):
#: name: (kind, lowest, highest, what it is). Integers stay far inside SurrealDB's signed 64-bit range.
LIMITS: dict[str, tuple[type, float, float, str]] = {
    "k": (int, 1, 10_000, "the cutoff k"),               # no retriever returns more than knn_depth <= 10,000
    "depth": (int, 1, 10_000, "the candidate depth"),
    "rrf_k": (int, 1, 1_000_000, "the RRF constant"),
    "floor": (float, 0, 1_000_000, "the BM25 floor"),     # BM25 scores are >= 0
    "floors": (float, 0, 1_000_000, "every floor of the sweep"),
    "weights": (float, 0, 1_000_000, "every fusion weight"),
    "dimension": (int, 1, 16_384, "the embedding dimension"),
    "knn_depth": (int, 1, 10_000, "the KNN depth"),
    "knn_ef": (int, 1, 10_000, "the HNSW search width"),
    "limit": (int, 1, 1_000_000, "the number of runs"),
    "dev": (float, 0, 1, "the dev share"),
    "seed": (int, 0, 2**31 - 1, "the split seed"),
    "relevance_level": (int, 1, 1_000_000, "the relevance level"),  # the lowest grade binary metrics count
    "verify_every": (int, 1, 1_000_000, "the after-ingest runs between two verifications"),
    "every": (float, 0.05, 86_400, "the seconds between two looks for pending ingests"),
}


def check_number(name: str, value: Any, *, option: str | None = None) -> Any:
    """`value` if it is a number of the kind and range LIMITS gives `name`, else a ConfigError naming `option`.

    Booleans and strings are refused, never coerced; NaN and infinities are refused.
    """
    kind, low, high, label = LIMITS[name]
    what, where = (option, "") if option else (label, f" (--{name.replace('_', '-')})")
    wanted = "a whole number" if kind is int else "a finite number"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (kind is int and not isinstance(value, int)) or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigError(f"{what} must be {wanted} from {low:,} to {high:,}{where}, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{what} must be at least {low:,} and at most {high:,}{where}, got {value!r}")
    return float(value) if kind is float else value


def check_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """Run parameters with every numeric one (depth, rrf_k, floor, floors, weights, relevance_level) range-checked
    and ignore_identical_ids a boolean."""
    for name, value in (params or {}).items():
        if name == "ignore_identical_ids" and value is not None and not isinstance(value, bool):
            raise ConfigError(f"ignore_identical_ids must be true or false (--ignore-identical-ids), got {value!r}")
        if value is None or name not in LIMITS:
            continue
        if name in ("floors", "weights"):
            if not isinstance(value, (list, tuple)) or not value:
                raise ConfigError(f"--{name} must be a list of numbers, got {value!r}")
            for item in value:
                check_number(name, item)
        else:
            check_number(name, value)
    return dict(params or {})


def parse_number(name: str, text: str, *, option: str | None = None) -> Any:
    """A number of the kind LIMITS gives `name`, parsed from `text` and range-checked."""
    kind, label = LIMITS[name][0], LIMITS[name][3]
    what = option or f"{label} (--{name.replace('_', '-')})"
    try:
        value = kind(text.strip())
    except ValueError:
        raise ConfigError(f"{what} must be {'a whole number' if kind is int else 'a number'}, got {text.strip()!r}") from None
    return check_number(name, value, option=option)


def _positive_int(text: str, what: str) -> int:
    return parse_number("k", text, option=what)


_NAME_THEN_K = re.compile(r"^([A-Za-z_]+?)_?(\d+)$")


def metric_suggestion(text: str, known: Sequence[str] | None = None) -> str | None:
    """The NAME@K probably meant by `text`, a metric not written NAME@K with NAME one of `known` (default METRICS):
    `recall5` -> recall@5, `recal@5` -> recall@5, `ndcg` -> ndcg@10; None when no known name is close."""
    known = METRICS if known is None else known
    name, sep, k = text.strip().partition("@")
    glued = _NAME_THEN_K.match(name) if not sep else None
    if glued and glued[1] in known:  # recall5: the @ left out
        return f"{glued[1]}@{glued[2]}"
    cutoff = k.strip() if sep and k.strip().isdigit() else "10" if name.startswith("ndcg") else "5"
    if name in known:
        return f"{name}@{cutoff}"
    close = difflib.get_close_matches(glued[1] if glued else name, list(known), n=1, cutoff=0.6)
    if close:
        return f"{close[0]}@{glued[2] if glued else cutoff}"
    return None


def parse_metric(text: str, known: Sequence[str] | None = None) -> MetricSpec:
    """`recall@5` -> MetricSpec('recall', 5); the name must be one of `known` (default METRICS)."""
    known = METRICS if known is None else known
    name, sep, k = text.strip().partition("@")
    if name not in known or not sep:
        meant = metric_suggestion(text, known)
        hint = f" (did you mean {meant}?)" if meant else ""
        raise ConfigError(f"unknown metric {text!r}{hint}: use NAME@K with NAME one of {', '.join(known)}")
    return MetricSpec(name, _positive_int(k, f"the cutoff in {text!r}"))


def parse_ks(text: str) -> list[int]:
    """`1,3,5` -> [1, 3, 5]: distinct positive cutoffs, sorted; an empty place (`1,,3`, `1,3,`) is refused."""
    if not text.strip():
        raise ConfigError("no cutoff given: pass --k as a comma-separated list such as 1,3,5")
    parts = text.split(",")
    if any(not p.strip() for p in parts):
        raise ConfigError(f"--k {text!r} has an empty cutoff (two commas in a row, or one at an end): give a "
                          "comma-separated list of cutoffs such as 1,3,5")
    ks = [_positive_int(p, "every k") for p in parts]
    repeated = sorted({k for k in ks if ks.count(k) > 1})
    if repeated:
        raise ConfigError(f"--k lists {', '.join(map(str, repeated))} twice: give each cutoff once, e.g. --k 1,3,5")
    return sorted(ks)


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
    for weight in weights:
        check_number("weights", weight, option="--weights")
    if len(weights) != 2 or sum(weights) == 0:
        raise ConfigError(f"--weights must be two non-negative numbers, not both 0 (BM25,vector), got {text!r}")
    return weights


#: A record key in angle brackets or backticks, as SurrealDB writes a key that is not a plain word (a backslash
#: escapes in backticks): `store.record_ids` reads `⟨x⟩` or `` `x` `` as the key x.
QUOTED_KEY = re.compile(r"⟨(?P<angle>[^⟩]*)⟩|`(?P<tick>(?:[^`\\]|\\.)*)`", re.S)


def quoted_key(text: str) -> str | None:
    """The key inside `text` when it is written whole in SurrealDB's quoting (`⟨x⟩`, `` `x` ``), else None."""
    quoted = QUOTED_KEY.fullmatch(text)
    if quoted is None:
        return None
    return quoted["angle"] if quoted["angle"] is not None else re.sub(r"\\(.)", r"\1", quoted["tick"])


def _unquoted(key: str) -> str:
    inside = quoted_key(key)
    if inside is not None:
        raise ValueError(f"written whole in SurrealDB's quoting (⟨⟩ or backticks), which is read as the key inside "
                         f"({inside!r}) wherever a record is named, so this one could never be named: write the key "
                         "without the quoting")
    return key


#: The key of a record the harness creates from a file (a document, a question): not empty, and not written
#: whole in SurrealDB's quoting, which every command would read as the key inside.
RecordKey = Annotated[str, Field(min_length=1), AfterValidator(_unquoted)]
