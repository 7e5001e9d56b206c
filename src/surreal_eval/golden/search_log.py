"""Search logs: one impression a line, read and checked, its queries normalised, grouped and sampled.

An impression is what one user saw for one query and what they clicked, as JSONL

    {"query": "how do refunds work", "shown": ["refunds", "cancel", "faq"], "clicked": ["refunds"],
     "dwell": {"refunds": 42.0}, "session": "s1", "user": "u7", "time": "2025-03-01T10:00:00Z"}

or as CSV with the same columns (`shown` and `clicked` a JSON array or ids separated by `|`, `dwell` a
JSON object). `shown` is best first; `clicked` ids must be among it; `dwell` (seconds, not below 0)
may only name clicked ids; `session`, `user`, `time` (ISO 8601) are optional. Any other field is
refused. Every bad line is refused with one line `FILE:LINE: what is wrong`.

Queries are grouped by `normalise`: Unicode NFKC, casefolded, runs of whitespace made one space, and
trailing punctuation (Unicode category P*: `?`, `.`, `!`, ...) and whitespace removed. A question set
is the `top` most frequent normalised queries plus `sample` drawn from the rest with probability
proportional to their frequency, without replacement (`sample_queries`, seeded, deterministic).
"""

from __future__ import annotations

import json
import random
import unicodedata
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ..model_base import Model
from ..errors import InputError
from ..load.rows import JSONL_SUFFIXES, _csv_rows, json_rows, validate_row

__all__ = ["Impression", "LogFormat", "QueryGroup", "group_queries", "normalise", "read_log", "sample_queries"]

LogFormat = Literal["auto", "jsonl", "csv"]


class Impression(Model):
    """One line of a search log: a query, the ids shown (best first), the ids clicked."""

    model_config = ConfigDict(extra="forbid")

    query: str
    shown: list[str] = Field(min_length=1)
    clicked: list[str] = []
    dwell: dict[str, float] | None = None
    session: str | None = None
    user: str | None = None
    time: str | None = None
    #: (file, line) it was read from, for messages; never part of the log
    _origin: tuple[str, int] | None = PrivateAttr(default=None)

    @property
    def line(self) -> int:
        return self._origin[1] if self._origin else 0

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not normalise(value):
            raise ValueError("the query is empty (once normalised)")
        return value

    @field_validator("shown", "clicked")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("an id is empty")
        if len(set(value)) != len(value):
            raise ValueError(f"id {next(i for i in value if value.count(i) > 1)!r} appears twice")
        return value

    @field_validator("dwell", mode="before")
    @classmethod
    def _dwell_numbers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for key, seconds in value.items():
                if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                    raise ValueError(f"dwell of {key!r} must be a number of seconds, got {seconds!r}")
                if not seconds >= 0 or seconds == float("inf"):
                    raise ValueError(f"dwell of {key!r} must be a finite number of seconds, not below 0, got {seconds!r}")
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"not an ISO 8601 time: {value!r}") from None
        return value

    @model_validator(mode="after")
    def _clicks_were_shown(self) -> Impression:
        unseen = [i for i in self.clicked if i not in self.shown]
        if unseen:
            raise ValueError(f"clicked id {unseen[0]!r} is not among the ids shown")
        stray = [i for i in (self.dwell or {}) if i not in self.clicked]
        if stray:
            raise ValueError(f"dwell given for id {stray[0]!r}, which was not clicked")
        return self

    def who(self) -> str:
        """Who made this impression: the user, else the session, else the impression itself (its line)."""
        return f"user:{self.user}" if self.user else f"session:{self.session}" if self.session else f"line:{self.line}"


def normalise(query: str) -> str:
    """The form queries are grouped by: NFKC, casefolded, whitespace collapsed, trailing punctuation removed."""
    text = " ".join(unicodedata.normalize("NFKC", query).casefold().split())
    while text and (unicodedata.category(text[-1]).startswith("P") or text[-1].isspace()):
        text = text[:-1]
    return text


def _ids_cell(cell: str) -> Any:
    cell = cell.strip()
    if cell.startswith("["):
        return json.loads(cell)
    return [part.strip() for part in cell.split("|")] if cell else []


def _csv_impression(raw: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {key: value for key, value in raw.items() if value.strip() != ""}
    for key in ("shown", "clicked"):
        if key in row:
            row[key] = _ids_cell(row[key])
    if "dwell" in row:
        row["dwell"] = json.loads(row["dwell"])
    return row


def _format_of(path: Path, given: str) -> str:
    if given not in ("auto", "jsonl", "csv"):
        raise InputError(f"format {given!r} is not one of auto, jsonl, csv", source=str(path))
    if given != "auto":
        return given
    if path.suffix.lower() in JSONL_SUFFIXES:
        return "jsonl"
    if path.suffix.lower() == ".csv":
        return "csv"
    raise InputError("cannot tell the format from the name: pass --format jsonl or csv", source=str(path))


def read_log(path: Path | str, *, format: LogFormat = "auto") -> Iterator[Impression]:
    """Every impression of a JSONL or CSV search log (auto: by suffix); a bad line refused with file:line."""
    path = Path(path)
    kind = _format_of(path, format)
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "a folder, not a file: name the log file",
                         source=str(path))
    rows = json_rows(path) if kind == "jsonl" else _csv_rows(path)
    read = 0
    for line, raw in rows:
        if kind == "csv":
            try:
                raw = _csv_impression(raw)
            except json.JSONDecodeError as error:
                raise InputError(f"a JSON cell is not valid JSON: {error.msg}", source=str(path), line=line) from None
        impression = validate_row(Impression, raw, raw, path, line)
        read += 1
        yield impression
    if not read:
        raise InputError("the log holds no impression (the file is empty)", source=str(path))


class QueryGroup(Model):
    """The impressions of one normalised query: how many, and the text most often typed for it."""

    normalised: str
    frequency: int
    text: str


def group_queries(impressions: list[Impression]) -> list[QueryGroup]:
    """One group per normalised query, most frequent first (ties by normalised text); its text is its
    most frequent raw form (stripped; ties: the form seen first)."""
    forms: dict[str, Counter[str]] = {}
    for impression in impressions:
        forms.setdefault(normalise(impression.query), Counter())[impression.query.strip()] += 1
    groups = [QueryGroup(normalised=key, frequency=sum(counts.values()), text=counts.most_common(1)[0][0])
              for key, counts in forms.items()]
    return sorted(groups, key=lambda g: (-g.frequency, g.normalised))


def sample_queries(groups: list[QueryGroup], *, top: int, sample: int, seed: int = 0) -> tuple[list[QueryGroup], list[QueryGroup]]:
    """(head, tail): the `top` most frequent groups, and `sample` of the rest drawn with probability
    proportional to frequency, without replacement (Efraimidis-Spirakis keys u^(1/frequency) from a
    random.Random(seed): the same log and seed give the same sample)."""
    if top < 0 or sample < 0:
        raise InputError(f"--top and --sample must not be below 0, got {top} and {sample}")
    ordered = sorted(groups, key=lambda g: (-g.frequency, g.normalised))
    head, rest = ordered[:top], sorted(ordered[top:], key=lambda g: g.normalised)
    draw = random.Random(seed)
    keyed = sorted(rest, key=lambda g: (-(draw.random() ** (1.0 / g.frequency)), g.normalised))
    return head, sorted(keyed[:sample], key=lambda g: (-g.frequency, g.normalised))
