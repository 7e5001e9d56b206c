"""Commands that run and read evaluations: demo, init, migrate, evaluate, diagnose, export, split, tune, grant
(history, tags and pruning: commands_history.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import ConfigError, InputError, NotFound, Rejected, on_interrupt
from ..grammar import check_number, parse_ks, parse_weights

if TYPE_CHECKING:
    from ..store.connection import Database
from .app import (AnalyzerOpt, DanglingOpt, GoldenOpt, JsonOpt, JudgmentsOpt, LevelOpt, app, checked, err, export_app, fail, out, plain, state,
                  table_name, with_db)
from .progress import Progress


FloorOpt = Annotated[Optional[float], typer.Option(help="BM25 floor of the floored hybrid.")]
RrfOpt = Annotated[Optional[int], typer.Option(help="RRF constant.")]
FreshOpt = Annotated[bool, typer.Option(
    "--fresh", help="Query the indexes for every candidate list instead of reading those of earlier runs.")]
IdenticalOpt = Annotated[bool, typer.Option(
    "--ignore-identical-ids", help="Drop a retrieved record whose key is the question's own key before scoring (BEIR's convention).")]
RetrieversOpt = Annotated[Optional[list[str]], typer.Option(
    help="Retriever(s) to evaluate (default: the registry's defaults; `surreal-eval retrievers` lists them).")]
EvaluatedOpt = Annotated[Optional[list[str]], typer.Option(
    help="Retriever(s) to evaluate (default: the registry's defaults; `surreal-eval retrievers` lists them); "
         "http:NAME: a search endpoint (`surreal-eval endpoint list`).")]


@app.command()
def demo(as_json: JsonOpt = False) -> None:
    """Run the lesson's demo in a throwaway in-memory store and print what it shows."""
    from . import run_tables as display
    from ..runs.demo import run_demo

    report = checked(lambda: run_demo())
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
    analyzer: AnalyzerOpt = None,
) -> None:
    """Import the harness's SurrealQL into the database (again is harmless); undo a killed load."""
    from ..load.bulk import STALE_LOAD, recover_loads
    from ..load.lesson import import_seed, refuse_a_readers_database, refuse_another_dimension
    from ..store.schema import DEMO_DIMENSION, checked_config, harness_config, import_harness

    undone: list[str] = []

    def action(db: Database) -> list[str]:
        # (an embedded store was already put right when it opened)
        undone.extend(recover_loads(db, stale_after=None if db.settings.is_embedded else STALE_LOAD))
        if demo_seed:  # before anything is imported: a reader's own database, or one of other data, is left exactly as it was
            refuse_a_readers_database(db)
            refuse_another_dimension(db, dimension)
        existing = harness_config(db)
        dim = dimension if dimension is not None else (
            DEMO_DIMENSION if demo_seed else existing.dimension if existing else 384)
        applied = import_harness(db, checked_config(dimension=dim, knn_depth=knn_depth, knn_ef=knn_ef), skip_unchanged=True,
                                 analyzer=analyzer)
        if demo_seed:
            import_seed(db)
        return applied

    applied = with_db(action)
    if undone:
        plain(out, f"undid the unfinished load into {' and '.join(undone)}")
    what = f"imported {', '.join(applied)}" if applied else "the harness is up to date (every script's checksum matches)"
    plain(out, f"{what}{' and the demo seed' if demo_seed else ''} into {state.settings.describe()}")


@app.command()
def migrate(as_json: JsonOpt = False) -> None:
    """Move a store of surreal-eval 0.1 (eval_run, question, article, ...) to the seval_ names: runs, rankings, golden set,
    splits, retrievers and evaluator accounts kept, caches dropped, 0.1's definitions removed; all or nothing."""
    from . import run_tables as display
    from ..store.migrate_prefix import migrate as run_migration
    from ..store.opening import connected

    def action():
        with connected(state.settings, previous_release=True) as db:
            return run_migration(db)

    report = checked(action)
    if as_json:
        out.print_json(report.model_dump_json())
        return
    for line in display.migration_lines(report, state.settings.describe()):
        plain(out, line)


@app.command()
def evaluate(
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated.")] = "1,3,5,10",
    retriever: EvaluatedOpt = None,
    label: Annotated[Optional[str], typer.Option(help="A label for this run in history.")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    floor: FloorOpt = None,
    rrf_k: RrfOpt = None,
    depth: Annotated[Optional[int], typer.Option(help="Candidate depth of every retriever (default: deepest k).")] = None,
    weights: Annotated[Optional[str], typer.Option(help="Linear fusion weights BM25,vector (hybrid_linear), e.g. 0.3,0.7.")] = None,
    norm: Annotated[Optional[str], typer.Option(help="Linear fusion score normalisation: minmax or zscore.")] = None,
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    split: Annotated[Optional[str], typer.Option(help="Evaluate only the questions of this split: dev or test.")] = None,
    ann_check: Annotated[bool, typer.Option("--ann-check", help=(
        "Also rank by the exact nearest neighbours (retriever vector_exact, a scan of every record) and "
        "report ann_recall@k, the share of the exact top k the HNSW index returned."))] = False,
    relevance_level: LevelOpt = None,
    ignore_identical_ids: IdenticalOpt = False,
    rerank: Annotated[Optional[str], typer.Option(help="Rerank each retriever's top N: a /rerank URL, or local:MODEL (a cross-encoder, the local "
                                                       "extra).")] = None,
    rerank_depth: Annotated[int, typer.Option(help="N: how many of each retriever's results the reranker reorders.")] = 20,
    rerank_api: Annotated[str, typer.Option(help="The /rerank endpoint's shape: cohere (also OpenAI-style, Jina, vLLM) or tei.")] = "cohere",
    rerank_model: Annotated[Optional[str], typer.Option(help="Model name sent to a cohere-style reranker.")] = None,
    golden: GoldenOpt = None,
    dangling_labels: DanglingOpt = None,
    judgments: JudgmentsOpt = None,
    fresh: FreshOpt = False,
    no_record: Annotated[bool, typer.Option("--no-record", help="Evaluate and print, but record no run (history stays as it was).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate the golden set, record the run in history and print its means."""
    from . import run_tables as display
    from ..runs.evaluate import evaluate as run_evaluation
    from ..runs.rerank import Rerank

    ks = checked(lambda: parse_ks(k))
    params = {"corpus": table_name(corpus, "--corpus table"), "floor": floor, "rrf_k": rrf_k, "depth": depth, "norm": norm,
              "split": split, "ann_check": True if ann_check else None, **_scoring(relevance_level, ignore_identical_ids),
              **_golden(golden, dangling_labels, judgments),
              "weights": checked(lambda: parse_weights(weights)) if weights else None}
    from ..analysis.sources import run_source_means
    from .source_tables import show_source_means

    bar = Progress()  # the same display as loads: stderr, on a terminal, after the first second

    def measured(db):
        report = run_evaluation(
            db, ks=ks, retrievers=retriever, label=label, params=params, per_question=per_question, trigger="cli", fresh=fresh,
            rerank=Rerank(rerank, depth=rerank_depth, api=rerank_api, model=rerank_model) if rerank else None,
            progress=lambda done, total: bar("evaluating questions", done, total), record=not no_record)
        if as_json or no_record:
            return report, []
        try:  # the means per question source, real first with the gap beside, when the questions hold several
            with on_interrupt(_kept(report)):
                return report, run_source_means(db, report.run, f"recall@{5 if 5 in report.ks else max(report.ks)}")
        except NotFound:  # no labelled question: no mean at all
            return report, []

    try:
        report, sources = with_db(measured)
    finally:
        bar.close()
    with on_interrupt(_kept(report)):
        if as_json:
            out.print_json(report.model_dump_json(exclude={"per_question"} if not per_question else None))
            return
        display.show_report(out, report, per_question=per_question, sources=sources)
        show_source_means(out, sources)


def _kept(report) -> str:
    """What an interruption after the evaluation finished leaves: the run recorded, or none (--no-record)."""
    return f"run {report.run} was recorded (surreal-eval history)" if report.recorded else "no run was recorded (--no-record)"


def _scoring(relevance_level: int | None, ignore_identical_ids: bool) -> dict:
    """The scoring parameters given on the command line (None: the run's default)."""
    return {"relevance_level": relevance_level, "ignore_identical_ids": True if ignore_identical_ids else None}


def _golden(golden: str | None, dangling_labels: str | None = None, judgments: str | None = None) -> dict:
    """The golden set, the rule for labels whose record is gone and the judgments read (human, human+model),
    given on the command line (None: the default)."""
    if judgments not in (None, "human", "human+model"):
        fail(ConfigError(f"--judgments must be human or human+model, got {judgments!r}"))
    return {"golden": table_name(golden, "--golden table"), "dangling_labels": dangling_labels, "judgments": judgments}


@app.command()
def retrievers(as_json: JsonOpt = False) -> None:
    """List the registry of retrievers: the candidate lists each fuses, how, and which run by default."""
    from ..store.registry import registry
    from . import run_tables as display

    rows = with_db(registry)
    if as_json:
        out.print_json(data=[r.model_dump(mode="json") for r in rows])
        return
    display.show_registry(out, rows)


@app.command()
def diagnose(
    question: Annotated[str, typer.Argument(help="Question id, e.g. money_back or seval_question:money_back.")],
    k: Annotated[int, typer.Option("--k", help="How many results per retriever.")] = 5,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    floor: FloorOpt = None,
    retriever: RetrieversOpt = None,
    golden: GoldenOpt = None,
) -> None:
    """Show a question's labelled articles beside each retriever's top k, with scores."""
    from ..runs.diagnose import diagnose as diagnose_question
    from . import run_tables as display

    corpus = table_name(corpus, "--corpus table")
    found = with_db(lambda db: diagnose_question(db, question, k=k, retrievers=retriever,
                                                        params={"corpus": corpus, "floor": floor, **_golden(golden)}))
    display.show_diagnosis(out, found)


def _write_lines(lines, output: Optional[Path]) -> int:
    """Write `lines` to stdout, or to `output` all or nothing: into a temporary file beside it, renamed
    over it once every line is written, and removed if anything fails (no partial file is left)."""
    import os
    import tempfile

    count = 0
    if output is None:
        for line in lines:  # color=True: never strip what looks like ANSI codes, ids may hold them verbatim
            typer.echo(line, color=True)
            count += 1
        return count
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".part", dir=output.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(line + "\n")
                count += 1
        os.replace(temporary, output)
        temporary = None
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", source=str(output)) from None
    finally:
        if temporary is not None:
            os.unlink(temporary)
    return count


OutputOpt = Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")]


@export_app.command("run")
def export_run(
    run: Annotated[str, typer.Argument(help="Run: seval_run:ID, ID, latest or previous (see `surreal-eval history`).")],
    fmt: Annotated[str, typer.Option("--format", help="Output format (trec).")] = "trec",
    retriever: Annotated[Optional[list[str]], typer.Option(help="Only these retrievers (default: all in the run).")] = None,
    scores: Annotated[str, typer.Option(help=(
        "rank: strictly decreasing scores that keep this run's order; raw: the retrievers' own scores, a tied one "
        "lowered to the next 32-bit float where trec_eval would break the tie the other way."))] = "rank",
    output: OutputOpt = None,
) -> None:
    """Write a run's rankings as a TREC run file: qid Q0 docid rank score tag (tag = retriever)."""
    from ..runs.export import trec_run_file

    if fmt != "trec":
        fail(ConfigError(f"unknown --format {fmt!r}: trec is supported"))
    exported = with_db(lambda db: trec_run_file(db, run, retrievers=retriever, scores=scores))
    count = checked(lambda: _write_lines(exported.lines, output))
    if output is not None:
        plain(err, f"wrote {count} lines to {output}")
    if exported.lowered:
        plain(err, f"lowered {exported.lowered} tied raw score{'s' if exported.lowered != 1 else ''} to the next 32-bit float "
                   "below the score above it: trec_eval reads scores as 32-bit floats and breaks a tie by docid descending, "
                   "so it would have ranked those records differently from this run, and scored it differently")


@export_app.command("qrels")
def export_qrels(
    run: Annotated[Optional[str], typer.Option(help="The labels a run scored against (resolved quote labels included); default: the golden set.")] = None,
    golden: GoldenOpt = None,
    output: OutputOpt = None,
) -> None:
    """Write the golden set's labels as TREC qrels: qid 0 docid grade."""
    from ..runs.export import export_qrels_trec

    count = with_db(lambda db: _write_lines(export_qrels_trec(db, run=run, golden=_golden(golden)["golden"]), output))
    if output is not None:
        plain(err, f"wrote {count} lines to {output}")


@app.command()
def split(
    dev: Annotated[float, typer.Option(help="Share of questions for the dev (tuning) split; the rest is test.")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the stable hash that assigns each question.")] = 0,
    golden: GoldenOpt = None,
) -> None:
    """Assign every question to the dev or test split (stable: a hash of its id and the seed)."""
    from ..runs.tune import assign_splits

    checked(lambda: (check_number("dev", dev), check_number("seed", seed)))
    sizes = with_db(lambda db: assign_splits(db, dev_fraction=dev, seed=seed, golden=_golden(golden)["golden"]))
    plain(out, f"dev {sizes['dev']} questions, test {sizes['test']} questions")


@app.command()
def tune(
    param: Annotated[str, typer.Option(help="Parameter to sweep: floor, rrf_k, weights or knn_ef.")] = "floor",
    values: Annotated[Optional[str], typer.Option(help="Candidates: 0,1.5,3 (floor; default 0 and percentiles of the BM25 scores seen on dev); 20,60 (rrf_k, "
                                                       "knn_ef); 0.3,0.7;0.5,0.5 (weights).")] = None,
    metric: Annotated[str, typer.Option(help="Metric that picks the best value, e.g. recall@5 (with --param knn_ef also ann_recall@10: the index against the "
                                             "exact neighbours).")] = "recall@5",
    retriever: Annotated[Optional[str], typer.Option(help="Retriever to tune (default: the one the parameter belongs to).")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Tune and report on the same questions when there is no dev/test split (marked in history).")] = False,
    relevance_level: LevelOpt = None,
    ignore_identical_ids: IdenticalOpt = False,
    golden: GoldenOpt = None,
    dangling_labels: DanglingOpt = None,
    judgments: JudgmentsOpt = None,
    fresh: FreshOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Sweep a parameter on the dev split, pick the best by a metric, report it on the test split."""
    from . import run_tables as display

    from ..runs.tune import parse_values, tune as run_tune

    candidates = None if values is None and param == "floor" else checked(lambda: parse_values(param, values or ""))
    corpus = table_name(corpus, "--corpus table")
    result = with_db(lambda db: run_tune(db, param=param, values=candidates, metric=metric, retriever=retriever,
                                          params={"corpus": corpus, **_scoring(relevance_level, ignore_identical_ids),
                                                  **_golden(golden, dangling_labels, judgments)},
                                          force=force, fresh=fresh))
    if as_json:
        out.print_json(result.model_dump_json())
        return
    display.show_sweep(out, result)
    if result.report is None:
        fail(Rejected(result.note))
    if result.note:
        plain(err, f"warning: {result.note}")
    display.show_report(out, result.report)
    if result.verdict:
        plain(out, f"verdict: {result.verdict.line}")


@app.command()
def grant(
    name: Annotated[str, typer.Argument(help="Evaluator account name, e.g. ci.")],
    revoke: Annotated[bool, typer.Option("--revoke", help="Delete the account instead.")] = False,
) -> None:
    """Create an evaluator account (reads corpus and golden set, writes runs); the password comes from
    SURREAL_EVAL_EVALUATOR_PASS or a prompt, never from the command line."""
    import os

    from ..store.access import grant_evaluator, revoke_evaluator

    if revoke:
        with_db(lambda db: revoke_evaluator(db, name))
        plain(out, f"evaluator {name} revoked")
        return
    secret = os.environ.get("SURREAL_EVAL_EVALUATOR_PASS") or typer.prompt(
        f"password for evaluator {name}", hide_input=True, confirmation_prompt=True)
    with_db(lambda db: grant_evaluator(db, name, secret))
    plain(out, f"evaluator {name} can now sign in with --access seval_evaluator --user {name}")
