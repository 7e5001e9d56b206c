"""The pieces of `migrate` (store/migrate_prefix.py) that move rows and remove definitions: record ids
rewritten in any value, rows copied in batches, and the statements that remove a list of definitions.

Rows travel as query parameters (the SDK's RecordID values, datetimes to the nanosecond); names are
substituted into statements only through the validated helpers of store/schema.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from surrealdb import RecordID

from .connection import Database
from .schema import PREFIX, function_name, identifier, statement

__all__ = ["BATCH", "renamed", "copy_rows", "insert_rows", "removals", "prefixed_names"]

#: Rows read and written per statement.
BATCH = 500
#: The order definitions are removed in: what lives on a table, tables, then what a table's index may use.
_ORDER = ("index", "event", "field", "table", "access", "analyzer", "function", "param")
_ON_TABLE = {"index": "INDEX", "event": "EVENT", "field": "FIELD"}


def renamed(value: Any, tables: dict[str, str]) -> Any:
    """`value` with every record id of a table in `tables` ({old: new}) made a record id of its new
    table, the key kept, at any depth (objects, arrays, a record key that is itself an array)."""
    if isinstance(value, RecordID):
        table = tables.get(value.table_name, value.table_name)
        key = renamed(value.id, tables)
        return value if table == value.table_name and key is value.id else RecordID(table, key)
    if isinstance(value, dict):
        return {k: renamed(v, tables) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [renamed(v, tables) for v in value]
    return value


def insert_rows(db: Database, table: str, rows: list[dict], *, imported: bool = False) -> None:
    """Insert `rows` (each with its id) into `table`; `imported`: as `surreal import` does (OPTION IMPORT),
    so that no event fires and no field's VALUE is computed again (a run's created_by is kept)."""
    if rows:
        db.query(("OPTION IMPORT;\n" if imported else "") + statement("INSERT INTO {{table}} $rows RETURN NONE;", table=table),
                 {"rows": rows})


def copy_rows(db: Database, old: str, new: str, tables: dict[str, str], *, fix: Callable[[dict], dict] = lambda r: r,
              imported: bool = False, where: str = "") -> int:
    """Copy every row of table `old` (those matching `where`, SurrealQL without values) into table `new`,
    each through `renamed` and then `fix`, BATCH at a time; returns how many."""
    ids = db.value(statement("SELECT VALUE id FROM {{old}}", old=old) + where)
    for start in range(0, len(ids), BATCH):
        rows = db.value("SELECT * FROM $ids", {"ids": ids[start:start + BATCH]})
        insert_rows(db, new, [fix(renamed(row, tables)) for row in rows], imported=imported)
        db.flush_if_full()
    return len(ids)


def removals(names: Iterable[tuple[str, str]], *, with_tables: Iterable[str] = ()) -> list[str]:
    """The statements removing definitions `names` ((kind, name); a field, index or event as
    `table.name`), in an order the engine accepts (an analyzer in use by an index cannot go first);
    one that lives on a table of `with_tables` (removed with it) is left out. Each name is validated."""
    gone = set(with_tables) | {name for kind, name in names if kind == "table"}
    found = []
    for kind, name in sorted(set(names), key=lambda n: (_ORDER.index(n[0]) if n[0] in _ORDER else len(_ORDER), n[1])):
        if kind in _ON_TABLE:
            table, _, item = name.partition(".")
            if table not in gone:
                found.append(statement(f"REMOVE {_ON_TABLE[kind]} IF EXISTS {{{{item}}}} ON {{{{table}}}};", item=item, table=table))
        elif kind == "table":
            found.append(statement("REMOVE TABLE IF EXISTS {{table}};", table=name))
        elif kind == "access":
            found.append(statement("REMOVE ACCESS IF EXISTS {{access}} ON DATABASE;", access=name))
        elif kind == "analyzer":
            found.append(statement("REMOVE ANALYZER IF EXISTS {{analyzer}};", analyzer=name))
        elif kind == "function":
            found.append(f"REMOVE FUNCTION IF EXISTS {function_name(name)};")
        elif kind == "param":
            found.append(f"REMOVE PARAM IF EXISTS ${identifier(name, what='param')};")
    for table in sorted(set(with_tables) - {name for kind, name in names if kind == "table"}):
        found.insert(0, statement("REMOVE TABLE IF EXISTS {{table}};", table=table))
    return found


def prefixed_names(db: Database) -> list[tuple[str, str]]:
    """(kind, name) of every definition in the database that carries the harness's prefix: tables,
    analyzers, accesses and params seval_*, functions fn::seval::*, indexes seval_* on other tables."""
    info = db.value("INFO FOR DB")
    found = [(kind, name) for kind, key in (("table", "tables"), ("analyzer", "analyzers"), ("access", "accesses"),
                                            ("param", "params")) for name in info.get(key, {}) if name.startswith(PREFIX)]
    found += [("function", name) for name in info["functions"] if name.startswith("seval::")]
    for table in sorted(t for t in info["tables"] if not t.startswith(PREFIX)):
        indexes = db.value("INFO FOR TABLE $t", {"t": table})["indexes"]
        found += [("index", f"{table}.{name}") for name in sorted(indexes) if name.startswith(PREFIX)]
    return found
