"""Evaluator accounts: record users that may read the corpus and golden set and write run history."""

from __future__ import annotations

from ..errors import PermissionDenied, Rejected, SurrealEvalError
from .connection import Database
from .schema import identifier, statement

__all__ = ["grant_evaluator", "make_strict", "require_owner", "revoke_evaluator"]


def make_strict(db: Database) -> None:
    """Put the database in strict mode: a table must be defined before anyone can write to it.

    Without it a record user's CREATE, INSERT, UPSERT or RELATE on an unknown name defines that
    table (PERMISSIONS NONE), and the owner's later `load corpus --corpus NAME` is refused.
    """
    name = db.settings.database
    try:
        db.query(statement("DEFINE DATABASE OVERWRITE {{db}} STRICT", db=name))
    except SurrealEvalError as error:
        raise Rejected(
            f"cannot put database {name} in strict mode ({error}): a namespace owner must run "
            f"`DEFINE DATABASE OVERWRITE {name} STRICT` before evaluator accounts are granted"
        ) from error


def grant_evaluator(db: Database, name: str, password: str) -> None:
    """Create evaluator account `name` (or reset its password); needs a system user's connection.

    The database is put in strict mode first (`make_strict`), so that no evaluator can define a table.
    """
    account = identifier(name, what="evaluator name")
    make_strict(db)
    db.query("RETURN fn::seval::grant_evaluator($name, $pass)", {"name": account, "pass": password})


def revoke_evaluator(db: Database, name: str) -> None:
    """Delete evaluator account `name`."""
    db.query("RETURN fn::seval::revoke_evaluator($name)", {"name": identifier(name, what="evaluator name")})


def require_owner(db: Database, doing: str) -> None:
    """Refuse (PermissionDenied, exit 5) a record user, the evaluator account, before anything is written:
    `doing` says what the command writes, e.g. "golden judge writes model judgments"."""
    if db.value("RETURN fn::seval::signed_in_as_evaluator()"):
        raise PermissionDenied(f"{doing}: an evaluator account may not; sign in as an owner to do it")
