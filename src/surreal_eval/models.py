"""Pydantic models at the package's edges: what goes into the database and what comes out as JSON."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal, TypedDict

from pydantic import ConfigDict, Field, PrivateAttr, SerializationInfo, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from .grammar import RecordKey
from .model_base import Model

__all__ = ["MAX_NESTING", "Scoring", "Article", "Passage", "Question", "Bounds", "MetricRow", "QuestionResult", "SweepRow", "AnnRow",
           "EngineCheck", "SourceMean", "RunReport", "RunSummary", "data_problem", "vector_problem"]

#: How deep objects and arrays may nest in a row's values (metadata); deeper is refused at read.
MAX_NESTING = 32
_INT64 = (-(2**63), 2**63 - 1)


def data_problem(value: Any, where: str = "", depth: int = 0) -> str | None:
    """What makes `value` unstorable, or None: nesting deeper than MAX_NESTING, an integer outside
    SurrealDB's signed 64-bit range, a non-finite number, or text with a lone UTF-16 surrogate."""
    at = f"{where}: " if where else ""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else f"{at}integer {value} is outside the signed 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{at}{value!r} is not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{at}text holds a lone UTF-16 surrogate (not valid Unicode)"
        return None
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_NESTING:
            return f"{at}nested more than {MAX_NESTING} levels deep"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            path = f"{where}.{key}" if where else str(key)
            problem = data_problem(key, path, depth + 1) if isinstance(key, str) else None
            problem = problem or data_problem(item, path, depth + 1)
            if problem:
                return problem
    return None


def vector_problem(vector: list[float]) -> str | None:
    """What makes `vector` unusable as an embedding, or None: a non-finite value, all zeros (no
    direction: every distance to it is NaN), or values so large its squared norm overflows."""
    if not all(math.isfinite(x) for x in vector):
        return "embedding has a value that is not a finite number"
    squares = math.fsum(x * x for x in vector)
    if not math.isfinite(squares):
        return "embedding values are too large: its length overflows the distance"
    if squares == 0:
        return "embedding is all zeros (or too small to have a length): no distance to it is defined"
    return None


def _numbers(value: Any, what: str) -> Any:
    """A list whose every item is a number: strings and booleans are refused, never coerced."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                raise ValueError(f"{what} must hold numbers only, got {item!r}")
    return value


class _Row(Model):
    """A row read from a file: every value storable (data_problem), numbers strictly numbers."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, raw: Any) -> Any:
        problem = data_problem(raw) if isinstance(raw, dict) else None
        if problem:
            raise ValueError(problem)
        return raw

    @field_validator("embedding", mode="before", check_fields=False)
    @classmethod
    def _embedding_numbers(cls, value: Any) -> Any:
        return _numbers(value, "embedding")

    @field_validator("embedding", check_fields=False)
    @classmethod
    def _embedding_usable(cls, value: list[float] | None) -> list[float] | None:
        problem = vector_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value


class Article(_Row):
    """One corpus document."""

    id: RecordKey
    title: str = ""
    content: str = ""
    embedding: list[float] | None = None  # None: from a sidecar file or an embedder, checked at ingest
    metadata: dict[str, Any] | None = None
    doc: str | None = None  # for a chunk: the article it was cut from
    position: int | None = Field(default=None, ge=0, le=2**63 - 1)  # for a chunk: its index within that article
    #: (file, line) the row was read from, for messages; never stored
    _origin: tuple[str, int] | None = PrivateAttr(default=None)


class Passage(Model):
    """A label that survives re-chunking: a labelled document and a distinctive phrase of it."""

    model_config = ConfigDict(extra="forbid")

    doc: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    grade: float = Field(default=1, gt=0)


class LabelProvenance(Model):
    """Where one judgment of a question came from (seval_label): `load golden` keeps it instead of source
    'file'. `origin` 'harness' marks a label added on the harness's side to an attached set (to merge into it)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["human", "click", "model", "file", "table", "production-failure"] = "file"
    by: str | None = None
    note: str | None = None
    added_at: datetime | None = None
    origin: Literal["set", "harness"] | None = None


class Question(_Row):
    """One golden-set question with the articles that answer it and a grade per label (default 1).

    `passages` optionally pins labels to phrases: on a chunk table each resolves to the chunks of
    its document that contain the phrase. Every passage's document must also be in `relevant`.
    """

    id: RecordKey
    text: str
    embedding: list[float] | None = None  # None: from a sidecar file or an embedder, checked at ingest
    relevant: list[str] = []  # none: a question not judged yet (load golden --allow-unlabelled)
    grades: list[float] | None = None
    category: str | None = None
    language: str | None = None
    #: where it comes from: a real user, a resolved support ticket, a search log with a click, a domain expert,
    #: a generator, or a question that failed in production
    source: Literal["real", "ticket", "click", "expert", "synthetic", "production-failure"] | None = None
    split: Literal["dev", "test"] | None = None
    #: how often it was asked (a question sampled from a search log)
    frequency: int | None = Field(default=None, gt=0)
    passages: list[Passage] | None = None
    #: documents judged non-relevant (a grade of 0 or less): not labels, but judged (judged@k)
    nonrelevant: list[str] | None = None
    #: per judged document (a label or a non-relevant one), where the judgment came from (`golden export` writes it)
    provenance: dict[str, LabelProvenance] | None = None
    #: (file, line) the row was read from, for messages; never stored
    _origin: tuple[str, int] | None = PrivateAttr(default=None)

    @field_validator("grades", mode="before")
    @classmethod
    def _grade_numbers(cls, value: Any) -> Any:
        return _numbers(value, "grades")

    @model_validator(mode="after")
    def _provenance_of_judgments(self) -> "Question":
        unknown = sorted(set(self.provenance or {}) - set(self.relevant) - set(self.nonrelevant or []))
        if unknown:
            raise ValueError(f"provenance of {unknown[0]}, which the question does not judge (not in relevant or nonrelevant)")
        return self


class Bounds(Model):
    """A 95% bootstrap confidence interval of a mean over questions."""

    low: float
    high: float


class Scored(Model):
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
    #: on a chunk table (k counts chunks): the mean number of distinct documents the top k chunks belong to
    documents: float | None = None


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
    #: False for a question with no judgment at all: ranked (the overlap of two rankings), left out of the means
    labelled: bool = True


class AnnRow(Model):
    """The ANN check at one cutoff: the mean over questions of the share of the exact top k (by a
    scan of every record) that the HNSW index returned in its top k, with its 95% interval."""

    k: int
    ann_recall: float
    questions: int
    interval: Bounds | None = None


class EngineCheck(Model):
    """One engine sanity check made before the run was recorded (surql/checks.surql)."""

    check: str
    status: Literal["passed", "skipped"]
    note: str


class SourceMean(Model):
    """One retriever's mean of `metric` on one source's `questions`, its 95% interval, its gap to real (source - real; None: `gap_note` says why)."""

    retriever: str
    metric: str
    source: str
    questions: int
    mean: float
    low: float
    high: float
    gap: float | None = None
    gap_note: str | None = None


class _AfterChanges(Model):
    """What a run records of how it was made: its candidate lists, and the corpus changes and ingests it followed."""

    #: {lists, reused, merged, certified, fetched, called, rescored, copied}: how the run got its candidate lists (reused as
    #: kept, brought up to date with the corpus's changes, shown unchanged at the top by them and left unscored,
    #: fetched from an index, called) and how many questions it scored
    retrieval: dict[str, Any] | None = None
    #: the corpus changes the run was made after and the run whose results it reused for questions ranked alike ({base, added, text_changed,
    #: embedding_changed, removed, ids, since}: surql/incremental.surql); None: a run on an unchanged corpus, or one that retrieved every list anew
    since: dict[str, Any] | None = None
    #: the ingests the run was made after (`surreal-eval watch`)
    ingests: list[str] = []
    #: what a verifying after-ingest run found of the kept lists ({lists, agreed, reused, merged, disagreed, index_own})
    verification: dict[str, Any] | None = None

    @property
    def incremental(self) -> bool:
        """Whether the run was made after corpus changes from lists kept before them (surql/incremental.surql)."""
        return self.since is not None


class _Means:
    """What RunReport and RunSummary both answer from their means (`results`)."""

    def mean(self, retriever: str, metric: str, k: int) -> float | None:
        """The mean of `metric`@`k` for `retriever` in this run, None if the run did not measure it."""
        for row in self.results:  # type: ignore[attr-defined]
            if row.retriever == retriever and row.k == k:
                return row.scores.get(metric)
        return None


class RunReport(_AfterChanges, _Means):
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
    golden: dict[str, Any] | None = None  # {table, questions, fingerprint, dangling: labels whose record is gone}
    corpus: dict[str, Any] | None = None  # {table, documents, fingerprint}
    harness: str | None = None  # checksum of the SurrealQL that produced the run
    git_commit: str | None = None
    trigger: str | None = None
    tuning: dict[str, Any] | None = None  # set by `tune`: param, sweep, best, forced
    #: the engine checks made before the run was recorded (empty for a run recorded before them)
    checks: list[EngineCheck] = []
    #: ann_recall@k per k when the run was made with the ANN check (params.ann_check), else empty
    ann: list[AnnRow] = []
    warning: str | None = None
    per_question: list[QuestionResult] | None = None
    #: the tags naming this run (`surreal-eval tag`)
    tags: list[str] = []
    #: False for `evaluate --no-record`: the run was scored and discarded, nothing of it is in history
    recorded: bool = True
    #: the means per question source with the gaps to real (`evaluate`, runs/sources.py); []: `by_source_note` says why; None: not worked out
    by_source: list[SourceMean] | None = None
    by_source_note: str | None = None

    @property
    def metrics(self) -> list[str]:
        """The metrics this run scored, in report order."""
        rows = self.results or self.sweep
        return list(rows[0].scores) if rows else []


class RunSummary(_AfterChanges, _Means):
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
    #: the tags naming this run (`surreal-eval tag`)
    tags: list[str] = []

    @property
    def metrics(self) -> list[str]:
        """The metrics this run scored, in report order."""
        return list(self.results[0].scores) if self.results else []


class Scoring(TypedDict, total=False):
    """What a run scores against and how (the run parameters of the same names): the golden set (`golden`; default
    the one holding questions), its labels whose record is gone (`dangling_labels`: stop or miss), the judgments read
    (`judgments`: human or human+model), the grade from which binary metrics count a label (`relevance_level`,
    trec_eval -l) and BEIR's rule dropping a retrieved record whose key is the question's own (`ignore_identical_ids`)."""

    golden: str | None
    dangling_labels: str | None
    judgments: str | None
    relevance_level: int | None
    ignore_identical_ids: bool | None
