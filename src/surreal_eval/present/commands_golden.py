"""The `golden` group: golden sets kept in the user's own tables, registered in place (attach, remove,
list), the labels whose record is gone (dangling), their history, and export (JSONL or TREC qrels)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from .app import show_rows, GoldenOpt, JsonOpt, app, err, export_app, fail, out, plain, table_name, with_db
from .commands_load import EmbedderOpt, _embedder
from .deprecated import OLD_SPELLINGS, alias_command, say
from .writing import OutputOpt, write_lines

golden_app = typer.Typer(help="Golden sets: your own table used in place, and labels whose record is gone.", no_args_is_help=True)
app.add_typer(golden_app, name="golden")


@golden_app.command("attach")
def golden_attach(
    table: Annotated[str, typer.Argument(help="Your own table of questions, used in place: never copied or written.")],
    text: Annotated[str, typer.Option("--text", help="The field holding each question's text.")],
    relevant: Annotated[str, typer.Option("--relevant", help="The field holding its labels: records of an attached corpus (or of the table its records belong "
                                                             "to).")],
    embedding: Annotated[Optional[str], typer.Option("--embedding", help="The field holding its vector (none: --embedder computes one, kept on the harness's "
                                                                         "side).")] = None,
    grades: Annotated[Optional[str], typer.Option("--grades", help="The field holding one grade per label (none: every label grade 1).")] = None,
    category: Annotated[Optional[str], typer.Option("--category", help="The field holding its category (slices).")] = None,
    language: Annotated[Optional[str], typer.Option("--language", help="The field holding its language (slices).")] = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Register a table of yours as a golden set, read at every run; fields may be paths (meta.lang):
    `golden attach my_questions --text question --relevant answers`."""
    from ..golden.attach import attach_golden

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


@golden_app.command("remove")
def golden_remove(table: Annotated[str, typer.Argument(help="An attached golden set.")]) -> None:
    """Forget an attached golden set (your table is untouched; its runs stay in history): `golden remove my_questions`."""
    from ..golden.attach import detach_golden

    removed = with_db(lambda db: detach_golden(db, table))
    plain(out, f"detached golden set {table} (dropped what the harness kept of {removed} questions); the table is untouched")


@golden_app.command("list")
def golden_list(as_json: JsonOpt = False) -> None:
    """List the golden sets: the harness's own and the tables attached in place: `golden list`."""
    import json

    from rich.table import Table

    from ..golden.attach import golden_sets

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
    """List the labels whose record no longer exists (the application deleted or rebuilt it); exit 1 when it lists any,
    so that CI can stop on them: `golden dangling`."""
    import json

    from ..golden.attach import list_dangling
    from ..store.golden import golden_set

    chosen, found = with_db(lambda db: (lambda g: (g, list_dangling(db, g)))(golden_set(db, golden)))
    if as_json:
        out.print_json(json.dumps(found))
    elif not found:
        plain(out, f"every label of {chosen.name} names a record that exists")
    else:
        for row in found:
            plain(out, f"{row['question']} -> {row['label']}")
        questions = len({r["question"] for r in found})
        plain(out, f"{len(found)} labels of {questions} questions of {chosen.name} name records that no longer exist")
    if found:
        raise typer.Exit(1)




@golden_app.command("label")
def golden_label(
    question: Annotated[Optional[str], typer.Argument(help="The question, e.g. money_back or question:money_back.", show_default=False)] = None,
    doc: Annotated[Optional[str], typer.Argument(help="The document: table:id, or an id of the corpus a run searches by default.",
                                                 show_default=False)] = None,
    grade: Annotated[float, typer.Option("--grade", help="Its grade (above 0; nDCG uses it).")] = 1,
    not_relevant: Annotated[bool, typer.Option("--not", help="Judge it not relevant instead (judged@k counts it).")] = False,
    from_file: Annotated[Optional[Path], typer.Option("--from-file", exists=True, dir_okay=False, help="Add every judgment of this file "
                                                      "instead: JSONL {question, doc, grade} (grade 0: not relevant; null: left for "
                                                      "later), as `golden judge --calibrate-file` writes, or TSV question, doc, "
                                                      "grade; all or none.")] = None,
    note: Annotated[Optional[str], typer.Option("--note", help="Why: kept with the label.")] = None,
    by: Annotated[Optional[str], typer.Option("--by", help="Who (default: SURREAL_EVAL_BY, else your user name).")] = None,
    golden: GoldenOpt = None,
) -> None:
    """Add a label found while looking (or, with --not, a judgment of not relevant), keeping who, when and why:
    `golden label money_back refund_policy --grade 2`, or every judgment of a file: `golden label --from-file calibrate.jsonl`."""
    if from_file is not None:
        if question is not None or doc is not None or not_relevant:
            fail(ConfigError("--from-file reads the questions, documents and grades from the file: give no QUESTION, DOC or --not"))
        from ..golden.labels import add_labels

        added = with_db(lambda db: add_labels(db, from_file, golden=golden, note=note, by=by))
        done = ", ".join(f"{n} {action}" for action, n in sorted(added.actions.items())) or "nothing new"
        plain(out, f"{added.path} into {added.golden}: {done}; {added.unchanged} already so, {added.ungraded} lines with no grade yet "
                   "(left for later); the next run scores them")
        return
    if question is None or doc is None:
        fail(ConfigError("golden label needs QUESTION and DOC (or --from-file FILE)"))
    from ..golden.labels import add_label

    done = with_db(lambda db: add_label(db, question, doc, golden=golden, grade=grade, relevant=not not_relevant,
                                        note=note, by=by))
    said = "judged not relevant" if done.grade <= 0 else f"labelled (grade {done.grade:g})"
    plain(out, f"{done.question} of {done.golden}: {done.doc} {said} ({done.action}); the next run scores it")


@golden_app.command("stale")
def golden_stale(golden: GoldenOpt = None, as_json: JsonOpt = False) -> None:
    """List the labels whose document changed since they were made: relabel or confirm them: `golden stale`."""
    from ..golden.labels import stale_labels

    def show(read) -> None:  # type: ignore[no-untyped-def]
        chosen, found = read
        if not found:
            plain(out, f"no label of {chosen.name} is stale: every labelled document is as it was when labelled")
            return
        for row in found:
            seen = row.changed_seen_at.isoformat(timespec="seconds") if row.changed_seen_at else "not yet by a run"
            plain(out, f"{row.question} -> {row.doc}: labelled {row.labelled_at.isoformat(timespec='seconds')} ({row.source}"
                       f"{', ' + row.by if row.by else ''}), document changed since (first seen changed: {seen})")
        plain(out, f"{len(found)} labels of {chosen.name} are stale")

    show_rows(lambda db: stale_labels(db, golden), as_json, show, rows=lambda read: read[1])


@golden_app.command("history")
def golden_history_command(golden: GoldenOpt = None, as_json: JsonOpt = False) -> None:
    """List every change to a golden set: labels added, removed, regraded, judged not relevant, seen or gone: `golden history`."""
    from ..golden.labels import golden_history

    def show(read) -> None:  # type: ignore[no-untyped-def]
        chosen, changes = read
        for row in changes:
            what = f" {row.doc}" + (f" (grade {row.grade:g})" if row.grade is not None else "") if row.doc else ""
            who = ", ".join(x for x in (row.source, row.by) if x)
            plain(out, f"{row.at.isoformat(timespec='seconds')} {row.action} {row.question}{what}"
                       + (f" [{who}]" if who else "") + (f": {row.note}" if row.note else "")
                       + (f" (failed {row.failed_at.isoformat(timespec='seconds')})" if row.failed_at else ""))
        plain(out, f"{len(changes)} changes to {chosen.name}")

    show_rows(lambda db: golden_history(db, golden), as_json, show, rows=lambda read: read[1])


@golden_app.command("export")
def golden_export(
    path: Annotated[Optional[Path], typer.Argument(help="The file to write: JSONL that load golden reads back; with --format qrels, "
                                                        "stdout when none is given.", show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl (questions, labels and their provenance) or qrels (TREC: qid 0 docid grade, "
                                                      "for trec_eval and ranx).")] = "jsonl",
    from_run: Annotated[Optional[str], typer.Option("--from-run", help="With --format qrels: the labels a run scored against (resolved quote "
                                                                       "labels included), a RUN as every command takes it.")] = None,
    golden: GoldenOpt = None,
    embeddings: Annotated[bool, typer.Option("--embeddings", help="Write each question's embedding too (without them, load golden needs --embedder).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Write a golden set: as JSONL in the format load golden reads, with each label's provenance (`golden export gold.jsonl`), or as
    TREC qrels (`golden export --format qrels > gold.qrels`)."""
    if fmt == "qrels":
        if embeddings:
            fail(ConfigError("--embeddings goes with --format jsonl: qrels hold no questions"))
        _export_qrels(from_run, golden, path)
        return
    if fmt != "jsonl":
        fail(ConfigError(f"unknown --format {fmt!r}: jsonl or qrels"))
    if from_run is not None:
        fail(ConfigError("--from-run goes with --format qrels"))
    if path is None:
        fail(ConfigError("golden export needs the FILE to write (or --format qrels, which writes to stdout)"))
    from ..golden.export import export_golden

    done = with_db(lambda db: export_golden(db, path, golden=golden, embeddings=embeddings, force=force))
    merged = f", {done.harness_labels} of them added here (provenance origin harness: merge them into your table)" if done.harness_labels else ""
    plain(out, f"wrote {done.questions} questions ({done.judgments} judgments{merged}) of {done.golden} to {done.path}"
               f"{' with embeddings' if done.embeddings else ''}")
    if done.label_table:
        plain(out, f"load it with: surreal-eval load golden {done.path} --corpus {done.label_table}"
                   f"{'' if done.embeddings else ' --embedder SPEC'}")


def _export_qrels(run: Optional[str], golden: Optional[str], output: Optional[Path]) -> None:
    from ..runs.export import export_qrels_trec

    table = table_name(golden, "--golden table")
    count = with_db(lambda db: write_lines(export_qrels_trec(db, run=run, golden=table), output))
    if output is not None:
        plain(err, f"wrote {count} lines to {output}")


@export_app.command("qrels", hidden=True)
def export_qrels(
    run: Annotated[Optional[str], typer.Option("--run", help="The labels a run scored against.")] = None,
    golden: GoldenOpt = None,
    output: OutputOpt = None,
) -> None:
    """0.1's `export qrels`: now `golden export --format qrels`."""
    say("export qrels [--run RUN] [-o FILE]", "golden export [FILE] --format qrels [--from-run RUN]")
    _export_qrels(run, golden, output)


OLD_SPELLINGS.append(("export qrels [--run RUN] [-o FILE]", "golden export [FILE] --format qrels [--from-run RUN]"))
alias_command(golden_app, "detach", "golden detach TABLE", "golden remove TABLE", golden_remove)
