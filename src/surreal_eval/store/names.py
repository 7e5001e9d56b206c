"""Names and literals in SurrealQL, in one place: the harness's prefix, the checks a name given by a
user must pass (a table, a field or a path into nested objects, a function), and the one function
that puts a validated literal into SurrealQL text (`render`, and `statement` on top of it). Values
never pass through here: they always travel as query parameters.

Some SurrealQL needs literals where parameters are not allowed (an index dimension, a KNN depth, a
table or field named in a full-text or KNN operator). Those are written `{{name}}` in the files and
filled by `render`, after validation.
"""

from __future__ import annotations

import re

from ..errors import ConfigError

__all__ = ["PREFIX", "PREFIX_FUNCTIONS", "RESERVED_WORDS", "FieldPath", "field_path", "function_name", "harness_table",
           "identifier", "render", "statement"]

#: The prefix of every name the harness defines: tables, analyzers, accesses and indexes begin with
#: it, functions live in the namespace fn::seval:: (PREFIX_FUNCTIONS), so none is a name an
#: application would choose (article, question, eval_run, english and fn::evaluate are the lesson's).
PREFIX = "seval_"
PREFIX_FUNCTIONS = "fn::seval::"

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_FUNCTION = re.compile(r"^fn(?:::[A-Za-z_][A-Za-z0-9_]{0,62}){1,8}$")
#: Words refused as table and user names, matched case-insensitively: those SurrealDB's parser may
#: refuse as an identifier in some statements (its lexer's RESERVED_KEYWORD set), and the keywords
#: the harness's own corpus statements failed to parse when a corpus was loaded under each keyword.
RESERVED_WORDS = frozenset(
    """after all alter analyze before begin break by cancel commit continue create define diff expire
    false for if info insert kill let live none null option rand rebuild relate remove return select
    sequence show sleep table throw true update upsert use value where""".split()
) | {"delete", "explain", "function", "tb"}


def identifier(name: str, *, what: str = "name") -> str:
    """`name` if it is a plain SurrealQL identifier (letters, digits, _, not a reserved word), else a ConfigError."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):  # fullmatch: `$` would pass "name\n"
        raise ConfigError(f"{what} {name!r} is not a valid identifier: use letters, digits and _")
    if name.lower() in RESERVED_WORDS:
        raise ConfigError(f"{what} {name!r} is a SurrealQL keyword: choose another name")
    return name


class FieldPath(str):
    """A field of a user's table as render() should write it: one identifier, or several joined by dots
    (`metadata.title`), each checked by field_path()."""


def field_path(name: str, *, what: str = "field") -> FieldPath:
    """`name` if it is a field or a path into nested objects (`metadata.title`: identifiers joined by
    dots, none a reserved word), else a ConfigError."""
    parts = name.split(".") if isinstance(name, str) else [name]
    if not 1 <= len(parts) <= 8:
        raise ConfigError(f"{what} {name!r} is not a field: use a name, or a path such as metadata.title")
    for part in parts:
        identifier(part, what=what if len(parts) == 1 else f"{what} {name!r}: part")
    return FieldPath(name)


def harness_table(name: str, *, what: str = "corpus table") -> str:
    """`name` if it is an identifier carrying the harness's prefix (every table the harness defines
    does, so that none can be a name the user's application chose), else a ConfigError."""
    name = identifier(name, what=what)
    if not name.startswith(PREFIX):
        raise ConfigError(f"{what} {name!r}: every table the harness defines starts with {PREFIX} (use {PREFIX}{name}); "
                          f"to evaluate a table of yours in place, attach it (surreal-eval attach)")
    return name


def render(text: str, values: dict[str, int | str], *, source: str = "<text>") -> str:
    """`text` with every `{{name}}` replaced by its validated value; an unknown name is an error."""
    clean: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ConfigError(f"template value {key} must be an integer or identifier, got {value!r}")
        clean[key] = (str(value) if isinstance(value, int) else field_path(value, what=key) if isinstance(value, FieldPath)
                      else identifier(value, what=key))

    def fill(match: re.Match[str]) -> str:
        if match[1] not in clean:
            line = text.count("\n", 0, match.start()) + 1
            raise ConfigError(f"{source}:{line}: no value for placeholder " + "{{" + match[1] + "}}")
        return clean[match[1]]

    return _PLACEHOLDER.sub(fill, text)


def statement(template: str, **names: str) -> str:
    """A statement with table and field names (validated identifiers) substituted in one place."""
    return render(template, {k: identifier(v, what=k) for k, v in names.items()}, source="statement")


def function_name(name: str) -> str:
    """`name` as `fn::a::b` if it is a SurrealQL function name (fn:: then identifiers joined by ::), else a ConfigError."""
    full = name if isinstance(name, str) and name.startswith("fn::") else f"fn::{name}"
    if not _FUNCTION.fullmatch(full):
        raise ConfigError(f"--function {name!r} is not a function name: write fn::NAME (letters, digits, _ and ::)")
    return full
