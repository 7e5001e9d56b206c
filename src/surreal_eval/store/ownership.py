"""What the harness defines, and whether a database already holds definitions of those names that
the harness did not make (the user's own tables, analyzers, functions...).

Every name the harness's scripts define is read from the rendered scripts themselves
(`DEFINE <KIND> OVERWRITE <name> [ON <table>]`), and each import records them in table
`seval_object` (one row per definition, id = `kind:name`). Before anything is applied, every
such name that the database already holds and the harness did not record is a conflict, and the
import is refused naming each one, changing nothing. A database imported by an earlier version of
the harness (table `seval_script` but no `seval_object`) owns what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .connection import Database
from ..errors import InputError

__all__ = ["OWNED_TABLE", "defined_names", "conflicts", "refuse_conflicts", "record_owned"]

OWNED_TABLE = "seval_object"
#: Tables the importer defines in Python rather than in a script.
_PYTHON_TABLES = ("seval_config", "seval_script", OWNED_TABLE)
_DEFINE = re.compile(
    r"\bDEFINE\s+(TABLE|FIELD|INDEX|ANALYZER|FUNCTION|EVENT|ACCESS|PARAM)\s+(?:OVERWRITE\s+|IF\s+NOT\s+EXISTS\s+)?"
    r"([A-Za-z_][\w:.*]*|\$\w+)(?:\s+ON\s+(?:TABLE\s+)?(\w+))?",
    re.IGNORECASE,
)
#: Definitions that live on a table (INFO FOR TABLE), by kind, and INFO's key for each kind.
_ON_TABLE = {"field": "fields", "index": "indexes", "event": "events"}
_ON_DB = {"table": "tables", "analyzer": "analyzers", "function": "functions", "access": "accesses", "param": "params"}


def _strip_comments(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] if line.lstrip().startswith("--") else line for line in text.splitlines())


def defined_names(texts: Iterable[str]) -> list[tuple[str, str]]:
    """Every (kind, name) the rendered scripts `texts` define; a field, index or event as `table.name`."""
    found: dict[tuple[str, str], None] = {("table", t): None for t in _PYTHON_TABLES}
    for text in texts:
        for kind, name, table in _DEFINE.findall(_strip_comments(text)):
            kind = kind.lower()
            if kind == "function":
                name = name.removeprefix("fn::")
            elif kind == "param":
                name = name.removeprefix("$")
            if kind in _ON_TABLE:
                name = f"{table}.{name}"
            found[(kind, name)] = None
    return list(found)


def _existing(db: Database, names: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of `names` the database holds a definition of."""
    info = db.value("INFO FOR DB")
    held = {(kind, name) for kind, key in _ON_DB.items() for name in info.get(key, {})}
    tables = {name.split(".", 1)[0] for kind, name in names if kind in _ON_TABLE} & set(info["tables"])
    for table in sorted(tables):
        table_info = db.value("INFO FOR TABLE $t", {"t": table})
        held |= {(kind, f"{table}.{name}") for kind, key in _ON_TABLE.items() for name in table_info.get(key, {})}
    return {n for n in names if n in held}


def conflicts(db: Database, names: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (kind, name) of `names` the database defines and the harness did not."""
    existing = _existing(db, names)
    if not existing:
        return []
    tables = db.value("INFO FOR DB")["tables"]
    if OWNED_TABLE in tables:
        owned = {(r["kind"], r["name"]) for r in db.value("SELECT kind, name FROM seval_object")}
    elif "seval_script" in tables:  # imported by an earlier version of the harness: it is all the harness's
        return []
    else:
        owned = set()
    # a field, index or event on a table the user owns is reported as that table
    mine = [n for n in names if n in existing and n not in owned]
    user_tables = {name for kind, name in mine if kind == "table"}
    return [n for n in mine if not (n[0] in _ON_TABLE and n[1].split(".", 1)[0] in user_tables)]


def refuse_conflicts(db: Database, names: list[tuple[str, str]], *, action: str = "importing the harness") -> None:
    """An InputError naming each definition of `names` the database holds that the harness did not make."""
    found = conflicts(db, names)
    if found:
        listed = ", ".join(f"{kind} {'fn::' if kind == 'function' else ''}{name}" for kind, name in found)
        raise InputError(f"{action} would redefine what is not the harness's: {listed}; "
                         f"use another database or namespace (nothing was changed)")


def record_owned(db: Database, names: list[tuple[str, str]]) -> None:
    """Record `names` as the harness's own definitions (table seval_object)."""
    db.query(
        "DEFINE TABLE OVERWRITE seval_object SCHEMALESS PERMISSIONS FOR select FULL FOR create, update, delete NONE;"
        "FOR $n IN $names { UPSERT type::record('seval_object', $n[0] + ':' + $n[1]) "
        "CONTENT { kind: $n[0], name: $n[1] } RETURN NONE; };",
        {"names": [list(n) for n in names]},
    )
