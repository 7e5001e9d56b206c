"""The `surreal-eval` command: parses arguments, calls one library function, prints the result."""

from __future__ import annotations

import logging
import sys
import threading
from enum import Enum
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
from .harness import DEMO_DIMENSION, HarnessConfig, harness_config, identifier, import_harness, import_seed
from .history import history as read_history
from .ingest import DEFAULT_BATCH_SIZE, STALE_LOAD, recover_loads
from .ingest import load_beir as ingest_beir
from .ingest import load_corpus as ingest_corpus
from .ingest import load_golden as ingest_golden
from .loaders import read_documents, read_questions
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


def _table(name: Optional[str], what: str) -> Optional[str]:
    """A table name given on the command line, refused unless it is an identifier (None passes)."""
    return None if name is None else _run(lambda: identifier(name, what=what))


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
    access: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_ACCESS", help="Sign in through this record access (evaluator) as --user.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logging.")] = False,
) -> None:
    """Retrieval evaluation that lives inside SurrealDB."""
    state.settings = Settings(
        url=url, namespace=ns, database=db, user=user or None,
        password=SecretStr(password) if password else None, access=access or None,
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
    """Import the harness's SurrealQL into the database (again is harmless); undo a killed load."""
    undone: list[str] = []

    def action(db: Database) -> list[str]:
        # (an embedded store was already put right when it opened)
        undone.extend(recover_loads(db, stale_after=None if db.settings.is_embedded else STALE_LOAD))
        existing = harness_config(db)
        dim = dimension or (DEMO_DIMENSION if demo_seed else existing.dimension if existing else 384)
        applied = import_harness(db, HarnessConfig(dimension=dim, knn_depth=knn_depth, knn_ef=knn_ef))
        if demo_seed:
            import_seed(db)
        return applied

    applied = _with_db(action)
    if undone:
        out.print(f"undid the unfinished load into {' and '.join(undone)}")
    out.print(f"imported {', '.join(applied)}{' and the demo seed' if demo_seed else ''} into {state.settings.describe()}")


class _Progress:
    """Progress of a load or an evaluation on stderr (rich): only on a terminal, once it has run 1 s."""

    def __init__(self) -> None:
        self._bar = None
        self._tasks: dict[str, object] = {}
        self._timer: threading.Timer | None = None
        self._closed = False
        if err.is_terminal:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 TimeElapsedColumn(), console=err, transient=True)
            self._timer = threading.Timer(1.0, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        if not self._closed and self._bar is not None:
            self._bar.start()

    def __call__(self, step: str, done: int, total: Optional[int]) -> None:
        if self._bar is None:
            return
        task = self._tasks.get(step)
        if task is None:
            for earlier in self._tasks.values():  # a new step: the ones before it are finished
                finished = self._bar.tasks[earlier].completed  # type: ignore[index]
                self._bar.update(earlier, total=finished or 1, completed=finished or 1)  # type: ignore[arg-type]
            task = self._tasks[step] = self._bar.add_task(step, total=total)
        counted = f"{step} ({done:,})" if total != 1 else step  # rows so far, for the batched steps
        self._bar.update(task, completed=done, total=total, description=counted)  # type: ignore[arg-type]

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self._bar is not None:
            self._bar.stop()


def _load(action: Callable[[Database, Callable[[str, int, Optional[int]], None]], T], embedder: object = None) -> T:
    """Run a load with a progress display (the library reports progress, the CLI draws it), then
    close the embedder, if any."""
    progress = _Progress()
    try:
        return _with_db(lambda db: action(db, progress))
    finally:
        progress.close()
        close = getattr(embedder, "close", None)
        if callable(close):
            close()


def _embedder(spec: Optional[str]):
    """The embedder a --embedder spec names, or None."""
    if not spec:
        return None
    from .embedders import embedder_from_spec

    return _run(lambda: embedder_from_spec(spec))


def _loaded(report, what: str) -> str:
    """`N what`, and how many of them the embedder embedded."""
    parts = [f"{report.loaded} {what}"]
    if report.embedded:
        parts.append(f"{report.embedded} embedded by the embedder")
    return ", ".join(parts)


def _harness_note(report) -> str:
    dim = report.harness_imported
    return f" (imported the harness with dimension {dim}, taken from the data)" if dim else ""


class DocumentFormat(str, Enum):
    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"
    beir = "beir"


class GoldenFormat(str, Enum):
    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"
    beir = "beir"
    trec = "trec"


EmbedderOpt = Annotated[Optional[str], typer.Option(
    "--embedder", envvar="SURREAL_EVAL_EMBEDDER",
    help="Compute embeddings the data lacks: openai:MODEL@BASE_URL or local:MODEL.")]
BatchOpt = Annotated[int, typer.Option("--batch-size", min=1, help="Rows per INSERT while staging (memory stays bounded by it).")]
SplitHelp = "BEIR: which qrels/<split>.tsv (default test); the split given to questions that name none."


def _ingest_note(report) -> None:
    """Say which run the ingest recorded (surreal-eval watch), or that its evaluation failed."""
    if report.run:
        out.print(f"the ingest recorded run {report.run} (surreal-eval history)")
    if report.evaluation_error:
        err.print(f"warning: loaded, but the evaluation after the ingest failed: {report.evaluation_error}", markup=False)


@load_app.command("corpus")
def load_corpus(
    path: Annotated[Path, typer.Argument(help="JSONL or CSV file ({id, title, content or text, embedding?, ...}), or a BEIR folder.")],
    table: Annotated[str, typer.Option("--table", help="Corpus table to load into (created if new).")] = "article",
    fmt: Annotated[DocumentFormat, typer.Option("--format", help="File format; auto: by suffix, a folder is BEIR.")] = DocumentFormat.auto,
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
) -> None:
    """Load documents into a corpus table (all or none, upsert by id), then build its BM25 and HNSW indexes.

    Imports the harness first if the database has none, with the dimension of the data's embeddings.
    """
    _table(table, "--table")
    model = _embedder(embedder)
    report = _load(lambda db, progress: ingest_corpus(
        db, read_documents(path, format=fmt.value), table=table, embedder=model, batch_size=batch_size,
        progress=progress, create_harness=True, source=str(path)), model)
    what = "articles" if report.table == "article" else "documents"
    out.print(f"loaded {_loaded(report, what)} into {report.table} from {path} in {report.seconds:.1f} s{_harness_note(report)}")
    _ingest_note(report)


@load_app.command("golden")
def load_golden(
    path: Annotated[Path, typer.Argument(help="JSONL or CSV file ({id, text, embedding?, relevant, ...}), a BEIR folder, or TREC qrels.")],
    fmt: Annotated[GoldenFormat, typer.Option("--format", help="File format; auto: by suffix, a folder is BEIR, other files TREC qrels.")] = GoldenFormat.auto,
    split: Annotated[Optional[str], typer.Option(help=SplitHelp)] = None,
    queries: Annotated[Optional[Path], typer.Option(help="TREC: the questions' text, JSONL {_id, text} or TSV id<TAB>text.")] = None,
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
) -> None:
    """Load golden-set questions (all or none, upsert by id); their labels must name stored articles."""
    model = _embedder(embedder)
    report = _load(lambda db, progress: ingest_golden(
        db, read_questions(path, format=fmt.value, split=split, queries=queries), embedder=model,
        batch_size=batch_size, progress=progress, create_harness=True), model)
    skipped = f"; skipped {report.skipped} queries with no judgment" if report.skipped else ""
    out.print(f"loaded {_loaded(report, 'questions')} ({report.labels} labels) from {path}{skipped} "
              f"in {report.seconds:.1f} s{_harness_note(report)}")


@load_app.command("beir")
def load_beir(
    folder: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv, embeddings/ (optional).")],
    split: Annotated[str, typer.Option(help="Which qrels/<split>.tsv to load.")] = "test",
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
) -> None:
    """Load a BEIR folder's documents, queries and judgments together, all or nothing.

    Queries with no judgment in the split are skipped and counted. Imports the harness first if the
    database has none, with the dimension of the data's embeddings.
    """
    model = _embedder(embedder)
    report = _load(lambda db, progress: ingest_beir(
        db, folder, split=split, embedder=model, batch_size=batch_size, progress=progress, create_harness=True), model)
    corpus, golden = report.corpus, report.golden
    out.print(
        f"loaded {_loaded(corpus, 'articles')} and {_loaded(golden, 'questions')} ({golden.labels} labels) "
        f"from {folder} in {report.seconds:.1f} s{_harness_note(corpus)}")
    if golden.skipped:
        out.print(f"skipped {golden.skipped} queries with no judgment in qrels/{split}.tsv")
    _ingest_note(corpus)


@app.command()
def evaluate(
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated.")] = "1,3,5,10",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Retriever(s) to evaluate (default: bm25, vector, hybrid, hybrid_floor; also hybrid_linear).")] = None,
    label: Annotated[Optional[str], typer.Option(help="A label for this run in history.")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    floor: Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")] = None,
    rrf_k: Annotated[Optional[int], typer.Option(help="RRF constant.")] = None,
    depth: Annotated[Optional[int], typer.Option(help="Candidate depth of every retriever (default: deepest k).")] = None,
    weights: Annotated[Optional[str], typer.Option(help="Linear fusion weights BM25,vector (hybrid_linear), e.g. 0.3,0.7.")] = None,
    norm: Annotated[Optional[str], typer.Option(help="Linear fusion score normalisation: minmax or zscore.")] = None,
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    split: Annotated[Optional[str], typer.Option(help="Evaluate only the questions of this split: dev or test.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate the golden set, record the run in history and print its means."""
    ks = _run(lambda: parse_ks(k))
    params = {"corpus": _table(corpus, "--corpus table"), "floor": floor, "rrf_k": rrf_k, "depth": depth, "norm": norm,
              "split": split,
              "weights": _run(lambda: parse_weights(weights)) if weights else None}
    bar = _Progress()  # the same display as loads: stderr, on a terminal, after the first second
    try:
        report = _with_db(lambda db: run_evaluation(
            db, ks=ks, retrievers=retriever, label=label, params=params, per_question=per_question, trigger="cli",
            progress=lambda done, total: bar("evaluating questions", done, total)))
    finally:
        bar.close()
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
    corpus = _table(corpus, "--corpus table")
    found = _with_db(lambda db: diagnose_question(db, question, k=k, params={"corpus": corpus, "floor": floor}))
    display.show_diagnosis(out, found)


def _write_lines(lines, output: Optional[Path]) -> int:
    count = 0
    if output is None:
        for line in lines:  # color=True: never strip what looks like ANSI codes, ids may hold them verbatim
            typer.echo(line, color=True)
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

    _table(source, "--from table")
    _table(target, "--into table")
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


@app.command()
def split(
    dev: Annotated[float, typer.Option(help="Share of questions for the dev (tuning) split; the rest is test.")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the stable hash that assigns each question.")] = 0,
) -> None:
    """Assign every question to the dev or test split (stable: a hash of its id and the seed)."""
    from .tune import assign_splits

    sizes = _with_db(lambda db: assign_splits(db, dev_fraction=dev, seed=seed))
    out.print(f"dev {sizes['dev']} questions, test {sizes['test']} questions")


@app.command()
def tune(
    param: Annotated[str, typer.Option(help="Parameter to sweep: floor, rrf_k, weights or knn_ef.")] = "floor",
    values: Annotated[str, typer.Option(help="Candidates: 0,1.5,3 (floor); 20,60 (rrf_k, knn_ef); 0.3,0.7;0.5,0.5 (weights).")] = "0,1,2,3,4,5",
    metric: Annotated[str, typer.Option(help="Metric that picks the best value, e.g. recall@5.")] = "recall@5",
    retriever: Annotated[Optional[str], typer.Option(help="Retriever to tune (default: the one the parameter belongs to).")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Tune and report on the same questions when there is no dev/test split (marked in history).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Sweep a parameter on the dev split, pick the best by a metric, report it on the test split."""
    from .tune import parse_values, tune as run_tune

    candidates = _run(lambda: parse_values(param, values))
    corpus = _table(corpus, "--corpus table")
    result = _with_db(lambda db: run_tune(db, param=param, values=candidates, metric=metric, retriever=retriever,
                                          params={"corpus": corpus}, force=force))
    if as_json:
        out.print_json(result.model_dump_json())
        return
    out.print(f"{param} swept on {'ALL questions (forced)' if result.forced else 'the dev split'} by {result.metric}:")
    for row in result.sweep:
        mark = "  <- best" if row["value"] == result.best else ""
        out.print(f"  {param} = {row['value']}: {row['mean']:.4f} ({row['questions']} questions){mark}")
    display.show_report(out, result.report)


@app.command()
def grant(
    name: Annotated[str, typer.Argument(help="Evaluator account name, e.g. ci.")],
    revoke: Annotated[bool, typer.Option("--revoke", help="Delete the account instead.")] = False,
) -> None:
    """Create an evaluator account (reads corpus and golden set, writes runs); the password comes from
    SURREAL_EVAL_EVALUATOR_PASS or a prompt, never from the command line."""
    import os

    from .access import grant_evaluator, revoke_evaluator

    if revoke:
        _with_db(lambda db: revoke_evaluator(db, name))
        out.print(f"evaluator {name} revoked")
        return
    secret = os.environ.get("SURREAL_EVAL_EVALUATOR_PASS") or typer.prompt(
        f"password for evaluator {name}", hide_input=True, confirmation_prompt=True)
    _with_db(lambda db: grant_evaluator(db, name, secret))
    out.print(f"evaluator {name} can now sign in with --access evaluator --user {name}")


# --- compare, gate, report, slices (issue 5) ---------------------------------------------------

RunArg = Annotated[str, typer.Argument(help="Run: eval_run:ID, ID, latest or previous (see `surreal-eval history`).")]


@app.command()
def compare(
    run_a: RunArg,
    run_b: Annotated[Optional[str], typer.Argument(help="Run B (after); omit it to compare two --retriever of run A.")] = None,
    metric: Annotated[Optional[list[str]], typer.Option(help="NAME@K, or NAME for every shared k (default: every metric at every shared k).")] = None,
    retriever: Annotated[Optional[list[str]], typer.Option(help="Only these retrievers (default: all both runs have); without RUN_B, exactly two.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare run A with run B per retriever and metric: mean difference, interval, p-value, questions fixed and broken."""
    from . import display_compare
    from .compare import compare_retrievers, compare_runs

    if run_b is None:
        names = [n.strip() for r in retriever or [] for n in r.split(",") if n.strip()]
        if len(names) != 2:
            _fail(ConfigError("give RUN_B, or two --retriever to compare within run A (e.g. --retriever hybrid --retriever hybrid_floor)"))
        within = _with_db(lambda db: compare_retrievers(db, run_a, names[0], names[1], metric))
        if as_json:
            out.print_json(within.model_dump_json())
            return
        display_compare.show_retriever_comparison(out, within)
        return
    result = _with_db(lambda db: compare_runs(db, run_a, run_b, metrics=metric, retrievers=retriever))
    if as_json:
        out.print_json(result.model_dump_json())
        return
    display_compare.show_comparison(out, result)


@app.command()
def gate(
    baseline: Annotated[str, typer.Option(help="Run the candidate must hold up against: a run id, previous, or latest (the newest run before the candidate).")] = "latest",
    candidate: Annotated[Optional[str], typer.Option(help="Run under test (default: the latest run).")] = None,
    metric: Annotated[Optional[list[str]], typer.Option(help="Metric at a cutoff to gate on, e.g. recall@5 (repeatable; default recall@5).")] = None,
    retriever: Annotated[Optional[list[str]], typer.Option(help="Retriever(s) to gate (default: every retriever of the candidate).")] = None,
    max_drop: Annotated[float, typer.Option(help="Largest fall of the mean that passes.")] = 0.02,
    alpha: Annotated[float, typer.Option(help="A larger fall fails only when its paired p-value is below this.")] = 0.05,
    allow_different_golden: Annotated[bool, typer.Option("--allow-different-golden", help="Gate runs of different golden sets on their shared questions.")] = False,
    junit: Annotated[Optional[Path], typer.Option(help="Also write the result as JUnit XML to this file.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fail (exit 1) when a metric fell by more than --max-drop and significantly; print the broken questions."""
    from . import display_compare
    from .gate import gate as run_gate
    from .gate import write_junit

    result = _with_db(lambda db: run_gate(
        db, baseline=baseline, candidate=candidate, metric=metric or ["recall@5"], retriever=retriever,
        max_drop=max_drop, alpha=alpha, allow_different_golden=allow_different_golden))
    if junit is not None:
        _run(lambda: write_junit(result, junit))
    if as_json:
        out.print_json(result.model_dump_json())
    else:
        display_compare.show_gate(out, result)
    if junit is not None:
        err.print(f"wrote JUnit XML to {junit}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
def report(
    html_path: Annotated[Path, typer.Option("--html", help="Write the report as one self-contained HTML page to this file.")] = ...,
    run: Annotated[Optional[list[str]], typer.Option(help="Only these runs (default: every finished run); the last is the latest.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric of the per-question matrix and the slices (default recall@5).")] = None,
) -> None:
    """Write the history as one HTML page: trend, latest run, per-question matrix, slices."""
    from .report_html import write_report

    path = _with_db(lambda db: write_report(db, html_path, runs=run, metric=metric))
    out.print(f"wrote the report to {path}")


@app.command()
def slices(
    run: Annotated[str, typer.Argument(help="Run: eval_run:ID, ID, latest or previous.")] = "latest",
    metric: Annotated[str, typer.Option(help="Metric at a cutoff, e.g. recall@5.")] = "recall@5",
    by: Annotated[Optional[list[str]], typer.Option(help="Question field(s) to group by: category, language, source, split.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a run's per-question scores grouped by question category, language and source, with intervals."""
    from . import display_compare
    from .slices import slices as run_slices

    found = _with_db(lambda db: run_slices(db, run, metric, by=by or ("category", "language", "source")))
    if as_json:
        out.print_json(data=[s.model_dump(mode="json") for s in found])
        return
    display_compare.show_slices(out, found)
