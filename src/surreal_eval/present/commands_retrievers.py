"""The registry of retrievers: retriever list, retriever add, retriever remove."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from .app import JsonOpt, app, fail, out, plain, show_rows, with_db
from .deprecated import alias_command

retriever_app = typer.Typer(help="The retrievers a run evaluates: list them, add your own (a SurrealQL function, or a fusion of lists), "
                                 "remove it.", no_args_is_help=True)
app.add_typer(retriever_app, name="retriever")


@retriever_app.command("list")
def retriever_list(as_json: JsonOpt = False) -> None:
    """List the registry of retrievers: the candidate lists each fuses, how, and which run by default: `retriever list`."""
    from ..store.registry import registry
    from . import run_tables as display

    show_rows(registry, as_json, lambda rows: display.show_registry(out, rows))


alias_command(app, "retrievers", "retrievers", "retriever list", retriever_list)


@retriever_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The retriever's name in runs, history and reports (an identifier).")],
    function: Annotated[Optional[str], typer.Option(
        "--function", help="Your function fn::NAME, returning records best first or {id, score} objects: a string parameter "
                           "gets the question's text, an array<float> its embedding, an int the depth k, any other --arg.")] = None,
    arg: Annotated[Optional[list[str]], typer.Option(
        "--arg", help="NAME=VALUE: the value of the function's parameter $NAME (JSON when it parses, else text); repeatable.")] = None,
    per_k: Annotated[bool, typer.Option(
        "--per-k", help="Call the function once per k of a run and score each k on its own list (it cannot be fused then).")] = False,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="The corpus table the function returns records of (default: the one holding "
                                                                   "records).")] = None,
    text: Annotated[Optional[str], typer.Option("--text", help="Call the function on this text when registering "
                                                               "(default: the first golden question).")] = None,
    fuse: Annotated[Optional[str], typer.Option("--fuse", help="Register a fusion instead: rrf or linear.")] = None,
    lists: Annotated[Optional[list[str]], typer.Option(
        "--lists", help="The candidate lists --fuse fuses, in order: bm25, vector and your function retrievers.")] = None,
    default: Annotated[bool, typer.Option("--default/--no-default", help="Evaluate it when no --retriever is named "
                                          "(--no-default: only when named).")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Register your SurrealQL function (--function) or a fusion of candidate lists (--fuse, --lists) as a retriever:
    `retriever add mine --function fn::my_search`."""
    from ..store.user_retrievers import PROBE_K, SHALLOW_K, add_function_retriever, add_fused_retriever

    if (function is None) == (fuse is None):
        fail(ConfigError("give either --function fn::NAME or --fuse rrf|linear with --lists"))
    if fuse is not None and not lists:
        fail(ConfigError("--fuse needs --lists, e.g. --lists bm25,mine"))
    if function is not None and lists:
        fail(ConfigError("--lists goes with --fuse, not with --function"))
    if fuse is not None and (arg or per_k):
        fail(ConfigError("--arg and --per-k go with --function, not with --fuse"))
    if function is not None:
        added = with_db(lambda db: add_function_retriever(db, name, function=function, corpus=corpus, by_default=default,
                                                          text=text, args=arg, per_k=per_k))
    else:
        added = with_db(lambda db: add_fused_retriever(db, name, fusion=fuse, lists=lists or [], by_default=default))
    if as_json:
        out.print_json(added.model_dump_json())
        return
    if added.kind == "function":
        on = added.probed_question or "the given text"
        plain(out, f"registered retriever {added.name}: {added.function_name} on corpus {added.corpus} "
                   f"({added.probed_hits} record{'' if added.probed_hits == 1 else 's'} of {added.corpus} for {on}), "
                   f"called as {added.call}" + (" once per k of a run" if added.per_k else ""), soft_wrap=True)
        if not added.prefix and not added.per_k:
            plain(out, f"note: its top {SHALLOW_K} for {on} is not the first {SHALLOW_K} of its top {PROBE_K}: a run scores every k "
                       f"on one call at its deepest k; --per-k calls it once per k", soft_wrap=True)
        if added.repeatable is False:
            plain(out, f"note: a second call for {on} returned another order: ties broken at random (search::rrf does) make two runs "
                       f"on the same data differ; return {{id, score}} objects (the harness orders ties by id) or sort by score, "
                       f"then id", soft_wrap=True)
    else:
        plain(out, f"registered retriever {added.name}: {added.fusion} of {' + '.join(added.lists)}")


@retriever_app.command("remove")
def remove(name: Annotated[str, typer.Argument(help="A retriever you added.")]) -> None:
    """Remove a retriever you added (the harness's own stay); the runs that measured it stay in history: `retriever remove mine`."""
    from ..store.user_retrievers import remove_retriever

    with_db(lambda db: remove_retriever(db, name))
    plain(out, f"removed retriever {name}")
