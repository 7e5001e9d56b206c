"""Which field of a user's table holds each thing the harness reads of it, the mapping an attach registers: of a
corpus (`CorpusFields`, load/attach.py's attach_table) or of a golden set (`GoldenFields`, golden/attach.py's
attach_golden), each a model on `FieldMap`, which checks every field as the option naming it (`--content field`)."""

from __future__ import annotations

from typing import Any, Optional, TypeVar

from pydantic import ConfigDict, ValidationInfo, field_validator

from ..model_base import Model
from .names import field_path

__all__ = ["CorpusFields", "FieldMap", "GoldenFields"]

M = TypeVar("M", bound="FieldMap")


class FieldMap(Model):
    """Fields of a user's table by what they hold, each a field or a path into nested objects (`metadata.title`); an
    optional one not given, None or empty: the table has none. A name that is no field is a ConfigError naming the
    option that gives it (--NAME field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _checked(cls, value: Any, info: ValidationInfo) -> Optional[str]:
        if not value and info.field_name is not None and not cls.model_fields[info.field_name].is_required():
            return None
        return str(field_path(value, what=f"--{info.field_name} field"))

    @classmethod
    def given(cls: type[M], fields: M | None, named: dict[str, Any]) -> M:
        """`fields`, or else the mapping of the fields `named` as keyword arguments (attach_table(db, t, content="body"),
        as 0.1 took them); a TypeError, as a call with a wrong argument raises, for both, neither or an unknown name."""
        if fields is not None:
            if named:
                raise TypeError(f"fields given twice: as {cls.__name__} and as {', '.join(f'{n}=' for n in named)}")
            if not isinstance(fields, cls):
                raise TypeError(f"fields must be a {cls.__name__}, got {type(fields).__name__}")
            return fields
        unknown = [name for name in named if name not in cls.model_fields]
        missing = [name for name, field in cls.model_fields.items() if field.is_required() and name not in named]
        if unknown or missing:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}" if unknown else f"missing field {missing[0]!r} "
                            f"(a keyword argument, or a {cls.__name__})")
        return cls(**named)


class CorpusFields(FieldMap):
    """What `attach` maps, by option: the field holding each record's text (`content`, searched by BM25) and, when the
    table has them, its vector, its title and its document (a record naming it)."""

    content: str
    embedding: Optional[str] = None
    title: Optional[str] = None
    doc: Optional[str] = None


class GoldenFields(FieldMap):
    """What `golden attach` maps, by option: the field holding each question's text, its labels and, when the table
    has them, its embedding, its grades (one per label), its category and its language."""

    text: str
    relevant: str
    embedding: Optional[str] = None
    grades: Optional[str] = None
    category: Optional[str] = None
    language: Optional[str] = None
