"""Commands that score rankings made outside the database: score (a run file) and endpoint (live search APIs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..grammar import parse_ks
from .app import CorpusOpt, JsonOpt, KsOpt, NoRecordOpt, app, checked, err, out, plain, show_rows, table_name, with_db
from .deprecated import old_option, say
from .option_sets import NAMING, SCORING, Naming, Scoring, naming_params, scoring_params, with_options

OLD_NAME = old_option("score", "--name R", "--retriever R")
old_option("score", "--label TEXT", "--tag NAME or --note TEXT")


@app.command()
@with_options(SCORING)
@with_options(NAMING, into="naming")
def score(
    file: Annotated[Path, typer.Argument(help="A TREC run file (qid Q0 docid rank score tag) or JSONL ({question, ranked}).")],
    naming: Naming = None,
    retriever: Annotated[Optional[str], typer.Option("--retriever", help="The retriever the rankings are recorded as: renames a TREC file's one tag; "
                                                                         "names JSONL rankings that give no retriever (default: supplied).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", hidden=True, help="0.1: now --retriever.")] = None,
    corpus: CorpusOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="auto (a first line starting with { is JSONL), trec or jsonl.")] = "auto",
    k: KsOpt = "1,3,5,10",
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    scoring: Scoring = None,
    no_record: NoRecordOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Record rankings made elsewhere as a run in history, scored like the database's own retrievers:
    `score run.trec --retriever mine --tag mine-v1`."""
    from ..runs.score import score_file
    from . import run_tables as display

    ks = checked(lambda: parse_ks(k))
    tag, note = naming_params("score", naming)
    if name is not None:
        say(*OLD_NAME)
        retriever = retriever or name
    table = table_name(corpus, "--corpus table")
    report = with_db(lambda db: score_file(db, file, ks=ks, label=note, tag=tag, corpus=table, format=fmt, name=retriever,
                                           per_question=per_question, record=not no_record, **scoring_params(scoring)))
    if as_json:
        out.print_json(report.model_dump_json(exclude={"per_question"} if not per_question else None))
        return
    display.show_report(out, report, per_question=per_question)
    for retriever, absent in report.params["supplied"]["absent"].items():
        if absent:
            plain(err, f"note: {retriever} ranks nothing for {absent} of the {report.questions} golden questions: "
                       "each scores 0 (an empty ranking)")


endpoint_app = typer.Typer(help="Register live search endpoints, evaluated as retrievers http:NAME.", no_args_is_help=True)
app.add_typer(endpoint_app, name="endpoint")


@endpoint_app.command("add")
def endpoint_add(
    name: Annotated[str, typer.Argument(help="Endpoint name; evaluate it with --retriever http:NAME.")],
    url: Annotated[str, typer.Option("--search-url", help="The endpoint's URL (--url is the database's); {text} and {k} as query values are sent URL-encoded, "
                                                          "e.g. 'http://h/search?q={text}&k={k}'.")],
    ids: Annotated[str, typer.Option(help="JMESPath expression of the ranked ids in the JSON answer, e.g. 'hits[*].id'.")],
    post: Annotated[Optional[str], typer.Option(help="POST this JSON body instead of a GET, e.g. '{\"query\": \"{text}\", \"k\": {k}}'.")] = None,
    scores: Annotated[Optional[str], typer.Option(help="JMESPath expression of their scores (default: scores from the ranks).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds one request may take.")] = 10.0,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4,
    retries: Annotated[int, typer.Option(help="Retries of a request that fails to connect, times out, or gets 429 or 5xx.")] = 3,
) -> None:
    """Register a search endpoint the harness calls for every question, the question's text sent as data:
    `endpoint add prod --search-url 'http://localhost:9200/search?q={text}&k={k}' --ids 'hits[*].id'`."""
    from ..runs.endpoints import Endpoint, add_endpoint

    given = Endpoint(name=name, url=url, post=post, ids=ids, scores=scores, timeout=timeout, concurrency=concurrency,
                     retries=retries)
    with_db(lambda db: add_endpoint(db, given))
    plain(out, f"endpoint {name} registered: evaluate it with --retriever http:{name}")


@endpoint_app.command("list")
def endpoint_list(as_json: JsonOpt = False) -> None:
    """List the registered search endpoints: `endpoint list`."""
    from ..runs.endpoints import endpoints

    def show(rows: list) -> None:
        for row in rows:
            how = f"POST {row.post}" if row.post else "GET"
            plain(out, f"http:{row.name}  {row.url}  {how}  ids {row.ids}" + (f"  scores {row.scores}" if row.scores else ""))
        if not rows:
            plain(out, "no endpoint registered: `surreal-eval endpoint add NAME --search-url ... --ids ...`")

    show_rows(endpoints, as_json, show)


@endpoint_app.command("remove")
def endpoint_remove(name: Annotated[str, typer.Argument(help="Endpoint name.")]) -> None:
    """Unregister a search endpoint (the runs that evaluated it keep their rankings): `endpoint remove prod`."""
    from ..runs.endpoints import remove_endpoint

    with_db(lambda db: remove_endpoint(db, name))
    plain(out, f"endpoint {name} removed")
