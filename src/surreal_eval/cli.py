"""The `surreal-eval` command: parses arguments, calls one library function, prints the result."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Callable, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from pydantic import SecretStr

from . import display
from .connection import Database, connect
from .demo import run_demo
from .diagnose import diagnose as diagnose_question
from .errors import ConfigError, InputError, SurrealEvalError
from .evaluation import evaluate as run_evaluation
from .golden import add_articles, add_questions
from .harness import DEMO_DIMENSION, HarnessConfig, harness_config, import_harness, import_seed
from .history import history as read_history
from .loaders import read_articles_jsonl, read_questions_jsonl
from .metrics import parse_ks, parse_metric, parse_weights
from .settings import DEFAULT_URL, Settings

app = typer.Typer(
    help="Retrieval evaluation that lives inside SurrealDB.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
load_app = typer.Typer(help="Load a corpus or a golden set from a file.", no_args_is_help=True)
app.add_typer(load_app, name="load")
export_app = typer.Typer(help="Write a run or the golden set as TREC files, for trec_eval or ranx.", no_args_is_help=True)
app.add_typer(export_app, name="export")

out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, highlight=False, soft_wrap=True)
T = TypeVar("T")


class State:
    settings: Settings
    debug: bool = False


state = State()


def _fail(error: SurrealEvalError) -> NoReturn:
    """Print `error` as one line on stderr and exit with its code (re-raise it with --debug)."""
    if state.debug:
        raise error
    err.print(f"error: {error}", markup=False)
    raise typer.Exit(error.exit_code)


def _run(action: Callable[[], T]) -> T:
    """Run a library call; our errors become one line on stderr and their exit code."""
    try:
        return action()
    except SurrealEvalError as error:
        _fail(error)


def _with_db(action: Callable[[Database], T]) -> T:
    def call() -> T:
        db = connect(state.settings)
        try:
            return action(db)
        finally:
            db.close()

    return _run(call)


@app.callback()
def main(
    url: Annotated[str, typer.Option(envvar="SURREAL_EVAL_URL", help="mem://, surrealkv://PATH, ws://HOST:PORT or http://HOST:PORT.")] = DEFAULT_URL,
    ns: Annotated[str, typer.Option("--ns", envvar="SURREAL_EVAL_NS", help="Namespace.")] = "surreal_eval",
    db: Annotated[str, typer.Option("--db", envvar="SURREAL_EVAL_DB", help="Database.")] = "surreal_eval",
    user: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_USER", help="User to sign in as (servers).")] = None,
    password: Annotated[Optional[str], typer.Option("--pass", envvar="SURREAL_EVAL_PASS", help="Password; prefer the SURREAL_EVAL_PASS variable.", show_default=False)] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logging.")] = False,
) -> None:
    """Retrieval evaluation that lives inside SurrealDB."""
    state.settings = Settings(
        url=url, namespace=ns, database=db, user=user or None,
        password=SecretStr(password) if password else None,
    )
    state.debug = debug
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


@app.command()
def demo(as_json: JsonOpt = False) -> None:
    """Run the lesson's demo in a throwaway in-memory store and print what it shows."""
    report = _run(lambda: run_demo())
    if as_json:
        out.print_json(report.model_dump_json(exclude_none=False))
        return
    display.show_report(out, report, per_question=True)


@app.command()
def init(
    dimension: Annotated[Optional[int], typer.Option(help="Embedding dimension of the corpus (4 with --demo).")] = None,
    demo_seed: Annotated[bool, typer.Option("--demo", help="Also load the lesson's ten articles and eight questions.")] = False,
    knn_depth: Annotated[int, typer.Option(help="Deepest k the vector retriever can return.")] = 100,
    knn_ef: Annotated[int, typer.Option(help="HNSW search width (ef) of the vector retriever.")] = 100,
) -> None:
    """Import the harness's SurrealQL into the database (again is harmless)."""

    def action(db: Database) -> list[str]:
        existing = harness_config(db)
        dim = dimension or (DEMO_DIMENSION if demo_seed else existing.dimension if existing else 384)
        applied = import_harness(db, HarnessConfig(dimension=dim, knn_depth=knn_depth, knn_ef=knn_ef))
        if demo_seed:
            import_seed(db)
        return applied

    applied = _with_db(action)
    out.print(f"imported {', '.join(applied)}{' and the demo seed' if demo_seed else ''} into {state.settings.describe()}")


@load_app.command("corpus")
def load_corpus(path: Annotated[Path, typer.Argument(help="JSONL file: {id, title, content, embedding} per line.")]) -> None:
    """Load articles into the corpus (all or none)."""
    count = _with_db(lambda db: add_articles(db, read_articles_jsonl(path)))
    out.print(f"loaded {count} articles from {path}")


@load_app.command("golden")
def load_golden(path: Annotated[Path, typer.Argument(help="JSONL file: {id, text, embedding, relevant, grades?, category?} per line.")]) -> None:
    """Load golden-set questions (all or none)."""
    count = _with_db(lambda db: add_questions(db, read_questions_jsonl(path)))
    out.print(f"loaded {count} questions from {path}")


@app.command()
def evaluate(
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated.")] = "1,3,5,10",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Retriever(s) to evaluate (default: all).")] = None,
    label: Annotated[Optional[str], typer.Option(help="A label for this run in history.")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    floor: Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")] = None,
    rrf_k: Annotated[Optional[int], typer.Option(help="RRF constant.")] = None,
    depth: Annotated[Optional[int], typer.Option(help="Candidate depth of every retriever (default: deepest k).")] = None,
    weights: Annotated[Optional[str], typer.Option(help="Linear fusion weights BM25,vector (hybrid_linear), e.g. 0.3,0.7.")] = None,
    norm: Annotated[Optional[str], typer.Option(help="Linear fusion score normalisation: minmax or zscore.")] = None,
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate the golden set, record the run in history and print its means."""
    ks = _run(lambda: parse_ks(k))
    params = {"corpus": corpus, "floor": floor, "rrf_k": rrf_k, "depth": depth, "norm": norm,
              "weights": _run(lambda: parse_weights(weights)) if weights else None}
    report = _with_db(lambda db: run_evaluation(
        db, ks=ks, retrievers=retriever, label=label, params=params, per_question=per_question, trigger="cli"))
    if as_json:
        out.print_json(report.model_dump_json(exclude={"per_question"} if not per_question else None))
        return
    display.show_report(out, report, per_question=per_question)


@app.command()
def history(
    metric: Annotated[str, typer.Option(help="Metric to show per retriever, e.g. recall@5 (default: recall at each run's deepest k).")] = "recall",
    limit: Annotated[Optional[int], typer.Option(help="Show only the last N runs.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the run trend: one line per finished run."""
    name, at = (metric, None) if "@" not in metric else tuple(_run(lambda: parse_metric(metric)))
    if "@" not in metric:
        _run(lambda: parse_metric(f"{metric}@1"))
    runs = _with_db(lambda db: read_history(db, limit=limit))
    if as_json:
        out.print_json(data=[r.model_dump(mode="json") for r in runs])
        return
    display.show_history(out, runs, name, at)


@app.command()
def diagnose(
    question: Annotated[str, typer.Argument(help="Question id, e.g. money_back or question:money_back.")],
    k: Annotated[int, typer.Option("--k", min=1, help="How many results per retriever.")] = 5,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    floor: Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")] = None,
) -> None:
    """Show a question's labelled articles beside each retriever's top k, with scores."""
    found = _with_db(lambda db: diagnose_question(db, question, k=k, params={"corpus": corpus, "floor": floor}))
    display.show_diagnosis(out, found)


def _write_lines(lines, output: Optional[Path]) -> int:
    count = 0
    if output is None:
        for line in lines:
            typer.echo(line)
            count += 1
        return count
    try:
        with output.open("w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line + "\n")
                count += 1
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", source=str(output)) from None
    return count


OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")]


@export_app.command("run")
def export_run(
    run: Annotated[str, typer.Argument(help="Run id, e.g. eval_run:abc or abc (see `surreal-eval history`).")],
    fmt: Annotated[str, typer.Option("--format", help="Output format (trec).")] = "trec",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Only these retrievers (default: all in the run).")] = None,
    scores: Annotated[str, typer.Option(help="rank: strictly decreasing scores that keep this run's order; raw: the retrievers' own scores.")] = "rank",
    output: OutputOpt = None,
) -> None:
    """Write a run's rankings as a TREC run file: qid Q0 docid rank score tag (tag = retriever)."""
    from .export import export_run_trec

    if fmt != "trec":
        _fail(ConfigError(f"unknown --format {fmt!r}: trec is supported"))
    count = _with_db(lambda db: _write_lines(export_run_trec(db, run, retrievers=retriever, scores=scores), output))
    if output is not None:
        err.print(f"wrote {count} lines to {output}")


@export_app.command("qrels")
def export_qrels(
    run: Annotated[Optional[str], typer.Option(help="The labels a run scored against (resolved quote labels included); default: the golden set.")] = None,
    output: OutputOpt = None,
) -> None:
    """Write the golden set's labels as TREC qrels: qid 0 docid grade."""
    from .export import export_qrels_trec

    count = _with_db(lambda db: _write_lines(export_qrels_trec(db, run=run), output))
    if output is not None:
        err.print(f"wrote {count} lines to {output}")


@app.command()
def chunk(
    source: Annotated[str, typer.Option("--from", help="Corpus table to cut.")] = "article",
    target: Annotated[str, typer.Option("--into", help="Chunk table to create or refill.")] = ...,
    size: Annotated[int, typer.Option(help="Words per chunk.")] = 200,
    overlap: Annotated[int, typer.Option(help="Words shared by consecutive chunks.")] = 0,
    embedder: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_EMBEDDER", help="openai:MODEL@BASE_URL or local:MODEL.")] = None,
) -> None:
    """Split documents into a chunk table (each chunk keeps its document) and embed the chunks."""
    from .chunking import chunk_corpus
    from .embedders import embedder_from_spec

    if not embedder:
        _fail(ConfigError("chunks need embeddings: pass --embedder or set SURREAL_EVAL_EMBEDDER"))
    model = _run(lambda: embedder_from_spec(embedder))
    report = _with_db(lambda db: chunk_corpus(db, source=source, target=target, size=size, overlap=overlap, embedder=model))
    out.print(f"cut {source} into {report.loaded} chunks in {target} ({size} words, overlap {overlap})")


@app.command()
def watch(
    k: Annotated[str, typer.Option("--k", help="Cutoffs to evaluate after each ingest.")] = "1,3,5,10",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Retriever(s) (default: the four standard ones).")] = None,
    floor: Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")] = None,
    rrf_k: Annotated[Optional[int], typer.Option(help="RRF constant.")] = None,
    off: Annotated[bool, typer.Option("--off", help="Stop evaluating after ingests.")] = False,
) -> None:
    """Evaluate inside the database after every ingest (each `load corpus` records a run by itself)."""
    from .watch import clear_watch, set_watch

    if off:
        _with_db(clear_watch)
        out.print("ingests no longer evaluate")
        return
    ks = _run(lambda: parse_ks(k))
    _with_db(lambda db: set_watch(db, ks=ks, retrievers=retriever, params={"floor": floor, "rrf_k": rrf_k}))
    out.print(f"every ingest now records a run at k = {', '.join(map(str, ks))}")
