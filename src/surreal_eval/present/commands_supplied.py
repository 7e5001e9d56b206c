"""Commands that score rankings made outside the database: score (a run file) and endpoint (live search APIs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..grammar import parse_ks
from .app import JsonOpt, app, checked, err, out, plain, table_name, with_db


@app.command()
def score(
    file: Annotated[Path, typer.Argument(help="A TREC run file (qid Q0 docid rank score tag) or JSONL ({question, ranked}).")],
    label: Annotated[Optional[str], typer.Option(help="A label for this run in history (default: scored from FILE).")] = None,
    name: Annotated[Optional[str], typer.Option(help="Retriever name: renames a TREC file's one tag; names JSONL rankings that give no retriever (default: supplied).")] = None,
    corpus: Annotated[Optional[str], typer.Option(help="Corpus table whose records the document ids name (default: article).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto (a first line starting with { is JSONL), trec or jsonl.")] = "auto",
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated.")] = "1,3,5,10",
    per_question: Annotated[bool, typer.Option("--per-question", help="Include every question's result.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Record rankings made elsewhere as a run in history, scored like the database's own retrievers."""
    from . import run_tables as display
    from ..runs.score import score_file

    ks = checked(lambda: parse_ks(k))
    table = table_name(corpus, "--corpus table")
    report = with_db(lambda db: score_file(db, file, ks=ks, label=label, corpus=table, format=fmt, name=name,
                                           per_question=per_question))
    if as_json:
        out.print_json(report.model_dump_json(exclude={"per_question"} if not per_question else None))
        return
    display.show_report(out, report, per_question=per_question)
    for retriever, absent in report.params["supplied"]["absent"].items():
        if absent:
            plain(err, f"note: {retriever} ranks nothing for {absent} of the {report.questions} golden questions: "
                       "each scores 0 (an empty ranking)")
