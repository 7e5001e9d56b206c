"""Read documents and golden-set questions from files. Every bad row is refused with its file and line.

Formats (each reader is a generator: files are streamed, never loaded whole):

    JSONL   one object per line.  Documents: id, title, content (or text), embedding?, metadata?, and
            any other key goes into metadata.  Questions: id, text, embedding?, relevant (a list of
            ids or an {id: grade} map), grades?, category?, language?, source?, split?, passages?
    CSV     a header row and the same columns; an embedding, a metadata or passages cell holds JSON;
            relevant is a JSON list or map, or ids separated by ';'
    BEIR    a folder: corpus.jsonl {_id, title, text}, queries.jsonl {_id, text}, qrels/<split>.tsv
            (query-id, corpus-id, score, with a header)
    TREC    qrels lines `qid 0 docid grade`, the questions' text from a queries file (JSONL {_id|id,
            text} or TSV `id<TAB>text`)

Judgments (BEIR and TREC qrels, and a relevant map) keep their score as the grade; a score of 0 or
less means judged non-relevant and is dropped. A BEIR or TREC query with no relevant judgment is
skipped and counted (`QuestionStream.skipped`). A sidecar `embeddings/<file>.jsonl` of
{"_id", "embedding"} beside a data file supplies the embeddings its rows lack.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from .errors import InputError
from .models import Article, Question

__all__ = [
    "DocumentFormat",
    "QuestionFormat",
    "Qrels",
    "QuestionStream",
    "read_documents",
    "read_questions",
    "read_beir",
    "read_qrels",
    "iter_documents_jsonl",
    "iter_documents_csv",
    "iter_questions_jsonl",
    "iter_questions_csv",
    "read_articles_jsonl",
    "read_questions_jsonl",
    "sidecar_path",
    "with_sidecar_embeddings",
]

M = TypeVar("M", bound=BaseModel)
DocumentFormat = Literal["auto", "jsonl", "csv", "beir"]
QuestionFormat = Literal["auto", "jsonl", "csv", "beir", "trec"]
#: A row as read: (line number, the decoded object).
Row = tuple[int, dict[str, Any]]

_JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
_DOCUMENT_FIELDS = {"id", "title", "content", "embedding", "metadata", "doc", "position"}
_QUESTION_SPLITS = {"dev", "test"}
_CSV_JSON_CELLS = {"embedding", "metadata", "passages"}


# ---------------------------------------------------------------------------------------- rows


def _open(path: Path):
    try:
        return path.open("r", encoding="utf-8", newline="")
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None


def _json_rows(path: Path) -> Iterator[Row]:
    """(line, object) for every non-blank line of a JSONL file."""
    with _open(path) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as error:
                    raise InputError(f"not valid JSON: {error.msg}", source=str(path), line=number) from None
                if not isinstance(raw, dict):
                    raise InputError("each line must be a JSON object", source=str(path), line=number)
                yield number, raw
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None


def _csv_rows(path: Path) -> Iterator[Row]:
    """(line where the record starts, {column: cell}) for every record of a CSV file with a header."""
    with _open(path) as handle:
        try:
            reader = csv.reader(handle)
            try:
                header = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                raise InputError(f"not valid CSV: {error}", source=str(path), line=1) from None
            columns = [name.strip().lstrip("\ufeff") for name in header]
            doubled = sorted({c for c in columns if columns.count(c) > 1})
            if doubled or "" in columns:
                what = f"column {doubled[0]!r} appears twice" if doubled else "a column has no name"
                raise InputError(f"bad header: {what}", source=str(path), line=1)
            start = reader.line_num + 1
            while True:
                try:
                    cells = next(reader)
                except StopIteration:
                    return
                except csv.Error as error:
                    raise InputError(f"not valid CSV: {error}", source=str(path), line=start) from None
                if any(cell.strip() for cell in cells):
                    if len(cells) != len(columns):
                        raise InputError(f"{len(cells)} cells for {len(columns)} columns", source=str(path), line=start)
                    yield start, dict(zip(columns, cells))
                start = reader.line_num + 1
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None


def _ident(raw: dict[str, Any]) -> str:
    value = raw.get("id", raw.get("_id"))
    return f" (id {value!r})" if value is not None and value != "" else ""


def _validate(model: type[M], raw: dict[str, Any], original: dict[str, Any], path: Path, line: int) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        raise InputError(f"{where}: {first['msg']}{_ident(original)}", source=str(path), line=line) from None


def _take_id(raw: dict[str, Any], path: Path, line: int) -> None:
    """Normalise `_id` (BEIR) to `id`, and a numeric id to its text."""
    if "_id" in raw:
        if "id" in raw and raw["id"] != raw["_id"]:
            raise InputError(f"both id and _id given{_ident(raw)}", source=str(path), line=line)
        raw["id"] = raw.pop("_id")
    if isinstance(raw.get("id"), int) and not isinstance(raw["id"], bool):
        raw["id"] = str(raw["id"])


def _json_cell(raw: dict[str, Any], key: str, path: Path, line: int) -> None:
    """A CSV cell that holds JSON, decoded in place; an empty cell is absent."""
    cell = raw.get(key)
    if not isinstance(cell, str):
        return
    if not cell.strip():
        del raw[key]
        return
    try:
        raw[key] = json.loads(cell)
    except json.JSONDecodeError as error:
        raise InputError(f"{key}: not valid JSON ({error.msg}){_ident(raw)}", source=str(path), line=line) from None


# ----------------------------------------------------------------------------------- documents


def _document(raw: dict[str, Any], path: Path, line: int, *, from_csv: bool = False) -> Article:
    original = dict(raw)
    raw = dict(raw)
    _take_id(raw, path, line)
    if from_csv:
        for key in _CSV_JSON_CELLS & raw.keys():
            _json_cell(raw, key, path, line)
        if raw.get("position") == "":
            del raw["position"]
        if raw.get("doc") == "":
            del raw["doc"]
    if "text" in raw:
        if "content" in raw and raw["content"] != raw["text"]:
            raise InputError(f"both content and text given{_ident(original)}", source=str(path), line=line)
        raw["content"] = raw.pop("text")
    if raw.get("content") is None:
        raw.pop("content", None)
    if raw.get("title") is None:
        raw.pop("title", None)
    metadata = raw.pop("metadata", None)
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(f"metadata: must be an object{_ident(original)}", source=str(path), line=line)
    extra = {k: raw.pop(k) for k in list(raw) if k not in _DOCUMENT_FIELDS}
    if from_csv:
        extra = {k: v for k, v in extra.items() if v != ""}
    merged = {**(metadata or {}), **extra}
    if merged:
        raw["metadata"] = merged
    return _validate(Article, raw, original, path, line)


def iter_documents_jsonl(path: Path) -> Iterator[Article]:
    """Documents from a JSONL file: {id, title, content or text, embedding?, metadata?, ...} per line."""
    for line, raw in _json_rows(path):
        yield _document(raw, path, line)


def iter_documents_csv(path: Path) -> Iterator[Article]:
    """Documents from a CSV file with a header: id, title, content or text, embedding (JSON), others."""
    for line, raw in _csv_rows(path):
        yield _document(raw, path, line, from_csv=True)


# ----------------------------------------------------------------------------------- questions


def _grade(value: Any, what: str, raw: dict[str, Any], path: Path, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{what}: grade {value!r} is not a number{_ident(raw)}", source=str(path), line=line)
    try:
        grade = float(value)
    except ValueError:
        raise InputError(f"{what}: grade {value!r} is not a number{_ident(raw)}", source=str(path), line=line) from None
    if not math.isfinite(grade):
        raise InputError(f"{what}: grade {value!r} is not a finite number{_ident(raw)}", source=str(path), line=line)
    return grade


def _relevant_map(raw: dict[str, Any], original: dict[str, Any], path: Path, line: int) -> None:
    """`relevant: {id: grade}` as relevant + grades; judgments of 0 or less are dropped."""
    judged = raw["relevant"]
    if "grades" in raw:
        raise InputError(f"grades given twice: in the relevant map and as grades{_ident(original)}", source=str(path), line=line)
    kept = {str(doc): _grade(g, "relevant", original, path, line) for doc, g in judged.items()}
    kept = {doc: g for doc, g in kept.items() if g > 0}
    raw["relevant"] = list(kept)
    raw["grades"] = list(kept.values())


def _split_ids(cell: str) -> list[str]:
    return [part.strip() for part in cell.split(";") if part.strip()]


def _question(raw: dict[str, Any], path: Path, line: int, *, from_csv: bool = False) -> Question:
    original = dict(raw)
    raw = dict(raw)
    _take_id(raw, path, line)
    if from_csv:
        for key in list(raw):
            if raw[key] == "" and key not in ("text", "relevant"):
                del raw[key]
        if raw.get("relevant") == "":
            raw["relevant"] = []  # the column is there and empty: no labels
        for key in _CSV_JSON_CELLS & raw.keys():
            _json_cell(raw, key, path, line)
        for key in ("relevant", "grades"):
            cell = raw.get(key)
            if isinstance(cell, str):
                if cell.lstrip().startswith(("[", "{")):
                    _json_cell(raw, key, path, line)
                else:
                    raw[key] = _split_ids(cell)
    if isinstance(raw.get("relevant"), dict):
        _relevant_map(raw, original, path, line)
    elif isinstance(raw.get("relevant"), list):
        raw["relevant"] = [str(r) if isinstance(r, int) and not isinstance(r, bool) else r for r in raw["relevant"]]
    return _validate(Question, raw, original, path, line)


def iter_questions_jsonl(path: Path) -> Iterator[Question]:
    """Questions from a JSONL file: {id, text, embedding?, relevant (list or {id: grade}), ...} per line."""
    for line, raw in _json_rows(path):
        yield _question(raw, path, line)


def iter_questions_csv(path: Path) -> Iterator[Question]:
    """Questions from a CSV file with a header: id, text, embedding (JSON), relevant (JSON or a;b;c), ..."""
    for line, raw in _csv_rows(path):
        yield _question(raw, path, line, from_csv=True)


# ------------------------------------------------------------------------------ qrels and BEIR


@dataclass
class Qrels:
    """Relevance judgments: for each query, its relevant documents and their grades (all above 0)."""

    source: str
    judgments: dict[str, dict[str, float]] = field(default_factory=dict)
    #: every query that has a judgment line, relevant or not
    judged: set[str] = field(default_factory=set)
    #: judgment lines with a score of 0 or less (judged non-relevant), dropped
    dropped: int = 0

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
    with _open(path) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                parts = line.rstrip("\r\n").split("\t") if format == "beir" else line.split()
                if format == "beir" and len(parts) != columns:
                    parts = line.split()
                if len(parts) != columns:
                    raise InputError(f"expected {columns} columns ({layout}), found {len(parts)}", source=str(path), line=number)
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
                    qrels.dropped += 1
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
    qrels.judged = set(seen)
    return qrels


class _Query(BaseModel):
    id: str = Field(min_length=1)
    text: str
    embedding: list[float] | None = None


def _queries(path: Path) -> Iterator[_Query]:
    """Queries from JSONL ({_id or id, text, embedding?}; other keys ignored) or TSV (`id<TAB>text`)."""
    if path.suffix.lower() in {".tsv", ".txt"}:
        with _open(path) as handle:
            try:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    qid, tab, text = line.rstrip("\r\n").partition("\t")
                    if not tab or not qid.strip():
                        raise InputError("expected `id<TAB>text`", source=str(path), line=number)
                    yield _Query(id=qid.strip(), text=text)
            except UnicodeDecodeError as error:
                raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
        return
    for line, raw in _json_rows(path):
        raw = dict(raw)
        _take_id(raw, path, line)
        kept = {k: raw[k] for k in ("id", "text", "embedding") if k in raw and raw[k] is not None}
        yield _validate(_Query, kept, raw, path, line)


class QuestionStream(Iterable[Question]):
    """Questions joined from a queries file and judgments, streamed; iterate once.

    After iterating: `skipped` counts the queries with no relevant judgment (not loaded), `labels`
    the judgments loaded. Judgments naming a query the queries file lacks are refused.
    """

    def __init__(self, queries: Path, qrels: Qrels, *, split: str | None = None, embeddings: Path | None = None) -> None:
        self.queries = queries
        self.qrels = qrels
        self.split = split if split in _QUESTION_SPLITS else None
        self.embeddings = embeddings
        self.skipped = 0
        self.labels = 0

    def __iter__(self) -> Iterator[Question]:
        rows: Iterable[Any] = _queries(self.queries)
        if self.embeddings is not None:
            rows = with_sidecar_embeddings(rows, self.embeddings)
        seen: set[str] = set()
        for query in rows:
            seen.add(query.id)
            judged = self.qrels.judgments.get(query.id)
            if not judged:
                self.skipped += 1
                continue
            self.labels += len(judged)
            yield Question(id=query.id, text=query.text, embedding=query.embedding,
                           relevant=[_label(doc) for doc in judged], grades=list(judged.values()), split=self.split)
        unknown = sorted(self.qrels.judged - seen)
        if unknown:
            raise InputError(f"judgments for queries that {self.queries.name} lacks: {_listing(unknown)}", source=self.qrels.source)


def _label(doc: str) -> str:
    """A qrels document id as a label: a label `article:x` means the record x, so an id that itself
    starts with `article:` is written `article:<id>` to name that record and not another."""
    return f"article:{doc}" if doc.startswith("article:") else doc


def _listing(ids: list[str], shown: int = 5) -> str:
    more = f" (and {len(ids) - shown} more)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def read_beir(folder: Path, *, split: str = "test") -> tuple[Iterator[Article], QuestionStream]:
    """A BEIR folder's documents and its questions for `split` (queries joined with qrels/<split>.tsv)."""
    folder = Path(folder)
    corpus, queries, qrels = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"
    for needed in (corpus, queries, qrels):
        if not needed.is_file():
            hint = f" (splits here: {', '.join(sorted(p.stem for p in (folder / 'qrels').glob('*.tsv')))})" if needed == qrels and (folder / "qrels").is_dir() else ""
            raise InputError(f"not a BEIR folder: {needed.relative_to(folder)} is missing{hint}", source=str(folder))
    return _beir_documents(folder), _beir_questions(folder, split)


def _beir_documents(folder: Path) -> Iterator[Article]:
    corpus = folder / "corpus.jsonl"
    documents = iter_documents_jsonl(corpus)
    sidecar = sidecar_path(corpus)
    return with_sidecar_embeddings(documents, sidecar) if sidecar else documents


def _beir_questions(folder: Path, split: str) -> QuestionStream:
    queries = folder / "queries.jsonl"
    return QuestionStream(queries, read_qrels(folder / "qrels" / f"{split}.tsv", format="beir"),
                          split=split, embeddings=sidecar_path(queries))


# ------------------------------------------------------------------------------- sidecar files


def sidecar_path(path: Path) -> Path | None:
    """`embeddings/<name>.jsonl` beside a data file, if it exists."""
    candidate = Path(path).parent / "embeddings" / f"{Path(path).stem}.jsonl"
    return candidate if candidate.is_file() else None


def _sidecar_rows(path: Path) -> Iterator[tuple[str, list[float]]]:
    for line, raw in _json_rows(path):
        raw = dict(raw)
        _take_id(raw, path, line)
        ident, vector = raw.get("id"), raw.get("embedding")
        if not isinstance(ident, str) or not ident:
            raise InputError("each line needs an _id", source=str(path), line=line)
        if not isinstance(vector, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise InputError(f"embedding: must be a list of numbers (id {ident!r})", source=str(path), line=line)
        yield ident, [float(x) for x in vector]


E = TypeVar("E", Article, Question, _Query)


def with_sidecar_embeddings(items: Iterable[E], path: Path) -> Iterator[E]:
    """`items` with the embeddings they lack taken from a sidecar JSONL file of {_id, embedding}.

    Both files are read together: when the sidecar lists ids in the data's order (the usual case)
    nothing is held in memory; otherwise sidecar rows read ahead of their item wait in a dict.
    Sidecar rows for ids the data lacks are ignored. An embedding in the data wins over the sidecar.
    """
    sidecar = _sidecar_rows(path)
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


# -------------------------------------------------------------------------------- by format


def _format_of(path: Path, given: str, allowed: tuple[str, ...]) -> str:
    if given != "auto":
        if given not in allowed:
            raise InputError(f"format {given!r} is not one of {', '.join(allowed)}", source=str(path))
        return given
    if path.is_dir():
        return "beir"
    suffix = path.suffix.lower()
    if suffix in _JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if "trec" in allowed:
        return "trec"
    raise InputError(f"cannot tell the format from the name: pass --format ({', '.join(allowed)})", source=str(path))


def _with_sidecar(path: Path, items: Iterator[E]) -> Iterator[E]:
    sidecar = sidecar_path(path)
    return with_sidecar_embeddings(items, sidecar) if sidecar else items


def read_documents(path: Path, *, format: DocumentFormat = "auto") -> Iterator[Article]:
    """Documents from a JSONL or CSV file or a BEIR folder (auto: by suffix; a folder is BEIR)."""
    path = Path(path)
    kind = _format_of(path, format, ("jsonl", "csv", "beir"))
    if kind == "beir":
        if not (path / "corpus.jsonl").is_file():
            raise InputError("not a BEIR folder: corpus.jsonl is missing", source=str(path))
        return _beir_documents(path)
    _must_be_file(path)
    reader: Callable[[Path], Iterator[Article]] = iter_documents_jsonl if kind == "jsonl" else iter_documents_csv
    return _with_sidecar(path, reader(path))


def read_questions(
    path: Path, *, format: QuestionFormat = "auto", split: str | None = None, queries: Path | None = None
) -> Iterable[Question]:
    """Golden-set questions from JSONL, CSV, a BEIR folder (qrels/<split>.tsv, default test) or a
    TREC qrels file joined with `queries`.

    For JSONL and CSV, `split` is given to every question that names none.
    """
    path = Path(path)
    kind = _format_of(path, format, ("jsonl", "csv", "beir", "trec"))
    if kind == "beir":
        return read_beir(path, split=split or "test")[1]
    _must_be_file(path)
    if kind == "trec":
        if queries is None:
            raise InputError("TREC qrels carry no question text: give the queries file too (--queries queries.jsonl)", source=str(path))
        _must_be_file(Path(queries))
        return QuestionStream(Path(queries), read_qrels(path, format="trec"), split=split, embeddings=sidecar_path(Path(queries)))
    reader: Callable[[Path], Iterator[Question]] = iter_questions_jsonl if kind == "jsonl" else iter_questions_csv
    questions = _with_sidecar(path, reader(path))
    if split is None:
        return questions
    if split not in _QUESTION_SPLITS:
        raise InputError(f"split {split!r} must be dev or test", source=str(path))
    return (q if q.split is not None else q.model_copy(update={"split": split}) for q in questions)


def _must_be_file(path: Path) -> None:
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "not a file", source=str(path))


# --------------------------------------------------------------------------- earlier API (lists)


def read_articles_jsonl(path: Path) -> list[Article]:
    """Articles from a JSONL file, as a list (`iter_documents_jsonl` streams them)."""
    return list(iter_documents_jsonl(Path(path)))


def read_questions_jsonl(path: Path) -> list[Question]:
    """Questions from a JSONL file, as a list (`iter_questions_jsonl` streams them)."""
    return list(iter_questions_jsonl(Path(path)))
