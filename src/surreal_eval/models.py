"""Pydantic models at the package's edges: what goes into the database and what comes out as JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer, model_validator

__all__ = [
    "Article",
    "Passage",
    "Question",
    "Bounds",
    "MetricRow",
    "QuestionResult",
    "SweepRow",
    "RunReport",
    "RunSummary",
    "RankedHit",
    "RetrieverView",
    "Diagnosis",
]


class Article(BaseModel):
    """One corpus document."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = ""
    content: str = ""
    embedding: list[float] | None = None  # None: from a sidecar file or an embedder, checked at ingest
    metadata: dict[str, Any] | None = None
    doc: str | None = None  # for a chunk: the article it was cut from
    position: int | None = None  # for a chunk: its index within that article


class Passage(BaseModel):
    """A label that survives re-chunking: a labelled document and a distinctive phrase of it."""

    model_config = ConfigDict(extra="forbid")

    doc: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    grade: float = Field(default=1, gt=0)


class Question(BaseModel):
    """One golden-set question with the articles that answer it and a grade per label (default 1).

    `passages` optionally pins labels to phrases: on a chunk table each resolves to the chunks of
    its document that contain the phrase. Every passage's document must also be in `relevant`.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    text: str
    embedding: list[float] | None = None  # None: from a sidecar file or an embedder, checked at ingest
    relevant: list[str]
    grades: list[float] | None = None
    category: str | None = None
    language: str | None = None
    source: Literal["real", "synthetic"] | None = None
    split: Literal["dev", "test"] | None = None
    passages: list[Passage] | None = None


class Bounds(BaseModel):
    """A 95% bootstrap confidence interval of a mean over questions."""

    low: float
    high: float


class Scored(BaseModel):
    """A row holding one score per metric in `scores` ({name: value}, in report order).

    It reads from a database row's `metrics` object (or from flat `name: value` fields), serialises
    flat (`recall`, `hit_rate`, ... in the place of `scores`, as the JSON output always had it), and
    `row.recall` reads `row.scores["recall"]`. Each subclass declares `scores` where the flat
    fields go (a field declared here would serialise first).
    """

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "scores" in data:
            return data
        data = dict(data)
        if isinstance(data.get("metrics"), dict):
            data["scores"] = data.pop("metrics")
        else:
            flat = [key for key in data if key not in cls.model_fields]
            data["scores"] = {key: data.pop(key) for key in flat}
        return data

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        dumped = handler(self)
        flat: dict[str, Any] = {}
        for key, value in dumped.items():
            if key == "scores":
                flat.update(value)
            else:
                flat[key] = value
        return flat

    def score(self, metric: str) -> float:
        """This row's score on `metric`; a KeyError when the run did not measure it."""
        return self.__dict__["scores"][metric]

    def __getattr__(self, name: str) -> Any:
        scores = self.__dict__.get("scores") if not name.startswith("_") else None
        if scores is not None and name in scores:
            return scores[name]
        return super().__getattr__(name)


class MetricRow(Scored):
    """The mean of every metric for one retriever at one cutoff, with each mean's interval and
    resolution (the smallest change one question can move it) when the report computed them."""

    retriever: str
    k: int
    questions: int
    scores: dict[str, float]
    floor: float | None = None
    intervals: dict[str, Bounds] | None = None
    resolution: dict[str, float] | None = None


class SweepRow(MetricRow):
    """MetricRow of the floored hybrid at one floor of the sweep."""


class QuestionResult(Scored):
    """Every metric of one question for one retriever at one cutoff, and the ranking scored."""

    question: str
    retriever: str
    k: int
    scores: dict[str, float]
    ranked: list[str]
    relevant: list[str]
    floor: float | None = None


class RunReport(BaseModel):
    """One evaluation run: its means per retriever and k, and optionally every question's result."""

    run: str
    questions: int
    label: str | None = None
    created_at: datetime | None = None
    ks: list[int]
    retrievers: list[str]
    params: dict[str, Any]
    results: list[MetricRow]
    sweep: list[SweepRow] = []
    golden: dict[str, Any] | None = None  # {questions, fingerprint}
    corpus: dict[str, Any] | None = None  # {table, documents, fingerprint}
    harness: str | None = None  # checksum of the SurrealQL that produced the run
    git_commit: str | None = None
    trigger: str | None = None
    tuning: dict[str, Any] | None = None  # set by `tune`: param, sweep, best, forced
    warning: str | None = None
    per_question: list[QuestionResult] | None = None

    @property
    def metrics(self) -> list[str]:
        """The metrics this run scored, in report order."""
        rows = self.results or self.sweep
        return list(rows[0].scores) if rows else []


class RunSummary(BaseModel):
    """A run as history lists it."""

    run: str
    created_at: datetime
    label: str | None
    questions: int
    ks: list[int]
    retrievers: list[str]
    results: list[MetricRow]
    params: dict[str, Any] = {}
    golden: dict[str, Any] | None = None
    corpus: dict[str, Any] | None = None
    git_commit: str | None = None
    trigger: str | None = None
    tuning: dict[str, Any] | None = None

    @property
    def metrics(self) -> list[str]:
        """The metrics this run scored, in report order."""
        return list(self.results[0].scores) if self.results else []

    def mean(self, retriever: str, metric: str, k: int) -> float | None:
        """The mean of `metric`@`k` for `retriever` in this run, None if the run did not measure it."""
        for row in self.results:
            if row.retriever == retriever and row.k == k:
                return row.scores.get(metric)
        return None


class RankedHit(BaseModel):
    """One record a retriever returned: its rank, score, title and whether it is labelled."""

    rank: int
    id: str
    title: str
    score: float
    relevant: bool


class RetrieverView(BaseModel):
    retriever: str
    hits: list[RankedHit]


class Diagnosis(BaseModel):
    """One question beside what each retriever returned for it (the lesson's diagnosis step)."""

    question: str
    text: str
    k: int
    labels: list[dict[str, Any]]
    retrievers: list[RetrieverView]
