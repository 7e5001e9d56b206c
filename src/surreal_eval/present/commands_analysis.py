"""Commands that analyse recorded runs: compare, gate, report, slices."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from .app import RUN_HELP, JsonOpt, MetricOpt, MetricsOpt, OptionalRunsArg, RunArg, app, checked, err, fail, out, plain, with_db
from .deprecated import old_option, say

OLD_BARE_METRIC = old_option("compare", "--metric NAME", "--metric NAME@K (repeatable)")
OLD_GATE_LATEST = old_option("gate", "--baseline latest", "--baseline previous")
OLD_REPORT_RUN = old_option("report", "--run RUN", "RUN (positional)")


@app.command()
def compare(
    run_a: RunArg,
    run_b: Annotated[Optional[str], typer.Argument(help=f"Run B (after), {RUN_HELP}; omit it to compare --retriever of run A.")] = None,
    more: Annotated[Optional[list[str]], typer.Argument(help=f"Further runs ({RUN_HELP}): three or more runs are compared pair by pair.",
                                                        show_default=False)] = None,
    metric: MetricsOpt = None,
    retriever: Annotated[Optional[list[str]], typer.Option(help="Only these retrievers (default: all both runs have); without RUN_B, two or more.")] = None,
    alpha: Annotated[float, typer.Option(help="With three or more runs or retrievers: sides whose Holm-adjusted p is at least this are not separable.")] = 0.05,
    as_json: JsonOpt = False,
) -> None:
    """Compare run A with run B per retriever and metric (default: every metric at every shared k): mean difference, interval, raw and
    Holm-adjusted p, questions fixed and broken: `compare main latest --metric recall@5`."""
    from ..analysis.compare import compare_retrievers, compare_runs
    from ..analysis.groups import compare_many_retrievers, compare_many_runs
    from . import analysis_tables as display_compare

    if any("@" not in m for m in metric or []):  # 0.1: a bare name meant that metric at every shared k
        say(*OLD_BARE_METRIC)

    result = None
    if run_b is None:
        names = [n.strip() for r in retriever or [] for n in r.split(",") if n.strip()]
        if len(names) < 2:
            fail(ConfigError("give RUN_B, or two or more --retriever to compare within run A (e.g. --retriever hybrid --retriever hybrid_floor)"))
        if len(names) > 2:
            result = with_db(lambda db: compare_many_retrievers(db, run_a, names, metrics=metric, alpha=alpha))
        else:
            result = with_db(lambda db: compare_retrievers(db, run_a, names[0], names[1], metric))
    elif more:
        result = with_db(lambda db: compare_many_runs(db, [run_a, run_b, *more], metrics=metric, retrievers=retriever, alpha=alpha))
    else:
        result = with_db(lambda db: compare_runs(db, run_a, run_b, metrics=metric, retrievers=retriever))
    if as_json:
        out.print_json(result.model_dump_json())
        return
    show = {"ManyComparison": display_compare.show_many, "RetrieverComparison": display_compare.show_retriever_comparison}
    show.get(type(result).__name__, display_compare.show_comparison)(out, result)


@app.command()
def gate(
    baseline: Annotated[str, typer.Option("--baseline", help=f"The run the candidate must hold up against: {RUN_HELP}.")] = "previous",
    candidate: Annotated[str, typer.Option("--candidate", help=f"The run under test: {RUN_HELP}.")] = "latest",
    metric: MetricsOpt = None,
    retriever: Annotated[Optional[list[str]], typer.Option(help="Retriever(s) to gate (default: every retriever of the candidate).")] = None,
    max_drop: Annotated[float, typer.Option(help="Largest fall of the mean that passes.")] = 0.02,
    alpha: Annotated[float, typer.Option(help="A larger fall fails only when its paired p-value, Holm-adjusted over every check, is below this.")] = 0.05,
    allow_different_golden: Annotated[bool, typer.Option("--allow-different-golden", help="Gate runs of different golden sets on their shared "
                                                                                          "questions.")] = False,
    per_check: Annotated[bool, typer.Option("--per-check", help="Decide each check on its own p-value, not the Holm-adjusted one.")] = False,
    source: Annotated[Optional[str], typer.Option(help=(
        "Decide on the questions of this source only, e.g. real (a question whose source is not set counts as real); "
        "default: every question."))] = None,
    junit: Annotated[Optional[Path], typer.Option(help="Also write the result as JUnit XML to this file.")] = None,
    every: Annotated[bool, typer.Option("--all", help="List every broken question of a failed check (default: the worst 10 and a count).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fail (exit 1) when a metric (default recall@5) fell by more than --max-drop and significantly; print the broken questions:
    `gate --baseline main`."""
    from ..analysis.gate import gate as run_gate
    from . import analysis_tables as display_compare
    from .junit import write_junit

    if baseline.strip() == "latest" and candidate.strip() == "latest":  # 0.1: gate's latest meant the run before the candidate
        say(*OLD_GATE_LATEST)
        baseline = "previous"
    result = with_db(lambda db: run_gate(
        db, baseline=baseline, candidate=candidate, metric=metric or ["recall@5"], retriever=retriever,
        max_drop=max_drop, alpha=alpha, allow_different_golden=allow_different_golden,
        per_check=per_check, source=source))
    if junit is not None:
        checked(lambda: write_junit(result, junit))
    if as_json:
        out.print_json(result.model_dump_json())
    else:
        display_compare.show_gate(out, result, every=every)
    if junit is not None:
        plain(err, f"wrote JUnit XML to {junit}")
    if not result.passed:
        raise typer.Exit(1)


@app.command()
def report(
    runs: OptionalRunsArg = None,
    html_path: Annotated[Path, typer.Option("--html", help="Write the report as one self-contained HTML page to this file.")] = ...,
    run: Annotated[Optional[list[str]], typer.Option("--run", hidden=True, help="0.1: now positional.")] = None,
    metric: MetricOpt = None,
) -> None:
    """Write the history of RUNS (default: every finished run; the last is the latest) as one HTML page: trend, latest run,
    per-question matrix (default recall@5), slices: `report --html report.html`."""
    from .html import write_report

    if run:
        say(*OLD_REPORT_RUN)
    run = [*(runs or []), *(run or [])] or None
    path = with_db(lambda db: write_report(db, html_path, runs=run, metric=metric))
    plain(out, f"wrote the report to {path}")


@app.command()
def slices(
    run: RunArg = "latest",
    metric: MetricOpt = None,
    by: Annotated[Optional[list[str]], typer.Option(help="Question field(s) to group by: category, language, source, split.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a run's per-question scores (default recall@5) grouped by question category, language and source, with intervals:
    `slices latest --metric ndcg@10`."""
    metric = metric or "recall@5"
    from ..analysis.slices import slices as run_slices
    from ..analysis.sources import run_source_means
    from . import analysis_tables as display_compare
    from .source_tables import show_source_means

    found, sources = with_db(lambda db: (run_slices(db, run, metric, by=by or ("category", "language", "source")),
                                         run_source_means(db, run, metric)))
    if as_json:  # the slices, then the table of means per source with their gaps to real (by: source_means)
        out.print_json(data=[s.model_dump(mode="json") for s in found]
                       + [{"by": "source_means", "value": s.source, **s.model_dump(mode="json")} for s in sources])
        return
    display_compare.show_slices(out, found)
    show_source_means(out, sources)
