"""Slices: one run's per-question scores grouped by a question field (category, language, source, split).

A slice is every question of the run with one value of one field (None: the field is not set, or
the question is no longer in the golden set), scored by one retriever: its question count, mean
and 95% percentile bootstrap interval (`stats.confidence_interval`). The fields are read from the
`question` table now, so a category edited since the run regroups it.
"""

from __future__ import annotations

from collections.abc import Iterable

from surrealdb import RecordID

from ..model_base import Model
from ..store.connection import Database
from ..errors import ConfigError
from ..runs.sources import scored_rows
from ..stats import confidence_interval

__all__ = ["SLICE_FIELDS", "Slice", "scored_rows", "slices"]

#: The question fields a run can be sliced by.
SLICE_FIELDS = ("category", "language", "source", "split")

class Slice(Model):
    """The questions of a run whose field `by` is `value`, scored by `retriever` on `metric`."""

    by: str
    value: str | None
    retriever: str
    metric: str
    questions: int
    mean: float
    low: float
    high: float


def _fields(by: str | Iterable[str]) -> list[str]:
    names = [n.strip() for text in ([by] if isinstance(by, str) else by) for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SLICE_FIELDS]
    if unknown or not names:
        raise ConfigError(
            f"cannot slice by {', '.join(unknown) or 'nothing'}: use one or more of {', '.join(SLICE_FIELDS)}"
        )
    return list(dict.fromkeys(names))


def slices(
    db: Database,
    run: str | RecordID = "latest",
    metric: str = "recall@5",
    by: str | Iterable[str] = ("category", "language", "source"),
) -> list[Slice]:
    """Every slice of `run` (`seval_run:x`, `x`, `latest`, `previous`) on `metric` (NAME@K), per field
    of `by` and retriever: ordered by field as given, then value (unset last), then retriever in
    the run's order."""
    fields = _fields(by)
    spec, rows, order = scored_rows(db, run, metric)
    found: list[Slice] = []
    for field in fields:
        groups: dict[tuple[str | None, str], list[float]] = {}
        for row in rows:
            value = row.get(field)
            groups.setdefault((None if value is None else str(value), row["retriever"]), []).append(float(row["metrics"][spec.name]))
        keys = sorted(groups, key=lambda key: (key[0] is None, key[0] or "", order({"retriever": key[1], "k": 0})))
        for value, retriever in keys:
            interval = confidence_interval(groups[(value, retriever)])
            found.append(
                Slice(
                    by=field,
                    value=value,
                    retriever=retriever,
                    metric=str(spec),
                    questions=interval.n,
                    mean=interval.mean,
                    low=interval.low,
                    high=interval.high,
                )
            )
    return found
