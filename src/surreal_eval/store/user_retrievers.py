"""Retrievers a user adds to the registry (table `retriever`, rows with harness = false).

`add_function_retriever` registers a SurrealQL function the user wrote, taking (text: string,
embedding: option<array<number>>, k: int) and returning records best first or {id, score} objects:
its row names the function (`function_name`) and its corpus table, and its one candidate list is
the retriever's own name, fetched by fn::seval::function_candidates, which store/schema.py generates with
one branch per such row (function_dispatch) at every add, remove and import. Before anything is
written, the function's signature is read from `INFO FOR DB` and it is called on one golden
question (or a given text); a function that does not exist, has another signature, returns
something else or records of another table is refused, and the database is left as it was.

`add_fused_retriever` registers an RRF or linear fusion of any candidate lists: the built-in
`bm25` and `vector` and the user's function lists. `remove_retriever` removes a user's row.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import BaseModel

from .connection import Database, record_str
from .registry import registry
from .schema import apply, function_dispatch, function_name, function_probe, identifier
from ..errors import ConfigError, InputError, QueryFailed, Rejected

__all__ = ["AddedRetriever", "add_function_retriever", "add_fused_retriever", "remove_retriever",
           "function_parameters", "FUSIONS", "PROBE_K"]

#: The fusions `retriever add --fuse` takes (registry.surql's fn::fused); linear fuses exactly two lists.
FUSIONS = ("rrf", "linear")
#: How many records the registration call asks the function for.
PROBE_K = 10
BUILTIN_LISTS = ("bm25", "vector")
_SIGNATURE = re.compile(r"^DEFINE FUNCTION\s+(?:OVERWRITE\s+|IF NOT EXISTS\s+)?fn::[\w:]+\s*\(")
#: The types each parameter may be declared with, by position: any type that takes these values.
_ACCEPTS = (
    ("text", {"string", "any"}, "string"),
    ("embedding", None, "option<array<number>>"),
    ("k", {"int", "number", "any"}, "int"),
)
_EMBEDDING = re.compile(r"^(any|none \| array(<(number|float|decimal|int)>)?|array(<(number|float|decimal|int)>)? \| none)$")


class AddedRetriever(BaseModel):
    """What `retriever add` registered: the row, and what the function returned on the registration call."""

    name: str
    kind: str
    lists: list[str]
    fusion: str
    function_name: Optional[str] = None
    corpus: Optional[str] = None
    by_default: bool = False
    #: the registration call: the question it was called on (or None for a given text), how many records it returned
    probed_question: Optional[str] = None
    probed_hits: Optional[int] = None


def function_parameters(ddl: str) -> list[tuple[str, str]]:
    """The (name, type) of each parameter of the function defined by `ddl` (an INFO FOR DB entry)."""
    opening = _SIGNATURE.match(ddl)
    if opening is None:
        raise QueryFailed(f"cannot read the parameters of {ddl[:80]!r}")
    depth, start, params, i = 0, opening.end(), [], opening.end()
    for i in range(opening.end(), len(ddl)):
        ch = ddl[i]
        if ch in "<([":
            depth += 1
        elif ch in ">])" and depth > 0:
            depth -= 1
        elif ch in ",)" and depth == 0:
            if ddl[start:i].strip():
                params.append(ddl[start:i].strip())
            start = i + 1
            if ch == ")":
                break
    return [(p.split(":", 1)[0].strip(), p.split(":", 1)[1].strip() if ":" in p else "any") for p in params]


def _check_signature(fn: str, ddl: str) -> None:
    params = function_parameters(ddl)
    wanted = ", ".join(f"${n}: {t}" for n, _, t in _ACCEPTS)
    got = ", ".join(f"{n}: {t}" for n, t in params)
    fits = len(params) == 3 and all(
        (_EMBEDDING.match(ty) if accepted is None else ty in accepted) for (_, ty), (_, accepted, _) in zip(params, _ACCEPTS))
    if not fits:
        raise InputError(f"{fn}({got}) has another signature: a retriever function takes ({wanted}) "
                         "and returns records best first or {id, score} objects")


def _taken_names(db: Database) -> set[str]:
    """Every name a new retriever may not take: the retrievers, their sweeps, and the built-in candidate lists."""
    rows = registry(db)
    return {r.name for r in rows} | {r.sweep for r in rows if r.sweep} | set(BUILTIN_LISTS)


def _new_name(db: Database, name: str) -> str:
    name = identifier(name, what="retriever name")
    if name in _taken_names(db):
        raise InputError(f"retriever name {name} is taken (a retriever, sweep or candidate list of that name exists): "
                         f"choose another (`surreal-eval retrievers` lists them)")
    return name


def _position(db: Database) -> int:
    return (db.value("RETURN math::max((SELECT VALUE position FROM seval_retriever)) ?? 0") or 0) + 10


def _register(db: Database, name: str, row: dict[str, Any]) -> None:
    """Create retriever row `name` and regenerate the function dispatch over the rows with it, in one transaction."""
    rows = db.value("SELECT record::id(id) AS name, function_name FROM seval_retriever WHERE function_name != NONE")
    if row.get("function_name"):
        rows.append({"name": name, "function_name": row["function_name"]})
    apply(db, "CREATE type::record('seval_retriever', $name) CONTENT $row RETURN NONE;\n" + function_dispatch(db, rows=rows),
          {"name": name, "row": row})


def _probe(db: Database, name: str, fn: str, corpus: str, text: str | None) -> tuple[str | None, int]:
    """Call `fn` on the first golden question (or on `text`) and check what it returns; (question, hits)."""
    if text is None:
        question = db.value("SELECT id, text, embedding FROM seval_question ORDER BY id LIMIT 1")
        if not question:
            raise InputError(f"the golden set is empty: give --text to call {fn} on when registering it")
        question = question[0]
    else:
        question = {"id": None, "text": text, "embedding": None}
    where = record_str(question["id"]) if question["id"] is not None else f"text {text!r}"
    try:
        hits = db.value(function_probe(fn),
                        {"name": name, "text": question["text"], "embedding": question["embedding"],
                         "corpus": corpus, "k": PROBE_K})
    except (Rejected, QueryFailed, ConfigError) as error:
        raise InputError(f"{fn} on {where}: {error}") from None
    return (record_str(question["id"]) if question["id"] is not None else None), len(hits)


def add_function_retriever(db: Database, name: str, *, function: str, corpus: str = "seval_article",
                           by_default: bool = False, text: str | None = None) -> AddedRetriever:
    """Register the user's function `function` as retriever `name` over corpus table `corpus`; see the module docstring."""
    name = _new_name(db, name)
    fn = function_name(function)
    corpus = identifier(corpus, what="--corpus table")
    if not db.value("RETURN record::exists(type::record('seval_corpus', $c))", {"c": corpus}):
        raise InputError(f"--corpus {corpus} is not a corpus table: attach it first (surreal-eval attach), or load one")
    ddl = db.value("INFO FOR DB")["functions"].get(fn.removeprefix("fn::"))
    if ddl is None:
        raise InputError(f"function {fn} does not exist in this database: define it first (DEFINE FUNCTION {fn}(...))")
    if db.value("RETURN record::exists(type::record('seval_object', 'function:' + $f))", {"f": fn.removeprefix("fn::")}):
        raise InputError(f"function {fn} is the harness's own: register a function you wrote")
    _check_signature(fn, ddl)
    question, hits = _probe(db, name, fn, corpus, text)
    row = {"position": _position(db), "lists": [name], "fusion": "none", "by_default": by_default,
           "function_name": fn, "corpus": corpus, "harness": False}
    _register(db, name, row)
    return AddedRetriever(name=name, kind="function", lists=[name], fusion="none", function_name=fn, corpus=corpus,
                          by_default=by_default, probed_question=question, probed_hits=hits)


def add_fused_retriever(db: Database, name: str, *, fusion: str, lists: list[str], by_default: bool = False) -> AddedRetriever:
    """Register retriever `name` fusing candidate lists `lists` (bm25, vector, users' function retrievers) by `fusion`."""
    name = _new_name(db, name)
    if fusion not in FUSIONS:
        raise InputError(f"--fuse {fusion!r} is not a fusion: use {' or '.join(FUSIONS)}")
    wanted = [n.strip() for item in lists for n in item.split(",") if n.strip()]
    functions = {r.name: r for r in registry(db) if r.function_name}
    known = [*BUILTIN_LISTS, *functions]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise InputError(f"--lists {', '.join(unknown)}: not a candidate list; the lists are {', '.join(known)}")
    if len(set(wanted)) != len(wanted) or len(wanted) < 2 or (fusion == "linear" and len(wanted) != 2):
        raise InputError(f"--lists {','.join(wanted)}: {fusion} fuses {'exactly two' if fusion == 'linear' else 'two or more'} "
                         f"different lists")
    corpora = sorted({functions[n].corpus for n in wanted if n in functions})
    if len(corpora) > 1:
        raise InputError(f"--lists {','.join(wanted)}: the functions search different tables ({', '.join(corpora)}); "
                         f"a run has one corpus")
    _register(db, name, {"position": _position(db), "lists": wanted, "fusion": fusion, "by_default": by_default, "harness": False})
    return AddedRetriever(name=name, kind="fused", lists=wanted, fusion=fusion, by_default=by_default)


def remove_retriever(db: Database, name: str) -> None:
    """Remove user retriever `name` (never a harness row, a list another retriever fuses, or one being watched)."""
    rows = {r.name: r for r in registry(db)}
    if name not in rows:
        raise InputError(f"no retriever {name}: `surreal-eval retrievers` lists them")
    if rows[name].harness:
        raise InputError(f"retriever {name} is the harness's own: remove takes a retriever you added")
    users = [r.name for r in rows.values() if r.name != name and name in r.lists]
    if users:
        raise InputError(f"retriever {', '.join(users)} fuses {name}: remove {'it' if len(users) == 1 else 'them'} first")
    watched = db.value("SELECT VALUE retrievers FROM ONLY seval_watch:current") or []
    if name in watched:
        raise InputError(f"the after-ingest evaluation runs {name}: change it first (surreal-eval watch)")
    rest = [{"name": r.name, "function_name": r.function_name} for r in rows.values() if r.function_name and r.name != name]
    apply(db, "DELETE type::record('seval_retriever', $name);\n" + function_dispatch(db, rows=rest), {"name": name})

