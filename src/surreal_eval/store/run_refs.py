"""Which finished run a reference names: `seval_run:x` or `x`, `latest` (the newest finished run), `previous` (the
one before it) or a tag. One reading for every command and every layer (docs/cli-grammar.md)."""

from __future__ import annotations

import re

from surrealdb import RecordID

from ..errors import ConfigError, NotFound
from .connection import Database, record_str, to_record

__all__ = ["TAG_PATTERN", "resolve_run"]

#: What a tag's name looks like (`surreal-eval tag add RUN NAME`): a name a run reference can never be confused with.
TAG_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def resolve_run(db: Database, ref: str | RecordID) -> RecordID:
    """The finished run `ref` names: `seval_run:x` or `x`, `latest` (the newest finished run),
    `previous` (the one before it) or a tag (`surreal-eval tag`). NotFound when there is no such run."""
    if isinstance(ref, str) and ref.strip() in {"latest", "previous"}:
        wanted = 1 if ref.strip() == "latest" else 2
        rows = db.value("RETURN fn::seval::latest_finished_runs($n)", {"n": wanted})
        if len(rows) < wanted:
            raise NotFound(
                "no finished run yet: `surreal-eval evaluate` records one"
                if not rows
                else f"no run before the latest ({record_str(rows[0]['id'])}): `previous` needs two finished runs"
            )
        return rows[-1]["id"]
    if isinstance(ref, str) and not ref.strip():
        raise ConfigError("empty run id: pass seval_run:ID, ID, latest, previous or a tag")
    if isinstance(ref, str) and TAG_PATTERN.fullmatch(ref.strip()):
        tagged = db.value("RETURN fn::seval::tagged_run($name)", {"name": ref.strip()})
        if tagged is not None:
            if not db.value("RETURN fn::seval::is_finished_run($run)", {"run": tagged}):
                raise NotFound(f"tag {ref.strip()} names {record_str(tagged)}, which is no finished run")
            return tagged
    run_id = to_record(ref.strip() if isinstance(ref, str) else ref, "seval_run")
    if not db.value("RETURN fn::seval::is_finished_run($run)", {"run": run_id}):
        tag = f" and no tag {ref.strip()}" if isinstance(ref, str) and TAG_PATTERN.fullmatch(ref.strip()) else ""
        raise NotFound(f"no finished run {record_str(run_id)}{tag}: `surreal-eval runs list` lists the runs and their tags")
    return run_id
