"""The registry of retrievers (table `retriever`, surql/registry.surql), read from the database.

Every retriever an evaluation, tune, diagnose or the benchmarks can name is one row there; nothing
in Python lists them. HARNESS_RETRIEVERS are the rows the harness itself seeds, read from the file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import computed_field

from ..model_base import Model
from .connection import Database
from .schema import surql_dir
from .signatures import bind_parameters, function_parameters
from ..errors import ConfigError, SurrealEvalError
from ..grammar import parse_retrievers

__all__ = ["HARNESS_RETRIEVERS", "Retriever", "registry", "resolve_retrievers", "tuned_by", "check_functions"]

_SEEDED = re.compile(r"^UPSERT seval_retriever:([A-Za-z_][A-Za-z0-9_]*) ", re.MULTILINE)


class Retriever(Model):
    """One registry row: the candidate lists it fuses, how, and where it comes in reports."""

    name: str
    position: int
    lists: list[str]
    fusion: str
    params: dict[str, Any] = {}
    by_default: bool = False
    sweep: str | None = None
    tunes: list[str] = []
    harness: bool = False
    #: a user's retriever function (`retriever add --function`): the function its one list calls, and its corpus table;
    #: what each parameter gets (store/signatures.py; None: text, embedding, k), the --arg values, whether runs call it per k
    function_name: str | None = None
    corpus: str | None = None
    binding: list[str] | None = None
    args: dict[str, Any] = {}
    per_k: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> str:
        """'function' (a user's function), 'fused' (several lists fused) or 'list' (one built-in list as it is)."""
        return "function" if self.function_name else "fused" if len(self.lists) > 1 else "list"


def _harness_retrievers() -> tuple[str, ...]:
    """The names of the rows surql/registry.surql seeds, in the order it seeds them (report order)."""
    return tuple(_SEEDED.findall((surql_dir() / "registry.surql").read_text(encoding="utf-8")))


#: The retrievers the harness defines, in report order (the rows surql/registry.surql seeds; a
#: database may hold more: `registry(db)` reads them all).
HARNESS_RETRIEVERS = _harness_retrievers()


def registry(db: Database) -> list[Retriever]:
    """Every retriever in the database's registry, in report order."""
    rows = db.value("SELECT *, record::id(id) AS name OMIT id FROM seval_retriever ORDER BY position")
    return [Retriever(**{k: v for k, v in row.items() if v is not None}) for row in rows]


def resolve_retrievers(db: Database, names: list[str] | None, corpus: str | None = None) -> list[str]:
    """The retrievers asked for (comma-separated or repeated), in report order; when none are, every retriever the
    registry evaluates by default, yours included (`retriever add` registers one so unless `--no-default`), except
    those whose function searches another corpus table than the run's `corpus` (None: the default corpus)."""
    rows = registry(db)
    if not names and corpus is None and any(r.function_name for r in rows):
        try:
            corpus = db.value("RETURN fn::seval::default_corpus()")
        except SurrealEvalError:  # several corpus tables hold records: the run refuses it in its own words
            corpus = None
    defaults = [] if names else db.value("RETURN fn::seval::default_retrievers($corpus)", {"corpus": corpus})
    chosen = parse_retrievers(names, known=[r.name for r in rows], defaults=defaults)
    check_functions(db, chosen, rows)
    return chosen


def tuned_by(db: Database, param: str) -> str:
    """The retriever `tune` sweeps `param` on when none is named: the first in the registry that tunes it."""
    for row in registry(db):
        if param in row.tunes:
            return row.name
    raise ConfigError(f"no retriever in the registry tunes {param!r}: name one with --retriever")


def check_functions(db: Database, names: list[str], rows: list[Retriever] | None = None) -> None:
    """A ConfigError when a retriever of `names` (or a list it fuses) calls a function the database no longer holds."""
    by_name = {r.name: r for r in (rows if rows is not None else registry(db))}
    calls = {by_name[lst].function_name for n in names if n in by_name for lst in by_name[n].lists
             if lst in by_name and by_name[lst].function_name}
    if not calls:
        return
    held = db.value("INFO FOR DB")["functions"]
    for fn in sorted(calls):
        owner = next(r for r in by_name.values() if r.function_name == fn)
        if fn.removeprefix("fn::") not in held:
            raise ConfigError(f"retriever {owner.name} calls {fn}, which no longer exists: define it again, "
                              f"or `surreal-eval retriever remove {owner.name}`")
        _same_signature(owner, held[fn.removeprefix("fn::")])


def _same_signature(row: Retriever, ddl: str) -> None:
    """A ConfigError naming retriever `row` and the way on when its function's parameters, as defined now, no longer bind as
    they did when it was registered (the function was redefined with another signature)."""
    params = function_parameters(ddl)
    registered = row.binding if row.binding is not None else ["text", "embedding", "k"]  # a row of 0.1: called so (function_dispatch)
    try:
        now = bind_parameters(row.function_name, params, row.args)
    except SurrealEvalError as error:
        now, why = None, f"which do not bind ({error})"
    else:
        why = f"which get {', '.join(now)}"
    if now != registered:
        given = "".join(f" --arg {name}={json.dumps(value)}" for name, value in row.args.items())
        have = ", ".join(f"{p}: {t}" for p, t in params) or "none"
        raise ConfigError(f"retriever {row.name}: {row.function_name} was redefined since it was registered: its parameters are now ({have}), "
                          f"{why}, and were registered to get {', '.join(registered)}; register it again: `surreal-eval retriever "
                          f"remove {row.name}` then `surreal-eval retriever add {row.name} --function {row.function_name}{given}`")
