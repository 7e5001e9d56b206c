"""The `golden` group: golden sets kept in the user's own tables, registered in place (attach, detach,
list) and the labels whose record is gone (dangling)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .app import GoldenOpt, JsonOpt, app, out, plain, table_name, with_db
from .commands_load import EmbedderOpt, _embedder

golden_app = typer.Typer(help="Golden sets: your own table used in place, and labels whose record is gone.", no_args_is_help=True)
app.add_typer(golden_app, name="golden")


@golden_app.command("attach")
def golden_attach(
    table: Annotated[str, typer.Argument(help="Your own table of questions, used in place: never copied or written.")],
    text: Annotated[str, typer.Option("--text", help="The field holding each question's text.")],
    relevant: Annotated[str, typer.Option("--relevant", help="The field holding its labels: records of an attached corpus (or of the table its records belong to).")],
    embedding: Annotated[Optional[str], typer.Option("--embedding", help="The field holding its vector (none: --embedder computes one, kept on the harness's side).")] = None,
    grades: Annotated[Optional[str], typer.Option("--grades", help="The field holding one grade per label (none: every label grade 1).")] = None,
    category: Annotated[Optional[str], typer.Option("--category", help="The field holding its category (slices).")] = None,
    language: Annotated[Optional[str], typer.Option("--language", help="The field holding its language (slices).")] = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Register a table of yours as a golden set, read at every run; fields may be paths (meta.lang)."""
    from ..load.golden_attach import attach_golden

    table_name(table, "table")
    model = _embedder(embedder) if not embedding else None
    try:
        report = with_db(lambda db: attach_golden(db, table, text=text, relevant=relevant, embedding=embedding, grades=grades,
                                                  category=category, language=language, embedder=model))
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
    mapped = ", ".join(f"{key} from {field}" for key, field in report.fields.items() if field)
    plain(out, f"{'attached again' if report.again else 'attached'} golden set {report.table} ({report.questions} questions, "
               f"{report.labels} labels) in place: {mapped}")
    if report.embedded:
        plain(out, f"embedded {report.embedded} questions with the embedder (kept by the harness, keyed by question)")
    if report.unembedded:
        plain(out, f"{report.unembedded} questions have no embedding: vector retrievers need --embedding FIELD or --embedder")
    if report.dangling:
        plain(out, f"{report.dangling} labels name records that no longer exist: a run stops on them, or counts them as "
                   f"misses with --dangling-labels miss (surreal-eval golden dangling lists them)")


@golden_app.command("detach")
def golden_detach(table: Annotated[str, typer.Argument(help="An attached golden set.")]) -> None:
    """Forget an attached golden set (your table is untouched; its runs stay in history)."""
    from ..load.golden_attach import detach_golden

    removed = with_db(lambda db: detach_golden(db, table))
    plain(out, f"detached golden set {table} (dropped what the harness kept of {removed} questions); the table is untouched")


@golden_app.command("list")
def golden_list(as_json: JsonOpt = False) -> None:
    """List the golden sets: the harness's own and the tables attached in place."""
    import json

    from rich.table import Table

    from ..load.golden_attach import golden_sets

    rows = with_db(golden_sets)
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="golden sets (table seval_golden)")
    for column in ("table", "kind", "questions", "fields"):
        table.add_column(column, justify="right" if column == "questions" else "left")
    for row in rows:
        fields = ", ".join(f"{k}={v}" for k, v in sorted(row["fields"].items()) if v) if row["attached"] else "(its own)"
        table.add_row(row["name"], "attached" if row["attached"] else "harness", str(row["questions"]), fields)
    plain(out, table)


@golden_app.command("dangling")
def golden_dangling(golden: GoldenOpt = None, as_json: JsonOpt = False) -> None:
    """List the labels whose record no longer exists (the application deleted or rebuilt it)."""
    import json

    from ..load.golden_attach import list_dangling
    from ..store.golden import golden_set

    chosen, found = with_db(lambda db: (lambda g: (g, list_dangling(db, g)))(golden_set(db, golden)))
    if as_json:
        out.print_json(json.dumps(found))
        return
    if not found:
        plain(out, f"every label of {chosen.name} names a record that exists")
        return
    for row in found:
        plain(out, f"{row['question']} -> {row['label']}")
    plain(out, f"{len(found)} labels of {len({r['question'] for r in found})} questions of {chosen.name} name records that no longer exist")


