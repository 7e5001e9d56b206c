"""Read articles and questions from files. Every bad row is refused with its file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InputError
from .models import Article, Question

__all__ = ["read_articles_jsonl", "read_questions_jsonl"]

M = TypeVar("M", bound=BaseModel)


def _read_jsonl(path: Path, model: type[M]) -> Iterator[M]:
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None
    seen: set[str] = set()
    with handle:
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
                try:
                    item = model.model_validate(raw)
                except ValidationError as error:
                    first = error.errors()[0]
                    field = ".".join(str(p) for p in first["loc"]) or "row"
                    ident = f" (id {raw.get('id')!r})" if raw.get("id") is not None else ""
                    raise InputError(f"{field}: {first['msg']}{ident}", source=str(path), line=number) from None
                if item.id in seen:  # type: ignore[attr-defined]
                    raise InputError(f"duplicate id {item.id!r}", source=str(path), line=number)  # type: ignore[attr-defined]
                seen.add(item.id)  # type: ignore[attr-defined]
                yield item
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None


def read_articles_jsonl(path: Path) -> list[Article]:
    """Articles from a JSONL file: one {id, title, content, embedding, metadata?} object per line."""
    return list(_read_jsonl(path, Article))


def read_questions_jsonl(path: Path) -> list[Question]:
    """Questions from a JSONL file: one {id, text, embedding, relevant, grades?, category?} per line."""
    return list(_read_jsonl(path, Question))
