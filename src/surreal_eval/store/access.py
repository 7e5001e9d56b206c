"""Evaluator accounts: record users that may read the corpus and golden set and write run history."""

from __future__ import annotations

from .connection import Database
from .schema import identifier

__all__ = ["grant_evaluator", "revoke_evaluator"]


def grant_evaluator(db: Database, name: str, password: str) -> None:
    """Create evaluator account `name` (or reset its password); needs a system user's connection."""
    db.query("RETURN fn::grant_evaluator($name, $pass)", {"name": identifier(name, what="evaluator name"), "pass": password})


def revoke_evaluator(db: Database, name: str) -> None:
    """Delete evaluator account `name`."""
    db.query("RETURN fn::revoke_evaluator($name)", {"name": identifier(name, what="evaluator name")})
