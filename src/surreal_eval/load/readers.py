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
less means judged non-relevant and is kept as such (`nonrelevant`). A BEIR or TREC query with no relevant judgment is
skipped and counted (`QuestionStream.skipped`). A sidecar `embeddings/<file>.jsonl` of
{"_id", "embedding"} beside a data file supplies the embeddings its rows lack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Literal

from ..errors import InputError
from ..models import Article, Question
from .collections import (E, Qrels, QuestionStream, beir_documents, must_be_folder, read_beir, read_qrels, sidecar_path,
                          with_sidecar_embeddings)
from .rows import JSONL_SUFFIXES, QUESTION_SPLITS, iter_documents_csv, iter_documents_jsonl, iter_questions_csv, iter_questions_jsonl

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

DocumentFormat = Literal["auto", "jsonl", "csv", "beir"]
QuestionFormat = Literal["auto", "jsonl", "csv", "beir", "trec"]


def _format_of(path: Path, given: str, allowed: tuple[str, ...]) -> str:
    if given != "auto":
        if given not in allowed:
            raise InputError(f"format {given!r} is not one of {', '.join(allowed)}", source=str(path))
        return given
    if not path.exists():
        raise InputError("no such file or folder", source=str(path))
    if path.is_dir():
        return "beir"
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
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
        must_be_folder(path)
        if not (path / "corpus.jsonl").is_file():
            raise InputError("not a BEIR folder: corpus.jsonl is missing", source=str(path))
        return beir_documents(path)
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
    if split not in QUESTION_SPLITS:
        raise InputError(f"split {split!r} must be dev or test", source=str(path))
    return (q if q.split is not None else q.model_copy(update={"split": split}) for q in questions)


def _must_be_file(path: Path) -> None:
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "a folder, not a file: name a file", source=str(path))


# --------------------------------------------------------------------------- earlier API (lists)


def read_articles_jsonl(path: Path) -> list[Article]:
    """Articles from a JSONL file, as a list (`iter_documents_jsonl` streams them)."""
    return list(iter_documents_jsonl(Path(path)))


def read_questions_jsonl(path: Path) -> list[Question]:
    """Questions from a JSONL file, as a list (`iter_questions_jsonl` streams them)."""
    return list(iter_questions_jsonl(Path(path)))
