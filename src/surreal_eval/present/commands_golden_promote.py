"""`golden promote`: questions that failed in production taken into the golden set for good, from a file of
failures (each query with the document that answered it) or from the failing questions of a finished run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from .app import RUN_HELP, CorpusOpt, MetricOpt, fail, out, plain, table_name, with_db
from .commands_golden import golden_app
from .commands_load import EmbedderOpt, _embedder
from .deprecated import old_option, say

OLD_RUN = old_option("golden promote", "--run RUN", "--from-run RUN")


@golden_app.command("promote")
def golden_promote(
    path: Annotated[Optional[Path], typer.Argument(help="JSONL or CSV of production failures: {query, answer (id or ids), id?, note?, time?} a line.")] = None,
    from_run: Annotated[Optional[str], typer.Option("--from-run", help=f"Instead of a file: promote the questions this finished run failed on --metric "
                                                                       f"({RUN_HELP}).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", hidden=True, help="0.1: now --from-run.")] = None,
    metric: MetricOpt = None,
    below: Annotated[float, typer.Option("--below", help="With --from-run: a score at or below this is a failure.")] = 0,
    retriever: Annotated[Optional[str], typer.Option("--retriever", help="With --from-run: the retriever whose scores count (default: the run's only "
                                                                         "one).")] = None,
    corpus: CorpusOpt = None,
    note: Annotated[Optional[str], typer.Option("--note", help="Why: kept in the history (a file's own note per line wins).")] = None,
    by: Annotated[Optional[str], typer.Option("--by", help="Who (default: SURREAL_EVAL_BY, else your user name).")] = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Take failing production questions into the golden set for good, marked production-failure (see golden history):
    `golden promote failures.jsonl`, or `golden promote --from-run latest --metric recall@5`."""
    if run is not None:
        say(*OLD_RUN)
        from_run = from_run or run
    run = from_run
    if (path is None) == (run is None):
        fail(ConfigError("give either a FILE of production failures or --from-run RUN --metric NAME@K"))
    if run is not None:
        if metric is None:
            fail(ConfigError("--from-run needs --metric NAME@K: the metric a question failed on"))
        from ..golden.promote import promote_run
        from ..runs.record import resolve_run

        done = with_db(lambda db: promote_run(db, resolve_run(db, run), metric, below=below, retriever=retriever,
                                              note=note, by=by))
        already = f"; {done.already} were production failures already" if done.already else ""
        plain(out, f"promoted {done.questions} questions of {done.golden} to production-failure "
                   f"({metric} <= {below:g}){already}")
        return
    from ..golden.promote import promote_failures

    table_name(corpus, "--corpus table")
    model = _embedder(embedder)
    try:
        done = with_db(lambda db: promote_failures(db, path, embedder=model, label_table=corpus, note=note, by=by))
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
    merged = f", {done.merged} promoted before given more answers" if done.merged else ""
    embedded = f", {done.embedded} embedded by the embedder" if done.embedded else ""
    plain(out, f"promoted {done.questions} production failures into {done.golden} ({done.labels} labels{merged}{embedded}); "
               f"the next run scores them")
