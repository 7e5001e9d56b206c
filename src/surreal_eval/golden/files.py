"""Golden-set questions loaded from files, alone or with the corpus they label (a BEIR folder): all or nothing,
in bounded memory, as load/bulk.py loads documents (its docstring says how a load runs)."""

from __future__ import annotations

from typing import Unpack

from collections.abc import Iterable
from pathlib import Path

from surrealdb import RecordID

from ..model_base import Model
from ..errors import ConfigError
from ..models import Article, Question
from ..store.analyzers import table_analyzer
from ..store.connection import Database
from ..store.journal import STAGING_PREFIX, remove_staging
from ..store.schema import DOCUMENTS, harness_config, identifier, record_article_indexes
from ..load.bulk import QUESTIONS, LoadReport, run_load
from ..load.ingests import existing, mark_ingest
from ..load.move import Move, move_all
from ..load.staging import Load, LoadOptions, Problems, stage_documents, stage_questions
from .labels import set_provenance, who
from .promote import keep_promoted

__all__ = ["DatasetReport", "add_questions", "load_beir", "load_dataset", "load_golden"]


class DatasetReport(Model):
    """A corpus and its golden set loaded together, all or nothing."""

    corpus: LoadReport
    golden: LoadReport
    seconds: float


def _label_table(db: Database, table: str) -> None:
    """Refuse a label table that is none of fn::seval::label_tables (seval_article, a corpus table loaded or attached, the table an
    attached one's records belong to)."""
    identifier(table, what="label table")
    if table != DOCUMENTS and table not in db.value("RETURN fn::seval::label_tables()"):
        way_on = (f"`surreal-eval load corpus FILE --corpus {table}` first" if table.startswith("seval_")
                  else f"`surreal-eval attach {table} --content FIELD` first")
        raise ConfigError(f"labels can name records of seval_article, of a corpus table (loaded or attached) or of the table an attached "
                          f"one's records belong to (attach --doc), not {table}: {way_on}")


def _see_loaded_labels(db: Database, source: str = "file") -> None:
    """Keep where the labels of a load came from (`source`: 'file', or 'click' for golden from-log), who loaded them and the digest of each
    document's text now (surql/labels.surql), for the history and the stale labels of the golden set."""
    db.value("RETURN fn::seval::see_golden_labels('seval_question', $source, $by)", {"by": who(), "source": source})


def load_golden(
    db: Database,
    questions: Iterable[Question],
    *,
    label_table: str | None = None,
    allow_unlabelled: bool = False,
    label_source: str = "file",
    demote: bool = False,
    **options: Unpack[LoadOptions],
) -> LoadReport:
    """Load golden-set questions (upsert by id), all or none; bare label ids name records of
    `label_table` (seval_article, a table attached with attach_table, or the table its records belong
    to; None: the corpus a run searches by default, fn::seval::default_corpus).

    Refused together, in one message: duplicate ids, labels naming documents that do not exist,
    questions with no judgment (unless `allow_unlabelled`: a question set not judged yet, ranked and left
    out of every mean), questions with no embedding (when no embedder is given). Their labels' provenance
    says `label_source` (surql/labels.surql). Refused at
    once, naming the question: empty text, a label twice, grades that do not match the labels, an
    embedding of the wrong dimension, and (unless `demote`) another source for, or a label dropped from,
    a question promoted from a production failure (golden/promote.py keep_promoted). `skipped` in the report
    is `questions.skipped` when the questions come from a BEIR or TREC reader (queries with no judgment).
    """
    load = Load(db, **options)
    staging = STAGING_PREFIX + QUESTIONS
    problems = Problems("golden set")
    if label_table is None:
        label_table = db.value("RETURN fn::seval::default_corpus()") if harness_config(db) else DOCUMENTS
    _label_table(db, label_table)

    demoted: list[RecordID] = []
    read, questions = questions, keep_promoted(db, questions, label_table, demote=demote, demoted=demoted)
    provenance: dict[str, dict] = {}  # what the file says of where each judgment came from (golden export)

    def kept(rows: Iterable[Question]) -> Iterable[Question]:
        for question in rows:
            if question.provenance:
                provenance[question.id] = question.provenance
            yield question

    def body() -> LoadReport:
        count, labels, embedded = stage_questions(load, kept(questions), staging, problems, set(), label_table, allow_unlabelled)
        problems.check()
        report = LoadReport(table=QUESTIONS, loaded=count, skipped=getattr(read, "skipped", 0),
                            embedded=embedded, labels=labels, batches=load.batches, duplicates=load.dropped[staging])
        if count:
            load.ensure_harness()
            move_all(load, [Move(staging, QUESTIONS, corpus=False)])
            _see_loaded_labels(db, label_source)
            set_provenance(db, QUESTIONS, provenance, label_table)
            if demoted:
                db.value("RETURN fn::seval::record_demoted($ids, $by)", {"ids": demoted, "by": who()})
        else:
            remove_staging(db)
        return report.model_copy(update={"seconds": load.seconds(), "harness_imported": load.harness_imported})

    return run_load(load, body)


def load_dataset(
    db: Database,
    documents: Iterable[Article],
    questions: Iterable[Question],
    *,
    source: str | None = None,
    analyzer: str | None = None,
    **options: Unpack[LoadOptions],
) -> DatasetReport:
    """Load documents into `article` and the golden set that labels them, all or nothing.

    Labels may name documents of this load or articles already stored. The documents' problems
    are refused first (one message), then the golden set's (one message). `analyzer`: as load_corpus.
    """
    analyzer = table_analyzer(db, DOCUMENTS, analyzer)
    load = Load(db, **options)
    doc_staging, question_staging = STAGING_PREFIX + DOCUMENTS, STAGING_PREFIX + QUESTIONS
    doc_problems, question_problems = Problems("corpus"), Problems("golden set")
    read, questions = questions, keep_promoted(db, questions, DOCUMENTS)

    def body() -> DatasetReport:
        staged, doc_embedded = stage_documents(load, documents, doc_staging, doc_problems, "article")
        doc_problems.check()
        doc_batches = load.batches
        count, labels, q_embedded = stage_questions(load, questions, question_staging, question_problems, staged)
        question_problems.check()
        load.ensure_harness(analyzer)
        existed = existing(db, DOCUMENTS, staged)
        moves = [Move(doc_staging, DOCUMENTS, corpus=True, analyzer=analyzer)] if staged else []
        moves += [Move(question_staging, QUESTIONS, corpus=False)] if count else []
        move_all(load, moves)
        if count:
            _see_loaded_labels(db)
        if staged:
            record_article_indexes(db, analyzer)
        remove_staging(db)
        seconds = load.seconds()
        return DatasetReport(
            corpus=LoadReport(table=DOCUMENTS, loaded=len(staged), embedded=doc_embedded, batches=doc_batches,
                              duplicates=load.dropped[doc_staging], seconds=seconds, harness_imported=load.harness_imported,
                              **(mark_ingest(load, DOCUMENTS, list(staged), existed, source) if staged else {})),
            golden=LoadReport(table=QUESTIONS, loaded=count, skipped=getattr(read, "skipped", 0),
                              embedded=q_embedded, labels=labels, batches=load.batches - doc_batches,
                              duplicates=load.dropped[question_staging], seconds=seconds),
            seconds=seconds,
        )

    return run_load(load, body)


def load_beir(
    db: Database,
    folder: Path | str,
    *,
    split: str = "test",
    analyzer: str | None = None,
    **options: Unpack[LoadOptions],
) -> DatasetReport:
    """Load a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv, embeddings/ if present)
    into `article` and `question` all or nothing; queries with no judgment are skipped and counted."""
    from ..load.readers import read_beir

    documents, questions = read_beir(Path(folder), split=split, on_duplicate=options.get("on_duplicate", "refuse"))
    return load_dataset(db, documents, questions, source=str(folder), analyzer=analyzer, **options)


def add_questions(db: Database, questions: Iterable[Question]) -> int:
    """Insert or replace golden-set questions, all or none; returns how many were written.

    Refused with the question's id: no labels, a label twice, a grade count that differs from the
    label count, a wrong embedding dimension, or a label naming an article that does not exist
    (see `load_golden`).
    """
    return load_golden(db, questions).loaded
