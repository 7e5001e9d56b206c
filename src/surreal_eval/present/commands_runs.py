"""Commands that run and read evaluations: demo, init, migrate, evaluate, diagnose, split, tune, and `access add|remove`
(the runs in history and their tags: commands_history.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import Rejected, on_interrupt
from ..grammar import check_number, parse_ks, parse_weights

if TYPE_CHECKING:
    from ..store.connection import Database
from .app import (
    AnalyzerOpt,
    CorpusOpt,
    DeepestKOpt,
    GoldenOpt,
    JsonOpt,
    KsOpt,
    app,
    checked,
    err,
    fail,
    out,
    plain,
    state,
    table_name,
    with_db,
)
from .deprecated import OLD_SPELLINGS, old_option, say
from .option_sets import NAMING, RETRIEVAL, SCORING, Naming, Retrieval, Scoring, naming_params, retrieval_params, scoring_params, with_options
from .progress import Progress

FreshOpt = Annotated[bool, typer.Option(
    "--fresh", help="Query the indexes for every candidate list instead of reading those of earlier runs.")]
RetrieversOpt = Annotated[Optional[list[str]], typer.Option(
    help="Retriever(s) to evaluate (default: the registry's defaults; `surreal-eval retriever list` lists them).")]
EvaluatedOpt = Annotated[Optional[list[str]], typer.Option(
    help="Retriever(s) to evaluate (default: the registry's defaults; `surreal-eval retriever list` lists them); "
         "http:NAME: a search endpoint (`surreal-eval endpoint list`).")]


@app.command()
def demo(as_json: JsonOpt = False) -> None:
    """Run the lesson's demo in a throwaway in-memory store and print what it shows: `demo`."""
    from ..runs.demo import run_demo
    from . import run_tables as display

    report = checked(lambda: run_demo())
    if as_json:  # as evaluate --json --per-question: the means per question source, the headline, the notes, the ranks
        out.print_json(data=display.report_json(report, per_question=True))
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
    """Import the harness's SurrealQL into the database (again is harmless); undo a killed load: `init --demo`."""
    from ..load.bulk import STALE_LOAD, recover_loads
    from ..golden.lesson import import_seed, refuse_a_readers_database, refuse_another_dimension
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
    splits, retrievers and evaluator accounts kept, caches dropped, 0.1's definitions removed; all or nothing: `migrate`."""
    from ..store.migrate_prefix import migrate as run_migration
    from ..store.opening import connected
    from . import run_tables as display

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
@with_options(SCORING)
@with_options(RETRIEVAL, into="retrieval")
@with_options(NAMING, into="naming")
def evaluate(
    k: KsOpt = "1,3,5,10",
    retriever: EvaluatedOpt = None,
    naming: Naming = None,
    corpus: CorpusOpt = None,
    depth: Annotated[Optional[int], typer.Option(help="Candidate depth of every retriever (default: deepest k).")] = None,
    weights: Annotated[Optional[str], typer.Option(help="Linear fusion weights BM25,vector (hybrid_linear), e.g. 0.3,0.7.")] = None,
    norm: Annotated[Optional[str], typer.Option(help="Linear fusion score normalisation: minmax or zscore.")] = None,
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    split: Annotated[Optional[str], typer.Option(help="Evaluate only the questions of this split: dev or test.")] = None,
    ann_check: Annotated[bool, typer.Option("--ann-check", help=(
        "Also rank by the exact nearest neighbours (retriever vector_exact, a scan of every record) and "
        "report ann_recall@k, the share of the exact top k the HNSW index returned."))] = False,
    scoring: Scoring = None,
    retrieval: Retrieval = None,
    rerank: Annotated[Optional[str], typer.Option(help="Rerank each retriever's top N: a /rerank URL, or local:MODEL (a cross-encoder, the local "
                                                       "extra).")] = None,
    rerank_depth: Annotated[int, typer.Option(help="N: how many of each retriever's results the reranker reorders.")] = 20,
    rerank_api: Annotated[str, typer.Option(help="The /rerank endpoint's shape: cohere (also OpenAI-style, Jina, vLLM) or tei.")] = "cohere",
    rerank_model: Annotated[Optional[str], typer.Option(help="Model name sent to a cohere-style reranker.")] = None,
    fresh: FreshOpt = False,
    no_record: Annotated[bool, typer.Option("--no-record", help="Evaluate and print, but record no run (history stays as it was).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate the golden set, record the run in history and print its means: `evaluate --tag main`."""
    from ..runs.evaluate import evaluate as run_evaluation
    from ..runs.rerank import Rerank
    from . import run_tables as display

    ks = checked(lambda: parse_ks(k))
    tag, note = naming_params("evaluate", naming)
    params = {"corpus": table_name(corpus, "--corpus table"), "depth": depth, "norm": norm,
              "split": split, "ann_check": True if ann_check else None, **scoring_params(scoring), **retrieval_params(retrieval),
              "weights": checked(lambda: parse_weights(weights)) if weights else None}
    bar = Progress()  # the same display as loads: stderr, on a terminal, after the first second
    try:  # the report carries the means per question source (by_source), real first with the gap beside
        report = with_db(lambda db: run_evaluation(
            db, ks=ks, retrievers=retriever, label=note, tag=tag, params=params, per_question=per_question, trigger="cli", fresh=fresh,
            rerank=Rerank(rerank, depth=rerank_depth, api=rerank_api, model=rerank_model) if rerank else None,
            progress=lambda done, total: bar("evaluating questions", done, total), record=not no_record))
    finally:
        bar.close()
    with on_interrupt(_kept(report)):
        if as_json:
            out.print_json(data=display.report_json(report, per_question=per_question))
            return
        display.show_report(out, report, per_question=per_question)


def _kept(report) -> str:
    """What an interruption after the evaluation finished leaves: the run recorded, or none (--no-record)."""
    return f"run {report.run} was recorded (surreal-eval history)" if report.recorded else "no run was recorded (--no-record)"


@app.command()
@with_options(RETRIEVAL, into="retrieval")
def diagnose(
    question: Annotated[str, typer.Argument(help="Question id, e.g. money_back or seval_question:money_back.")],
    k: DeepestKOpt = "5",
    corpus: CorpusOpt = None,
    retriever: RetrieversOpt = None,
    golden: GoldenOpt = None,
    retrieval: Retrieval = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a question's labelled articles beside each retriever's top k, with scores: `diagnose money_back --k 3`."""
    from ..runs.diagnose import diagnose as diagnose_question
    from . import run_tables as display

    corpus = table_name(corpus, "--corpus table")
    deepest = max(checked(lambda: parse_ks(k)))
    found = with_db(lambda db: diagnose_question(db, question, k=deepest, retrievers=retriever,
                                                 params={"corpus": corpus, "golden": table_name(golden, "--golden table"),
                                                         **retrieval_params(retrieval)}))
    if as_json:
        out.print_json(found.model_dump_json())
        return
    display.show_diagnosis(out, found)


@app.command()
def split(
    dev: Annotated[float, typer.Option(help="Share of questions for the dev (tuning) split; the rest is test.")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the stable hash that assigns each question.")] = 0,
    golden: GoldenOpt = None,
) -> None:
    """Assign every question to the dev or test split (stable: a hash of its id and the seed): `split --dev 0.5`."""
    from ..runs.tune import assign_splits

    checked(lambda: (check_number("dev", dev), check_number("seed", seed)))
    sizes = with_db(lambda db: assign_splits(db, dev_fraction=dev, seed=seed, golden=table_name(golden, "--golden table")))
    plain(out, f"dev {sizes['dev']} questions, test {sizes['test']} questions")


@app.command()
@with_options(SCORING)
def tune(
    param: Annotated[str, typer.Option(help="Parameter to sweep: floor, rrf_k, weights or knn_ef.")] = "floor",
    values: Annotated[Optional[str], typer.Option(help="Candidates: 0,1.5,3 (floor; default 0 and percentiles of the BM25 scores seen on dev); 20,60 (rrf_k, "
                                                       "knn_ef); 0.3,0.7;0.5,0.5 (weights).")] = None,
    metric: Annotated[str, typer.Option("--metric", help="A metric at a cutoff, NAME@K such as recall@5, that picks the best value (with --param "
                                                        "knn_ef also ann_recall@10: the index against the exact neighbours).")] = "recall@5",
    retriever: Annotated[Optional[str], typer.Option(help="Retriever to tune (default: the one the parameter belongs to).")] = None,
    corpus: CorpusOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Tune and report on the same questions when there is no dev/test split (marked in history).")] = False,
    scoring: Scoring = None,
    fresh: FreshOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Sweep a parameter on the dev split, pick the best by a metric, report it on the test split:
    `tune --param floor --metric recall@5`."""
    from ..runs.tune import parse_values
    from ..runs.tune import tune as run_tune
    from . import run_tables as display

    candidates = None if values is None and param == "floor" else checked(lambda: parse_values(param, values or ""))
    corpus = table_name(corpus, "--corpus table")
    result = with_db(lambda db: run_tune(db, param=param, values=candidates, metric=metric, retriever=retriever,
                                          params={"corpus": corpus, **scoring_params(scoring)},
                                          force=force, fresh=fresh))
    if as_json:  # its report as evaluate --json gives one: the means per question source, the headline, the notes
        data = result.model_dump(mode="json")
        data["report"] = display.report_json(result.report) if result.report else None
        out.print_json(data=data)
        return
    display.show_sweep(out, result)
    if result.report is None:
        fail(Rejected(result.note))
    if result.note:
        plain(err, f"warning: {result.note}")
    display.show_report(out, result.report)
    if result.verdict:
        plain(out, f"verdict: {result.verdict.line}")


access_app = typer.Typer(help="Evaluator accounts: they read the corpus and golden set and add their own runs, nothing else.",
                         no_args_is_help=True)
app.add_typer(access_app, name="access")


@access_app.command("add")
def access_add(name: Annotated[str, typer.Argument(help="Evaluator account name, e.g. ci.")]) -> None:
    """Create an evaluator account (reads corpus and golden set, writes runs); the password comes from
    SURREAL_EVAL_EVALUATOR_PASS or a prompt, never from the command line: `access add ci`."""
    import os

    from ..store.access import grant_evaluator

    secret = os.environ.get("SURREAL_EVAL_EVALUATOR_PASS") or typer.prompt(
        f"password for evaluator {name}", hide_input=True, confirmation_prompt=True)
    with_db(lambda db: grant_evaluator(db, name, secret))
    plain(out, f"evaluator {name} can now sign in with --access seval_evaluator --user {name}")


@access_app.command("remove")
def access_remove(name: Annotated[str, typer.Argument(help="Evaluator account name.")]) -> None:
    """Delete an evaluator account (its runs stay in history): `access remove ci`."""
    from ..store.access import revoke_evaluator

    with_db(lambda db: revoke_evaluator(db, name))
    plain(out, f"evaluator {name} revoked")


@app.command("grant", hidden=True)
def grant(
    name: Annotated[str, typer.Argument(help="Evaluator account name, e.g. ci.")],
    revoke: Annotated[bool, typer.Option("--revoke", help="Delete the account instead.")] = False,
) -> None:
    """0.1's `grant NAME [--revoke]`: now `access add NAME` and `access remove NAME`."""
    if revoke:
        say("grant NAME --revoke", "access remove NAME")
        access_remove(name)
    else:
        say("grant NAME", "access add NAME")
        access_add(name)


old_option("evaluate", "--label TEXT", "--tag NAME or --note TEXT")
OLD_SPELLINGS.extend([("grant NAME", "access add NAME"), ("grant NAME --revoke", "access remove NAME")])
