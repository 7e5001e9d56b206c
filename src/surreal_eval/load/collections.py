"""Test collections: qrels (BEIR and TREC), queries files, BEIR folders, and sidecar embedding files.

Judgments keep their score as the grade; a score of 0 or less means judged non-relevant and is
kept as such (`nonrelevant`, counted by judged@k). A query with no relevant judgment is skipped and counted (`QuestionStream.skipped`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, PrivateAttr

from ..model_base import Model
from ..errors import InputError
from ..models import Article, Question, data_problem, vector_problem
from .rows import QUESTION_SPLITS, iter_documents_jsonl, json_rows, open_text, take_id, validate_row

__all__ = ["Qrels", "QuestionStream", "must_be_folder", "read_qrels", "read_beir", "sidecar_path",
           "with_sidecar_embeddings"]

# ------------------------------------------------------------------------------ qrels and BEIR


@dataclass
class Qrels:
    """Relevance judgments: for each query, its relevant documents and their grades (all above 0),
    and the documents judged non-relevant (a score of 0 or less)."""

    source: str
    judgments: dict[str, dict[str, float]] = field(default_factory=dict)
    #: every query that has a judgment line, relevant or not
    judged: set[str] = field(default_factory=set)
    #: per query, the documents judged non-relevant (a score of 0 or less), in file order
    nonrelevant: dict[str, list[str]] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        """Judgment lines with a score of 0 or less (kept as non-relevant judgments, not as labels)."""
        return sum(len(docs) for docs in self.nonrelevant.values())

    @property
    def labels(self) -> int:
        return sum(len(docs) for docs in self.judgments.values())


def read_qrels(path: Path, *, format: Literal["beir", "trec"] = "trec") -> Qrels:
    """Judgments from a BEIR qrels file (query-id, corpus-id, score; tab-separated with a header) or a
    TREC qrels file (`qid iteration docid grade`, whitespace-separated, no header)."""
    qrels = Qrels(source=str(path))
    columns = 3 if format == "beir" else 4
    layout = "query-id, corpus-id, score" if format == "beir" else "query iteration document grade"
    seen: dict[str, set[str]] = {}
    with open_text(path) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip() or (format == "trec" and line.lstrip().startswith("#")):  # a comment, as trec_eval 10 reads
                    continue  # them; BEIR's qrels have no comments, and a query id there may start with #
                parts = line.rstrip("\r\n").split("\t") if format == "beir" else line.split()
                if format == "beir" and len(parts) != columns:
                    parts = line.split()
                if len(parts) != columns:
                    hint = ("; three columns are BEIR's qrels: load the BEIR folder, or pass --format beir"
                            if format == "trec" and len(parts) == 3 else "")
                    raise InputError(f"expected {columns} columns ({layout}), found {len(parts)}{hint}", source=str(path), line=number)
                qid, doc, score = (parts[0], parts[1], parts[2]) if format == "beir" else (parts[0], parts[2], parts[3])
                qid, doc = qid.strip(), doc.strip()
                try:
                    grade = float(score)
                except ValueError:
                    if format == "beir" and number == 1:
                        continue  # the header
                    raise InputError(f"grade {score.strip()!r} is not a number (query {qid})", source=str(path), line=number) from None
                if not math.isfinite(grade):
                    raise InputError(f"grade {score.strip()!r} is not a finite number (query {qid})", source=str(path), line=number)
                pairs = seen.setdefault(qid, set())
                if doc in pairs:
                    raise InputError(f"query {qid} judges document {doc} twice", source=str(path), line=number)
                pairs.add(doc)
                if grade > 0:
                    qrels.judgments.setdefault(qid, {})[doc] = grade
                else:
                    qrels.nonrelevant.setdefault(qid, []).append(doc)
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
    qrels.judged = set(seen)
    return qrels


class _Query(Model):
    id: str = Field(min_length=1)
    text: str
    embedding: list[float] | None = None
    _origin: tuple[str, int] | None = PrivateAttr(default=None)


def _queries(path: Path) -> Iterator[_Query]:
    """Queries from JSONL ({_id or id, text, embedding?}; other keys ignored) or TSV (`id<TAB>text`)."""
    if path.suffix.lower() in {".tsv", ".txt"}:
        with open_text(path) as handle:
            try:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    qid, tab, text = line.rstrip("\r\n").partition("\t")
                    if not tab or not qid.strip():
                        raise InputError("expected `id<TAB>text`", source=str(path), line=number)
                    query = _Query(id=qid.strip(), text=text)
                    query._origin = (str(path), number)
                    yield query
            except UnicodeDecodeError as error:
                raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
        return
    for line, raw in json_rows(path):
        raw = dict(raw)
        take_id(raw, path, line)
        kept = {k: raw[k] for k in ("id", "text", "embedding") if k in raw and raw[k] is not None}
        yield validate_row(_Query, kept, raw, path, line)


class QuestionStream(Iterable[Question]):
    """Questions joined from a queries file and judgments, streamed; iterate once.

    After iterating: `skipped` counts the queries with no relevant judgment (not loaded), `labels`
    the judgments loaded. Judgments naming a query the queries file lacks are refused.
    """

    def __init__(self, queries: Path, qrels: Qrels, *, split: str | None = None, embeddings: Path | None = None,
                 on_duplicate: str = "refuse") -> None:
        self.queries = queries
        self.on_duplicate = on_duplicate
        self.qrels = qrels
        self.split = split if split in QUESTION_SPLITS else None
        self.embeddings = embeddings
        self.skipped = 0
        self.labels = 0

    def __iter__(self) -> Iterator[Question]:
        rows: Iterable[Any] = _queries(self.queries)
        if self.embeddings is not None:
            rows = with_sidecar_embeddings(rows, self.embeddings, on_duplicate=self.on_duplicate)
        seen: set[str] = set()
        for query in rows:
            seen.add(query.id)
            judged = self.qrels.judgments.get(query.id)
            if not judged:
                self.skipped += 1
                continue
            self.labels += len(judged)
            source, line = query._origin or (str(self.queries), 0)
            yield validate_row(Question, {  # a key the harness could never name again is refused here (RecordKey)
                "id": query.id, "text": query.text, "embedding": query.embedding, "relevant": [_label(doc) for doc in judged],
                "grades": list(judged.values()), "split": self.split,
                "nonrelevant": [_label(doc) for doc in self.qrels.nonrelevant.get(query.id, [])] or None,
            }, {"id": query.id}, Path(source), line)
        unknown = sorted(self.qrels.judged - seen)
        if unknown:
            raise InputError(f"judgments for queries that {self.queries.name} lacks: {_listing(unknown)}", source=self.qrels.source)


def _label(doc: str) -> str:
    """A qrels document id as a label: a label `seval_article:x` means the record x, so an id that itself
    starts with `seval_article:` is written `seval_article:<id>` to name that record and not another."""
    return f"seval_article:{doc}" if doc.startswith("seval_article:") else doc


def _listing(ids: list[str], shown: int = 5) -> str:
    more = f" (and {len(ids) - shown} more)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def must_be_folder(folder: Path) -> None:
    """InputError unless `folder` is a folder: a missing path and a file are told apart."""
    if not folder.exists():
        raise InputError("no such folder", source=str(folder))
    if not folder.is_dir():
        raise InputError("a file, not a folder: a BEIR collection is a folder holding corpus.jsonl, queries.jsonl and "
                         "qrels/", source=str(folder))


def read_beir(folder: Path, *, split: str = "test", on_duplicate: str = "refuse") -> tuple[Iterator[Article], QuestionStream]:
    """A BEIR folder's documents and its questions for `split` (queries joined with qrels/<split>.tsv);
    `on_duplicate` (refuse, first, last) also rules an id its embeddings files list twice."""
    folder = Path(folder)
    must_be_folder(folder)
    corpus, queries, qrels = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"
    for needed in (corpus, queries, qrels):
        if not needed.is_file():
            splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
            hint = f" (splits here: {', '.join(splits)})" if needed == qrels and (folder / "qrels").is_dir() else ""
            raise InputError(f"not a BEIR folder: {needed.relative_to(folder)} is missing{hint}", source=str(folder))
    return beir_documents(folder, on_duplicate), _beir_questions(folder, split, on_duplicate)


def beir_documents(folder: Path, on_duplicate: str = "refuse") -> Iterator[Article]:
    corpus = folder / "corpus.jsonl"
    documents = iter_documents_jsonl(corpus)
    sidecar = sidecar_path(corpus)
    return with_sidecar_embeddings(documents, sidecar, on_duplicate=on_duplicate) if sidecar else documents


def _beir_questions(folder: Path, split: str, on_duplicate: str = "refuse") -> QuestionStream:
    queries = folder / "queries.jsonl"
    return QuestionStream(queries, read_qrels(folder / "qrels" / f"{split}.tsv", format="beir"),
                          split=split, embeddings=sidecar_path(queries), on_duplicate=on_duplicate)


# ------------------------------------------------------------------------------- sidecar files


def sidecar_path(path: Path) -> Path | None:
    """`embeddings/<name>.jsonl` beside a data file, if it exists."""
    candidate = Path(path).parent / "embeddings" / f"{Path(path).stem}.jsonl"
    return candidate if candidate.is_file() else None


def _sidecar_rows(path: Path, on_duplicate: str = "refuse") -> Iterator[tuple[str, list[float]]]:
    """Each (id, vector) of a sidecar file, checked; an id listed twice is refused (`refuse`), its later
    rows skipped (`first`) or yielded again (`last`, the caller lets the last win)."""
    first_line: dict[str, int] = {}  # every id read, so that an id listed twice is noticed
    for line, raw in json_rows(path):
        raw = dict(raw)
        take_id(raw, path, line)
        ident, vector = raw.get("id"), raw.get("embedding")
        if not isinstance(ident, str) or not ident:
            raise InputError("each line needs an _id", source=str(path), line=line)
        problem = data_problem(ident, "_id")
        if problem:
            raise InputError(problem, source=str(path), line=line)
        again = ident in first_line
        if again and on_duplicate == "refuse":
            raise InputError(f"id {ident!r} is listed twice (first on line {first_line[ident]}); --on-duplicate first or "
                             f"last keeps one", source=str(path), line=line)
        first_line.setdefault(ident, line)
        if not isinstance(vector, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise InputError(f"embedding: must be a list of numbers (id {ident!r})", source=str(path), line=line)
        try:
            vector = [float(x) for x in vector]
        except OverflowError:
            vector = [math.inf]
        problem = vector_problem(vector)
        if problem:
            raise InputError(f"{problem} (id {ident!r})", source=str(path), line=line)
        if not (again and on_duplicate == "first"):
            yield ident, vector


E = TypeVar("E", Article, Question, _Query)


def with_sidecar_embeddings(items: Iterable[E], path: Path, *, on_duplicate: str = "refuse") -> Iterator[E]:
    """`items` with the embeddings they lack taken from a sidecar JSONL file of {_id, embedding}.

    Both files are read together: when the sidecar lists ids in the data's order (the usual case)
    nothing is held in memory; otherwise sidecar rows read ahead of their item wait in a dict.
    Sidecar rows for ids the data lacks are ignored (but checked). An embedding in the data wins over the sidecar.
    An id the sidecar lists twice is refused, or with `on_duplicate` 'first' its first vector is kept, with 'last'
    its last (the whole sidecar is then read first, as a later row may overrule an earlier one).
    """
    if on_duplicate == "last":
        vectors = dict(_sidecar_rows(path, "last"))
        for item in items:
            yield item if item.embedding is not None or item.id not in vectors else item.model_copy(update={"embedding": vectors[item.id]})
        return
    sidecar = _sidecar_rows(path, on_duplicate)
    ahead: dict[str, list[float]] = {}
    exhausted = False
    for item in items:
        if item.embedding is None:
            vector = ahead.pop(item.id, None)
            while vector is None and not exhausted:
                found = next(sidecar, None)
                if found is None:
                    exhausted = True
                elif found[0] == item.id:
                    vector = found[1]
                else:
                    ahead[found[0]] = found[1]
            if vector is not None:
                item = item.model_copy(update={"embedding": vector})
        yield item
    for _ in sidecar:  # the rest is read too: a bad or doubled row there is refused all the same
        pass


# -------------------------------------------------------------------------------- by format
