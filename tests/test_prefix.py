"""The harness owns only its own names: everything it defines carries the prefix seval_ (functions
the namespace fn::seval::), so it never claims a name an application chose (the lesson's article,
question, eval_run, english or fn::evaluate)."""

from __future__ import annotations

from surreal_eval import HarnessConfig, import_harness
from surreal_eval.load.attach import attach_table
from surreal_eval.store.schema import PREFIX

from .conftest import fresh_db


def every_name(db) -> list[tuple[str, str]]:
    """(kind, name) of every definition in the database: INFO FOR DB, and each table's fields' tables, indexes and events."""
    info = db.value("INFO FOR DB")
    names = [(kind, name) for kind in ("tables", "analyzers", "functions", "accesses", "params", "users", "models", "apis",
                                       "buckets", "sequences") for name in info.get(kind, {})]
    for table in info["tables"]:
        table_info = db.value("INFO FOR TABLE $t", {"t": table})
        names += [(kind, f"{table}.{name}") for kind in ("indexes", "events") for name in table_info[kind]]
    return names


def unprefixed(names: list[tuple[str, str]]) -> list[tuple[str, str]]:
    def prefixed(kind: str, name: str) -> bool:
        if kind == "functions":
            return name.startswith("seval::")
        if kind in ("indexes", "events"):
            return name.split(".", 1)[1].startswith(PREFIX)
        return name.startswith(PREFIX)
    return [(kind, name) for kind, name in names if not prefixed(kind, name)]


def test_every_name_init_defines_carries_the_prefix():
    db = fresh_db()
    names = every_name(db)
    assert len(names) > 150  # tables, functions, analyzers, the access, indexes and events
    assert unprefixed(names) == []


def test_the_check_fails_on_a_name_without_the_prefix():
    db = fresh_db()
    db.query("DEFINE FUNCTION fn::evaluate($k: int) { RETURN $k }; DEFINE TABLE eval_run SCHEMALESS;"
             "DEFINE INDEX seval_x ON seval_run FIELDS label; DEFINE EVENT nope ON seval_run THEN {}")
    assert sorted(unprefixed(every_name(db))) == [("events", "seval_run.nope"), ("functions", "evaluate"), ("tables", "eval_run")]


def test_an_attach_with_index_defines_only_prefixed_indexes_on_the_users_table():
    db = fresh_db()
    db.query("DEFINE TABLE notes SCHEMALESS; CREATE notes:1 SET body = 'refund policy', vec = [1.0, 0.0, 0.0, 0.0]")
    attach_table(db, "notes", content="body", embedding="vec", index=True)
    assert sorted(db.value("INFO FOR TABLE notes")["indexes"]) == ["seval_notes_body", "seval_notes_vec"]
    import_harness(db, HarnessConfig(dimension=4))
    assert [n for n in unprefixed(every_name(db)) if n != ("tables", "notes")] == []
