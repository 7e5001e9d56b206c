"""Pydantic models at the package's edges: what goes into the database and what comes out as JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

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
    #: (file, line) the row was read from, for messages; never stored
    _origin: tuple[str, int] | None = PrivateAttr(default=None)


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
    #: (file, line) the row was read from, for messages; never stored
    _origin: tuple[str, int] | None = PrivateAttr(default=None)


class Bounds(BaseModel):
    """A 95% bootstrap confidence interval of a mean over questions."""

    low: float
    high: float


class MetricRow(BaseModel):
    """The mean of every metric for one retriever at one cutoff, with each mean's interval and
    resolution (the smallest change one question can move it) when the report computed them."""

    retriever: str
    k: int
    questions: int
    recall: float
    hit_rate: float
    precision: float
    mrr: float
    ndcg: float
    map: float
    r_precision: float
    floor: float | None = None
    intervals: dict[str, Bounds] | None = None
    resolution: dict[str, float] | None = None


class SweepRow(MetricRow):
    """MetricRow of the floored hybrid at one floor of the sweep."""


class QuestionResult(BaseModel):
    """Every metric of one question for one retriever at one cutoff, and the ranking scored."""

    question: str
    retriever: str
    k: int
    recall: float
    hit_rate: float
    precision: float
    mrr: float
    ndcg: float
    map: float
    r_precision: float
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

    def mean(self, retriever: str, metric: str, k: int) -> float | None:
        """The mean of `metric`@`k` for `retriever` in this run, None if the run did not measure it."""
        for row in self.results:
            if row.retriever == retriever and row.k == k:
                return getattr(row, metric)
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
