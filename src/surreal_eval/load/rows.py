"""Rows of JSONL and CSV files as documents and questions: each bad row refused with its file and line."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..models import MAX_NESTING, Article, Question

#: Rows per INSERT into the staging table (measured on CISI, 384-d: 100 to 500 are equally fast).
DEFAULT_BATCH_SIZE = 250

__all__ = ["Row", "iter_documents_jsonl", "iter_documents_csv", "iter_questions_jsonl", "iter_questions_csv"]

M = TypeVar("M", bound=BaseModel)
#: A row as read: (line number, the decoded object).
Row = tuple[int, dict[str, Any]]

JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
_DOCUMENT_FIELDS = {"id", "title", "content", "embedding", "metadata", "doc", "position"}
QUESTION_SPLITS = {"dev", "test"}
_CSV_JSON_CELLS = {"embedding", "metadata", "passages"}
#: What a JSON value nested deeper than Python's parser can follow is told.
TOO_DEEP = f"JSON nested too deeply (at most {MAX_NESTING} levels of objects and arrays)"


# ---------------------------------------------------------------------------------------- rows


def open_text(path: Path):
    """`path` opened as UTF-8 text; a byte order mark at its start (as Windows tools write) is skipped."""
    try:
        return path.open("r", encoding="utf-8-sig", newline="")
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None


def json_rows(path: Path) -> Iterator[Row]:
    """(line, object) for every non-blank line of a JSONL file."""
    with open_text(path) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                text = line.rstrip("\r\n")
                try:
                    raw = json.loads(text)
                except json.JSONDecodeError as error:
                    where = " (the end of the line)" if error.pos >= len(text.rstrip()) else ""
                    raise InputError(f"not valid JSON at column {error.colno}{where}: {error.msg}", source=str(path),
                                     line=number) from None
                except RecursionError:
                    raise InputError(TOO_DEEP, source=str(path), line=number) from None
                if not isinstance(raw, dict):
                    raise InputError("each line must be a JSON object", source=str(path), line=number)
                yield number, raw
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None


def _csv_rows(path: Path) -> Iterator[Row]:
    """(line where the record starts, {column: cell}) for every record of a CSV file with a header."""
    with open_text(path) as handle:
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


def validate_row(model: type[M], raw: dict[str, Any], original: dict[str, Any], path: Path, line: int) -> M:
    try:
        item = model.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "row"
        raise InputError(f"{where}: {first['msg']}{_ident(original)}", source=str(path), line=line) from None
    if "_origin" in item.__private_attributes__:
        item._origin = (str(path), line)  # where a duplicate id is reported
    return item


def take_id(raw: dict[str, Any], path: Path, line: int) -> None:
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
    except RecursionError:
        raise InputError(f"{key}: {TOO_DEEP}{_ident(raw)}", source=str(path), line=line) from None


# ----------------------------------------------------------------------------------- documents


def _document(raw: dict[str, Any], path: Path, line: int, *, from_csv: bool = False) -> Article:
    original = dict(raw)
    raw = dict(raw)
    take_id(raw, path, line)
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
    return validate_row(Article, raw, original, path, line)


def _parsed(path: Path, parse: Callable[..., M], *, from_csv: bool) -> Iterator[M]:
    """Each row of a CSV (`from_csv`) or JSONL file at `path`, parsed by `parse`, with its line."""
    for line, raw in (_csv_rows(path) if from_csv else json_rows(path)):
        yield parse(raw, path, line, from_csv=from_csv)


def iter_documents_jsonl(path: Path) -> Iterator[Article]:
    """Documents from a JSONL file: {id, title, content or text, embedding?, metadata?, ...} per line."""
    return _parsed(path, _document, from_csv=False)


def iter_documents_csv(path: Path) -> Iterator[Article]:
    """Documents from a CSV file with a header: id, title, content or text, embedding (JSON), others."""
    return _parsed(path, _document, from_csv=True)


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
    """`relevant: {id: grade}` as relevant + grades; judgments of 0 or less as nonrelevant."""
    judged = raw["relevant"]
    if "grades" in raw:
        raise InputError(f"grades given twice: in the relevant map and as grades{_ident(original)}", source=str(path), line=line)
    kept = {str(doc): _grade(g, "relevant", original, path, line) for doc, g in judged.items()}
    if "nonrelevant" in raw:
        raise InputError(f"non-relevant judgments given twice: in the relevant map and as nonrelevant{_ident(original)}",
                         source=str(path), line=line)
    raw["relevant"] = [doc for doc, g in kept.items() if g > 0]
    raw["grades"] = [g for g in kept.values() if g > 0]
    if any(g <= 0 for g in kept.values()):
        raw["nonrelevant"] = [doc for doc, g in kept.items() if g <= 0]


def _split_ids(cell: str) -> list[str]:
    return [part.strip() for part in cell.split(";") if part.strip()]


def _question(raw: dict[str, Any], path: Path, line: int, *, from_csv: bool = False) -> Question:
    original = dict(raw)
    raw = dict(raw)
    take_id(raw, path, line)
    if from_csv:
        for key in list(raw):
            if raw[key] == "" and key not in ("text", "relevant"):
                del raw[key]
        if raw.get("relevant") == "":
            raw["relevant"] = []  # the column is there and empty: no labels
        for key in _CSV_JSON_CELLS & raw.keys():
            _json_cell(raw, key, path, line)
        for key in ("relevant", "grades", "nonrelevant"):
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
    return validate_row(Question, raw, original, path, line)


def iter_questions_jsonl(path: Path) -> Iterator[Question]:
    """Questions from a JSONL file: {id, text, embedding?, relevant (list or {id: grade}), ...} per line."""
    return _parsed(path, _question, from_csv=False)


def iter_questions_csv(path: Path) -> Iterator[Question]:
    """Questions from a CSV file with a header: id, text, embedding (JSON), relevant (JSON or a;b;c), ..."""
    return _parsed(path, _question, from_csv=True)


# ------------------------------------------------------------------------------ qrels and BEIR
