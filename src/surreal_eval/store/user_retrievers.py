"""Retrievers a user adds to the registry (table `retriever`, rows with harness = false).

`add_function_retriever` registers a SurrealQL function the user wrote, of any parameters the
question's text, embedding and the depth k bind to by type or name, the others given with `--arg`
(store/signatures.py), returning records best first or {id, score} objects: its row names the
function (`function_name`), what each parameter gets (`binding`, `args`), its corpus table and
whether runs call it once per k (`per_k`) and whether a run that names no retriever runs it (`by_default`,
yes unless asked otherwise); its one candidate list is the retriever's own name,
fetched by fn::seval::function_candidates, which store/schema.py generates with one branch per such
row (function_dispatch) at every add, remove and import. Before anything is written, the function's
parameters are read from `INFO FOR DB` and bound, and it is called on one golden question (or a given
text) at k = PROBE_K and at k = SHALLOW_K; a function that does not exist, whose parameters do not
bind, that returns something else or records of another table is refused, and the database is left as
it was. Whether its top SHALLOW_K is the first SHALLOW_K of its top PROBE_K is reported (`prefix`).

`add_fused_retriever` registers an RRF or linear fusion of any candidate lists: the built-in
`bm25` and `vector` and the user's function lists (not a per-k one). `remove_retriever` removes a user's row.
"""

from __future__ import annotations

from typing import Any, Optional


from ..model_base import Model
from .connection import Database, record_str
from .golden import golden_rows, golden_set
from .registry import registry
from .schema import apply, function_dispatch, function_name, function_probe, identifier
from .signatures import bind_parameters, describe_binding, function_parameters, parse_args
from ..errors import ConfigError, InputError, QueryFailed, Rejected

__all__ = ["AddedRetriever", "add_function_retriever", "add_fused_retriever", "remove_retriever",
           "function_parameters", "FUSIONS", "PROBE_K", "SHALLOW_K"]

#: The fusions `retriever add --fuse` takes (registry.surql's fn::fused); linear fuses exactly two lists.
FUSIONS = ("rrf", "linear")
#: How many records the registration call asks the function for, and the shallower k it is asked
#: again at, to see whether its top SHALLOW_K is the first SHALLOW_K of its top PROBE_K.
PROBE_K = 10
SHALLOW_K = 3
BUILTIN_LISTS = ("bm25", "vector")


class AddedRetriever(Model):
    """What `retriever add` registered: the row, and what the function returned on the registration call."""

    name: str
    kind: str
    lists: list[str]
    fusion: str
    function_name: Optional[str] = None
    corpus: Optional[str] = None
    by_default: bool = False
    #: what each parameter gets ('text', 'embedding', 'k', 'arg:NAME'), the --arg values, the call as registered
    binding: Optional[list[str]] = None
    args: dict[str, Any] = {}
    call: Optional[str] = None
    per_k: bool = False
    #: the registration call: the question it was called on (or None for a given text), how many records it returned
    probed_question: Optional[str] = None
    probed_hits: Optional[int] = None
    #: whether its top SHALLOW_K there was the first SHALLOW_K of its top PROBE_K (None for a fusion)
    prefix: Optional[bool] = None
    #: whether a second call at PROBE_K returned the same records in the same order (False: ties broken at random, as
    #: `search::rrf` does, so two runs on the same data can differ; None for a fusion)
    repeatable: Optional[bool] = None


def _taken_names(db: Database) -> set[str]:
    """Every name a new retriever may not take: the retrievers, their sweeps, and the built-in candidate lists."""
    rows = registry(db)
    return {r.name for r in rows} | {r.sweep for r in rows if r.sweep} | set(BUILTIN_LISTS)


def _new_name(db: Database, name: str) -> str:
    name = identifier(name, what="retriever name")
    if name in _taken_names(db):
        raise InputError(f"retriever name {name} is taken (a retriever, sweep or candidate list of that name exists): "
                         f"choose another (`surreal-eval retriever list` lists them)")
    return name


def _position(db: Database) -> int:
    return (db.value("RETURN math::max((SELECT VALUE position FROM seval_retriever)) ?? 0") or 0) + 10


def _register(db: Database, name: str, row: dict[str, Any]) -> None:
    """Create retriever row `name` and regenerate the function dispatch over the rows with it, in one transaction."""
    rows = db.value("SELECT record::id(id) AS name, function_name, binding FROM seval_retriever WHERE function_name != NONE")
    if row.get("function_name"):
        rows.append({"name": name, "function_name": row["function_name"], "binding": row["binding"]})
    apply(db, "CREATE type::record('seval_retriever', $name) CONTENT $row RETURN NONE;\n" + function_dispatch(db, rows=rows),
          {"name": name, "row": row})


def _probe(db: Database, name: str, fn: str, binding: list[str], args: dict[str, Any], corpus: str,
           text: str | None) -> tuple[str | None, list[Any], list[Any], list[Any]]:
    """Call `fn` on the first question of the default golden set (or on `text`) at PROBE_K, SHALLOW_K and PROBE_K again
    and check what it returns; (question, the ids at PROBE_K, the ids at SHALLOW_K, the ids at PROBE_K the second time)."""
    if text is None:
        questions = golden_rows(db, golden_set(db))
        if not questions:
            raise InputError(f"the golden set is empty: give --text to call {fn} on when registering it")
        question = questions[0]
    else:
        question = {"id": None, "text": text, "embedding": None}
    where = record_str(question["id"]) if question["id"] is not None else f"text {text!r}"
    found = []
    for k in (PROBE_K, SHALLOW_K, PROBE_K):
        try:
            found.append([h["id"] for h in db.value(function_probe(fn, binding), {
                "name": name, "text": question["text"], "embedding": question["embedding"], "corpus": corpus, "k": k, "args": args})])
        except (Rejected, QueryFailed, ConfigError) as error:
            raise InputError(f"{fn} on {where}{'' if k == PROBE_K else f' at k = {k}'}: {error}") from None
    return (record_str(question["id"]) if question["id"] is not None else None), found[0], found[1], found[2]


def add_function_retriever(db: Database, name: str, *, function: str, corpus: str | None = None, by_default: bool = True,
                           text: str | None = None, args: list[str] | dict[str, Any] | None = None,
                           per_k: bool = False) -> AddedRetriever:
    """Register the user's function `function` as retriever `name` over corpus table `corpus`, its parameters
    bound by type or name, `args` (`NAME=VALUE` options, or {NAME: value}) giving the others; runs call it once
    per k when `per_k`; an evaluation that names no retriever runs it unless `by_default` is false. See the module
    docstring."""
    name = _new_name(db, name)
    fn = function_name(function)
    given = dict(args) if isinstance(args, dict) else parse_args(args)
    corpus = identifier(corpus, what="--corpus table") if corpus else db.value("RETURN fn::seval::default_corpus()")
    if not db.value("RETURN record::exists(type::record('seval_corpus', $c))", {"c": corpus}):
        raise InputError(f"--corpus {corpus} is not a corpus table: attach it first (surreal-eval attach), or load one")
    ddl = db.value("INFO FOR DB")["functions"].get(fn.removeprefix("fn::"))
    if ddl is None:
        raise InputError(f"function {fn} does not exist in this database: define it first (DEFINE FUNCTION {fn}(...))")
    if db.value("RETURN record::exists(type::record('seval_object', 'function:' + $f))", {"f": fn.removeprefix("fn::")}):
        raise InputError(f"function {fn} is the harness's own: register a function you wrote")
    params = function_parameters(ddl)
    binding = bind_parameters(fn, params, given)
    question, deep, shallow, again = _probe(db, name, fn, binding, given, corpus, text)
    row = {"position": _position(db), "lists": [name], "fusion": "none", "by_default": by_default, "function_name": fn,
           "corpus": corpus, "harness": False, "binding": binding, "args": given, "per_k": per_k}
    _register(db, name, row)
    call = f"{fn}({describe_binding([p.removeprefix('$') for p, _ in params], binding, given)})"
    return AddedRetriever(name=name, kind="function", lists=[name], fusion="none", function_name=fn, corpus=corpus,
                          by_default=by_default, binding=binding, args=given, call=call, per_k=per_k,
                          probed_question=question, probed_hits=len(deep), prefix=shallow == deep[:SHALLOW_K], repeatable=again == deep)


def add_fused_retriever(db: Database, name: str, *, fusion: str, lists: list[str], by_default: bool = True) -> AddedRetriever:
    """Register retriever `name` fusing candidate lists `lists` (bm25, vector, users' function retrievers) by `fusion`;
    an evaluation that names no retriever runs it unless `by_default` is false."""
    name = _new_name(db, name)
    if fusion not in FUSIONS:
        raise InputError(f"--fuse {fusion!r} is not a fusion: use {' or '.join(FUSIONS)}")
    wanted = [n.strip() for item in lists for n in item.split(",") if n.strip()]
    functions = {r.name: r for r in registry(db) if r.function_name}
    known = [*BUILTIN_LISTS, *functions]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise InputError(f"--lists {', '.join(unknown)}: not a candidate list; the lists are {', '.join(known)}")
    per_k = [n for n in wanted if n in functions and functions[n].per_k]
    if per_k:
        raise InputError(f"--lists {per_k[0]}: retriever {per_k[0]} is --per-k (its list at k is not the top k of a deeper one), "
                         f"and a fusion reads one list per question at the run's depth: register its function again without --per-k to fuse it")
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
        raise InputError(f"no retriever {name}: `surreal-eval retriever list` lists them")
    if rows[name].harness:
        raise InputError(f"retriever {name} is the harness's own: remove takes a retriever you added")
    users = [r.name for r in rows.values() if r.name != name and name in r.lists]
    if users:
        raise InputError(f"retriever {', '.join(users)} fuses {name}: remove {'it' if len(users) == 1 else 'them'} first")
    watched = db.value("SELECT VALUE retrievers FROM ONLY seval_watch:current") or []
    if name in watched:
        raise InputError(f"the after-ingest evaluation runs {name}: change it first (surreal-eval watch)")
    rest = [{"name": r.name, "function_name": r.function_name, "binding": r.binding} for r in rows.values()
            if r.function_name and r.name != name]
    apply(db, "DELETE type::record('seval_retriever', $name);\n" + function_dispatch(db, rows=rest), {"name": name})

