"""Options several commands share as a set, defined once: a command decorated with `with_options(SCORING)` takes
them all and receives them as one dict (typer has no option groups of its own)."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer

from ..errors import ConfigError
from .app import DanglingOpt, GoldenOpt, JudgmentsOpt, LevelOpt, NoteOpt, TagOpt, fail, table_name
from .deprecated import LabelOpt, old_label

__all__ = ["Bm25MatchOpt", "FloorOpt", "IdenticalOpt", "NAMING", "Naming", "RETRIEVAL", "RrfOpt", "Retrieval", "SCORING", "Scoring",
           "naming_params", "option_set", "retrieval_params", "scoring_params", "with_options"]

F = TypeVar("F", bound=Callable[..., Any])

IdenticalOpt = Annotated[bool, typer.Option(
    "--ignore-identical-ids", help="Drop a retrieved record whose key is the question's own key before scoring (BEIR's convention).")]

#: the type of the parameter a command decorated with with_options(SCORING) receives them in
Scoring = Optional[dict]


def option_set(**options: Any) -> dict[str, tuple[Any, Any]]:
    """A set of options as with_options takes it: name -> (annotated type, default), each given as its annotated
    type (default None) or as (annotated type, default)."""
    return {name: given if isinstance(given, tuple) else (given, None) for name, given in options.items()}


#: what a run scores against and how: the relevance level of binary metrics, BEIR's identical-id rule, the golden set,
#: its labels whose record is gone and the judgments read
SCORING = option_set(relevance_level=LevelOpt, ignore_identical_ids=(IdenticalOpt, False), golden=GoldenOpt,
                     dangling_labels=DanglingOpt, judgments=JudgmentsOpt)


FloorOpt = Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")]
RrfOpt = Annotated[Optional[int], typer.Option(help="RRF constant.")]
Bm25MatchOpt = Annotated[Optional[str], typer.Option(
    "--bm25-match", help="BM25 keeps records holding any query word (any, the default: OR) or every one (all: AND, as an app querying with @1@).")]

#: the type of the parameter a command decorated with with_options(RETRIEVAL, into="retrieval") receives them in
Retrieval = Optional[dict]
#: how a run's built-in retrievers search and fuse, for the commands that retrieve (evaluate, watch set): not `score`,
#: which reads run files
RETRIEVAL = option_set(floor=FloorOpt, rrf_k=RrfOpt, bm25_match=Bm25MatchOpt)

#: the type of the parameter a command decorated with with_options(NAMING, into="naming") receives them in
Naming = Optional[dict]
#: how the run a command records is named, for the commands that record one (evaluate, score): --tag (a reference),
#: --note (free text) and 0.1's hidden --label (read by naming_params)
NAMING = option_set(tag=TagOpt, note=NoteOpt, label=LabelOpt)


def with_options(shared: dict[str, tuple[Any, Any]], *, into: str = "scoring") -> Callable[[F], F]:
    """Decorator: the command also takes the options `shared` (placed before --json), handed to it together as the
    dict `into` (name -> value given)."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for p in signature.parameters.values() if p.name != into]
        added = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation, default=default)
                 for name, (annotation, default) in shared.items()]
        at = next((i for i, p in enumerate(kept) if p.name == "as_json"), len(kept))
        parameters = [*kept[:at], *added, *kept[at:]]

        @functools.wraps(command)
        def with_shared(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in shared}
            return command(*args, **{into: given}, **kwargs)

        with_shared.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_shared.__annotations__ = {p.name: p.annotation for p in parameters}
        return with_shared  # type: ignore[return-value]

    return decorate


def scoring_params(scoring: dict[str, Any]) -> dict[str, Any]:
    """The run parameters of the SCORING options given (None: the run's default), checked."""
    judgments = scoring.get("judgments")
    if judgments not in (None, "human", "human+model"):
        fail(ConfigError(f"--judgments must be human or human+model, got {judgments!r}"))
    return {"relevance_level": scoring.get("relevance_level"), "ignore_identical_ids": True if scoring.get("ignore_identical_ids") else None,
            "golden": table_name(scoring.get("golden"), "--golden table"), "dangling_labels": scoring.get("dangling_labels"),
            "judgments": judgments}


def naming_params(command: str, naming: dict[str, Any] | None) -> tuple[Optional[str], Optional[str]]:
    """(tag, note) of the NAMING options given to `command`, 0.1's --label read as the new spellings (old_label)."""
    given = naming or {}
    return old_label(command, given.get("label"), given.get("tag"), given.get("note"))


def retrieval_params(retrieval: dict[str, Any] | None) -> dict[str, Any]:
    """The run parameters of the RETRIEVAL options given (None: the run's default), checked."""
    given = retrieval or {}
    match = given.get("bm25_match")
    if match not in (None, "any", "all"):
        fail(ConfigError(f"--bm25-match must be any or all, got {match!r}"))
    return {"floor": given.get("floor"), "rrf_k": given.get("rrf_k"), "bm25_match": match}
