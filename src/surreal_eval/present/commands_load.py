"""Commands that load data: load corpus, load golden, load beir, chunk."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional, TypeVar

import typer

from ..errors import ConfigError
from ..load.rows import DEFAULT_BATCH_SIZE

if TYPE_CHECKING:
    from ..store.connection import Database
from .app import AnalyzerOpt, CorpusOpt, app, checked, fail, load_app, out, plain, table_name, with_db
from .commands_watch import after_ingest, prepare_after_ingest
from .deprecated import old_option, say
from .progress import Progress

OLD_TABLE = old_option("load corpus", "--table T", "--corpus T")
OLD_FROM = old_option("chunk", "--from T", "--corpus T")

T = TypeVar("T")


def _load(action: Callable[[Database, Callable[[str, int, Optional[int]], None]], T], embedder: object = None,
          then: Callable[[Database, T], None] | None = None) -> T:
    """Run a load with a progress display (the library reports progress, the CLI draws it), then
    close the embedder, if any; `then(db, report)`, when given, runs after the load on the same connection (what a
    load says, and the evaluation after its commit: a second connection to the store costs about 40 ms)."""
    progress = Progress()

    def body(db: Database) -> T:
        try:
            report = action(db, progress)
        finally:
            progress.close()
        if then is not None:
            db.new_store = None  # committed: a failure after it leaves the store and its records where they are
            then(db, report)
        return report

    try:
        return with_db(body)
    finally:
        progress.close()
        close = getattr(embedder, "close", None)
        if callable(close):
            close()


def _embedder(spec: Optional[str]):
    """The embedder a --embedder spec names, or None."""
    if not spec:
        return None
    from ..load.embedders import embedder_from_spec

    return checked(lambda: embedder_from_spec(spec))


def _loaded(report, what: str) -> str:
    """`N what`, how many of them the embedder embedded, and how many rows repeating an id were dropped."""
    parts = [f"{report.loaded} {what.removesuffix('s') if report.loaded == 1 else what}"]
    if report.embedded:
        parts.append(f"{report.embedded} embedded by the embedder")
    if report.duplicates:
        parts.append(f"{report.duplicates} row{'s' if report.duplicates != 1 else ''} repeating an id dropped")
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
class OnDuplicate(str, Enum):
    refuse = "refuse"
    first = "first"
    last = "last"


DuplicateOpt = Annotated[OnDuplicate, typer.Option(
    "--on-duplicate", help="An id on two rows: refuse the load (naming the file and lines), or keep the first or the last row.")]
SplitHelp = "BEIR: which qrels/<split>.tsv (default test); the split given to questions that name none."


@load_app.command("corpus")
def load_corpus(
    path: Annotated[Path, typer.Argument(help="JSONL or CSV file ({id, title, content or text, embedding?, ...}), or a BEIR folder.")],
    corpus: CorpusOpt = None,
    table: Annotated[Optional[str], typer.Option("--table", hidden=True, help="0.1: now --corpus.")] = None,
    fmt: Annotated[DocumentFormat, typer.Option("--format", help="File format; auto: by suffix, a folder is BEIR.")] = DocumentFormat.auto,
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
    on_duplicate: DuplicateOpt = OnDuplicate.refuse,
    analyzer: AnalyzerOpt = None,
) -> None:
    """Load documents into a corpus table (all or none, upsert by id), then build its BM25 and HNSW indexes:
    `load corpus docs.jsonl --corpus seval_docs` (a new table's name starts with seval_).

    Imports the harness first if the database has none, with the dimension of the data's embeddings.
    """
    from ..load.bulk import load_corpus as ingest_corpus
    from ..load.readers import read_documents

    if table is not None:
        say(*OLD_TABLE)
    table = table_name(corpus if corpus is not None else table, "--corpus table") or "seval_article"
    model = _embedder(embedder)

    def said(db: Database, report) -> None:
        what = "articles" if report.table == "seval_article" else "documents"
        plain(out, f"loaded {_loaded(report, what)} into {report.table} from {path} in {report.seconds:.1f} s{_harness_note(report)}")
        after_ingest(report.ingest, db)

    _load(lambda db, progress: ingest_corpus(
        db, read_documents(path, format=fmt.value), table=table, embedder=model, batch_size=batch_size,
        progress=progress, create_harness=True, source=str(path), on_duplicate=on_duplicate.value,
        analyzer=analyzer, tables=db.opened_tables, meanwhile=prepare_after_ingest), model, then=said)  # the load's first statement: the tables as opened


@load_app.command("golden")
def load_golden(
    path: Annotated[Path, typer.Argument(help="JSONL or CSV file ({id, text, embedding?, relevant, ...}), a BEIR folder, or TREC qrels.")],
    fmt: Annotated[GoldenFormat, typer.Option("--format", help="File format; auto: by suffix, a folder is BEIR, other files TREC qrels.")] = GoldenFormat.auto,
    split: Annotated[Optional[str], typer.Option(help=SplitHelp)] = None,
    queries: Annotated[Optional[Path], typer.Option(help="TREC: the questions' text, JSONL {_id, text} or TSV id<TAB>text.")] = None,
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
    on_duplicate: DuplicateOpt = OnDuplicate.refuse,
    corpus: CorpusOpt = None,
    allow_unlabelled: Annotated[bool, typer.Option("--allow-unlabelled", help="Keep questions with no judgment (ranked, left out of every mean) instead of "
                                                                              "refusing them.")] = False,
    demote: Annotated[bool, typer.Option("--demote", help="Let this load give another source to, or drop labels of, questions promoted from production "
                                                          "failures (kept in golden history).")] = False,
) -> None:
    """Load golden-set questions (all or none, upsert by id); their labels must name stored records, bare ids those of
    --corpus: `load golden questions.jsonl --corpus seval_docs`."""
    from ..golden.files import load_golden as ingest_golden
    from ..load.readers import read_questions

    table_name(corpus, "--corpus table")
    model = _embedder(embedder)
    report = _load(lambda db, progress: ingest_golden(
        db, read_questions(path, format=fmt.value, split=split, queries=queries), embedder=model,
        batch_size=batch_size, progress=progress, create_harness=True, on_duplicate=on_duplicate.value,
        label_table=corpus, allow_unlabelled=allow_unlabelled, demote=demote), model)
    plain(out, f"loaded {_loaded(report, 'questions')} ({report.labels} labels) from {path} "
              f"in {report.seconds:.1f} s{_harness_note(report)}")
    if report.skipped:
        plain(out, f"skipped {report.skipped} quer{'y' if report.skipped == 1 else 'ies'} with no relevant judgment "
                   f"(not loaded; trec_eval would count such a query as 0)")


@load_app.command("beir")
def load_beir(
    folder: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv, embeddings/ (optional).")],
    split: Annotated[str, typer.Option(help="Which qrels/<split>.tsv to load.")] = "test",
    embedder: EmbedderOpt = None,
    batch_size: BatchOpt = DEFAULT_BATCH_SIZE,
    on_duplicate: DuplicateOpt = OnDuplicate.refuse,
    analyzer: AnalyzerOpt = None,
) -> None:
    """Load a BEIR folder's documents, queries and judgments together, all or nothing: `load beir datasets/scifact --split test`.

    Queries with no judgment in the split are skipped and counted. Imports the harness first if the
    database has none, with the dimension of the data's embeddings.
    """
    from ..golden.files import load_beir as ingest_beir

    model = _embedder(embedder)

    def said(db: Database, report) -> None:
        corpus, golden = report.corpus, report.golden
        plain(out,
            f"loaded {_loaded(corpus, 'articles')} and {_loaded(golden, 'questions')} ({golden.labels} labels) "
            f"from {folder} in {report.seconds:.1f} s{_harness_note(corpus)}")
        if golden.skipped:
            plain(out, f"skipped {golden.skipped} quer{'y' if golden.skipped == 1 else 'ies'} of queries.jsonl with no relevant "
                       f"judgment in qrels/{split}.tsv (not loaded; trec_eval would count such a query as 0)")
        after_ingest(corpus.ingest, db)

    _load(lambda db, progress: ingest_beir(
        db, folder, split=split, embedder=model, batch_size=batch_size, progress=progress, create_harness=True,
        on_duplicate=on_duplicate.value, analyzer=analyzer, meanwhile=prepare_after_ingest), model, then=said)


@app.command()
def chunk(
    corpus: CorpusOpt = None,
    source: Annotated[Optional[str], typer.Option("--from", hidden=True, help="0.1: now --corpus.")] = None,
    target: Annotated[str, typer.Option("--into", help="Chunk table to create or refill.")] = ...,
    size: Annotated[int, typer.Option(help="Chunk size in words (runs of non-space characters; not tokens or characters).")] = 200,
    overlap: Annotated[int, typer.Option(help="Words shared by consecutive chunks.")] = 0,
    embedder: Annotated[Optional[str], typer.Option(envvar="SURREAL_EVAL_EMBEDDER", help="openai:MODEL@BASE_URL or local:MODEL.")] = None,
) -> None:
    """Split documents into a chunk table (each chunk keeps its document) and embed the chunks:
    `chunk --corpus seval_article --into seval_chunk --size 100 --embedder local:all-MiniLM-L6-v2`."""
    from ..load.chunking import chunk_corpus
    from ..load.embedders import embedder_from_spec

    if source is not None:
        say(*OLD_FROM)
    source = table_name(corpus if corpus is not None else source, "--corpus table") or "seval_article"
    table_name(target, "--into table")
    if not embedder:
        fail(ConfigError("chunks need embeddings: pass --embedder or set SURREAL_EVAL_EMBEDDER"))
    model = checked(lambda: embedder_from_spec(embedder))
    report = with_db(lambda db: chunk_corpus(db, source=source, target=target, size=size, overlap=overlap, embedder=model))
    plain(out, f"cut {source} into {report.loaded} chunks in {target} (size {size} words, overlap {overlap} words)")
    after_ingest(report.ingest)


@app.command()
def attach(
    table: Annotated[str, typer.Argument(help="Your own table, used in place: never copied or altered.")],
    content: Annotated[str, typer.Option("--content", help="The field holding each record's text (BM25).")],
    embedding: Annotated[Optional[str], typer.Option("--embedding", help="The field holding each record's vector.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="The field holding each record's title.")] = None,
    doc: Annotated[Optional[str], typer.Option("--doc", help="The field naming each record's document (a record).")] = None,
    index: Annotated[bool, typer.Option("--index", help="Define harness-owned indexes the table lacks (seval_<table>_<field>).")] = False,
    analyzer: AnalyzerOpt = None,
    bm25_fields: Annotated[Optional[str], typer.Option("--bm25-fields", help=(
        "The fields BM25 searches, comma-separated, each through a FULLTEXT index of its own, scores summed (default: "
        "the --title field and --content when the title has such an index or --index defines one, else --content)."))] = None,
) -> None:
    """Attach a table you already have as a corpus, through its own FULLTEXT and HNSW indexes:
    `attach chunks --content text --embedding vector`."""
    from ..load.attach import attach_table

    table_name(table, "table")
    searched = None if bm25_fields is None else [f.strip() for f in bm25_fields.split(",")]
    report = with_db(lambda db: attach_table(db, table, content=content, embedding=embedding, title=title, doc=doc, index=index,
                                                analyzer=analyzer, bm25_fields=searched))
    used = [f"BM25 on {f} through index {i}" for f, i in zip(report.bm25_fields, report.bm25_indexes)]
    if report.embedding:
        used.append(f"{report.embedding} through index {report.vector_index}")
    plain(out, f"attached {report.table} ({report.records} records) in place: {' and '.join(used)}")
    others = ", ".join(f for f in report.bm25_fields if f != report.content)
    never = (" (BM25 never finds them)" if report.missing_bm25 == report.missing_content
             else f" (BM25 finds them by {others})" if report.missing_bm25 == 0
             else f" (BM25 never finds {report.missing_bm25} of them, which have no text in {others} either)")
    lacking = [f"{n} without text in {report.content}{never}" for n in [report.missing_content] if n]
    lacking += [f"{n} without a vector in {report.embedding} (vector search never finds them)"
                for n in [report.missing_embedding] if n]
    if lacking:
        plain(out, f"of its {report.records} records, {' and '.join(lacking)}")
    if report.parents:
        plain(out, f"labels may also name records of {', '.join(report.parents)} (the documents its {report.doc} field names)")
    if report.defined:
        plain(out, f"defined harness-owned indexes on {report.table}: {', '.join(report.defined)}")
    if report.bm25_note:
        plain(out, report.bm25_note)
