"""Named baselines and a tidy history: tag a run (`main`), remove tags, delete and prune runs.

A tag names one finished run and moves when put on another; every command that takes a run takes a
tag (runs/record.py resolve_run). The owner may tag any run, an evaluator only its own runs. Deleting
runs is the owner's only (surql/prune.surql); a tagged run is deleted only when asked.
"""

from __future__ import annotations

import re
from datetime import datetime

from surrealdb import RecordID

from ..model_base import Model
from ..errors import ConfigError, NotFound, PermissionDenied
from ..store.access import require_owner
from ..store.connection import Database, record_str
from .record import TAG_PATTERN, resolve_run

__all__ = ["Tagged", "TagRow", "RemovedRun", "can_be_tag", "check_tag_name", "check_can_tag", "tag_run", "untag", "list_tags", "delete_runs",
           "prune_runs", "DURATION"]

#: A SurrealDB duration as `--older-than` takes it: 30d, 12h, 2w, 1d12h.
DURATION = re.compile(r"(\d+(ns|us|ms|s|m|h|d|w|y))+")
#: What a generated run id looks like: a tag never does, so `x` can always name the run `seval_run:x`.
_RUN_ID = re.compile(r"[a-z0-9]{20}")
#: what deleting runs does, as store.access.require_owner says it when an evaluator asks
_DELETING = "deleting runs rewrites history"


class Tagged(Model):
    """What `tag_run` or `untag` did: tag `name` now names `run` (None: removed) and named `before`."""

    name: str
    run: str | None
    before: str | None = None


class TagRow(Model):
    """A tag as `tag list` shows it: its name, the run it names, who put it there and when."""

    name: str
    run: str
    by: str | None = None
    at: datetime


class RemovedRun(Model):
    """A run `delete_runs` or `prune_runs` removed (or, with dry_run, would remove)."""

    run: str
    created_at: datetime
    label: str | None = None
    #: its seval_ranking rows (None in a dry run: not counted)
    rankings: int | None = None
    tags: list[str] = []


def check_tag_name(name: str) -> str:
    """`name` if it can be a tag: letters, digits, `_`, `.`, `-`, starting with a letter, at most 64
    characters, neither `latest` nor `previous` nor shaped like a generated run id; else ConfigError."""
    if not TAG_PATTERN.fullmatch(name):
        raise ConfigError(f"tag {name!r} is not a valid name: start with a letter, then letters, digits, _ . or -"
                          " (at most 64 characters)")
    if name in {"latest", "previous"} or _RUN_ID.fullmatch(name):
        raise ConfigError(f"tag {name!r} would read as a run reference: choose another name")
    return name


def can_be_tag(name: str) -> bool:
    """`name` is a valid tag name (check_tag_name would accept it)."""
    try:
        check_tag_name(name)
    except ConfigError:
        return False
    return True


def check_can_tag(db: Database, name: str) -> str:
    """`name`, checked before a run is made to carry it (`evaluate --tag`): a valid tag name, no run's id, and, for
    an evaluator, no tag sitting on a run of another user (ConfigError, PermissionDenied)."""
    check_tag_name(name)
    if db.value("RETURN fn::seval::is_run_id($name)", {"name": name}):
        raise ConfigError(f"tag {name!r} is the id of run seval_run:{name}: choose another name")
    before = db.value("RETURN fn::seval::tagged_run($name)", {"name": name})
    if before is not None and not _mine(db, before):
        raise PermissionDenied(f"tag {name}: {record_str(before)} is not a run of this evaluator account, "
                               "which may move a tag only off its own runs; sign in as an owner to do it")
    return name


def list_tags(db: Database) -> list[TagRow]:
    """Every tag, by name, with the run it names."""
    return [TagRow(name=t["name"], run=record_str(t["run"]), by=t.get("by"), at=t["at"]) for t in db.value("RETURN fn::seval::tags()")]


def _mine(db: Database, run: RecordID) -> bool:
    """The signed-in user may tag `run`: a system user, or the record user who created it."""
    return bool(db.value("RETURN fn::seval::is_mine($run)", {"run": run}))


def tag_run(db: Database, run: str | RecordID, name: str, *, by: str | None = None) -> Tagged:
    """Put tag `name` on the finished run `run` names (an id, `latest`, `previous` or a tag), moving it
    from the run it named before. An evaluator may tag only its own runs and move a tag only off its own
    run (PermissionDenied)."""
    check_can_tag(db, name)
    run_id = resolve_run(db, run)
    before = db.value("RETURN fn::seval::tagged_run($name)", {"name": name})
    for target in (run_id, before):
        if target is not None and not _mine(db, target):
            raise PermissionDenied(f"tag {name}: {record_str(target)} is not a run of this evaluator account, "
                                   "which may tag only its own runs; sign in as an owner to do it")
    db.value("RETURN fn::seval::tag_run($name, $run, $by)", {"name": name, "run": run_id, "by": by})
    return Tagged(name=name, run=record_str(run_id), before=record_str(before) if before is not None else None)


def untag(db: Database, name: str) -> Tagged:
    """Remove tag `name` (NotFound when there is none); an evaluator only from its own run."""
    check_tag_name(name)
    before = db.value("RETURN fn::seval::tagged_run($name)", {"name": name})
    if before is None:
        raise NotFound(f"no tag {name}: `surreal-eval tag list` shows the tags")
    if not _mine(db, before):
        raise PermissionDenied(f"tag {name} sits on {record_str(before)}, not a run of this evaluator account; "
                               "sign in as an owner to remove it")
    db.value("RETURN fn::seval::untag($name)", {"name": name})
    return Tagged(name=name, run=None, before=record_str(before))


def _removed(rows: list[dict]) -> list[RemovedRun]:
    return [RemovedRun(**{**row, "run": record_str(row["id"])}) for row in rows]


def delete_runs(db: Database, runs: list[str | RecordID], *, include_tagged: bool = False,
                dry_run: bool = False) -> list[RemovedRun]:
    """Delete the finished runs `runs` name (ids, `latest`, `previous`, tags) with their rankings and tags;
    returns them, oldest first. Refused (ConfigError, nothing deleted) when one carries a tag, unless
    `include_tagged`; NotFound for a name that is no finished run; owner only (PermissionDenied)."""
    require_owner(db, _DELETING)
    ids = list(dict.fromkeys(resolve_run(db, ref) for ref in runs))
    tags = db.value("RETURN fn::seval::tags_on($runs)", {"runs": ids})
    if tags and not include_tagged:
        named = ", ".join(f"{record_str(t['run'])} ({t['name']})" for t in tags)
        raise ConfigError(f"tagged run {named} kept: remove the tag first (`surreal-eval tag remove NAME`) or pass --include-tagged")
    if dry_run:
        rows = db.value("RETURN fn::seval::runs_described($runs)", {"runs": ids})
        return _removed([{**r, "tags": [t["name"] for t in tags if t["run"] == r["id"]]} for r in rows])
    return _removed(db.value("RETURN fn::seval::delete_runs($runs)", {"runs": ids}))


def prune_runs(db: Database, *, keep: int, older_than: str | None = None, include_tagged: bool = False,
               dry_run: bool = False) -> list[RemovedRun]:
    """Delete every finished run but the `keep` newest (all golden sets together), only those older than
    `older_than` (a duration: 30d, 12h) when given, never a tagged run unless `include_tagged`; returns
    them, oldest first (with `dry_run` removes nothing). Owner only (PermissionDenied)."""
    require_owner(db, _DELETING)
    if keep < 0:
        raise ConfigError(f"--keep must be 0 or more, got {keep}")
    if older_than is not None and not DURATION.fullmatch(older_than):
        raise ConfigError(f"--older-than {older_than!r} is not a duration: write e.g. 30d, 12h or 2w")
    rows = db.value("RETURN fn::seval::prunable_runs($keep, <duration> $age, $tagged)" if older_than
                    else "RETURN fn::seval::prunable_runs($keep, NONE, $tagged)",
                    {"keep": keep, "age": older_than, "tagged": include_tagged})
    if dry_run or not rows:
        return _removed(rows)
    return _removed(db.value("RETURN fn::seval::delete_runs($runs)", {"runs": [r["id"] for r in rows]}))
