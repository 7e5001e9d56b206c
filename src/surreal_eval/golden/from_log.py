"""`golden from-log`: a search log made into questions of the harness's own golden set with click labels.

The whole log is read and checked first (every line, every id naming a record), then its queries are
grouped and sampled (module search_log), labels derived with a click model the log chooses by held-out
fit, or the one named (modules click_model, click_models), and the questions loaded through
`load_golden`, all or nothing: any refusal leaves the database as it was.
Each question's id comes from its normalised text (`click_` and 8 hex digits of its sha256), so loading
the same log again writes the same questions and labels; a question of another source with the same
text stays a question of its own beside it. Questions sampled whose query earned no label are loaded
unlabelled (ranked, left out of every mean). Each label's provenance (source click) names the click model,
how it was chosen, its held-out fit and the pair's relevance.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path


from ..model_base import Model
from ..errors import ConfigError, InputError
from ..models import LabelProvenance, Question
from ..store.connection import Database, record_str, to_record
from ..store.schema import DOCUMENTS, harness_config
from ..load.bulk import LoadReport
from ..golden.files import load_golden
from .click_model import ClickModel, LogLabels, label_log
from .click_models import Fit
from .labels import who
from ..load.embedding import Embedder
from .search_log import Impression, LogFormat, QueryGroup, group_queries, read_log, sample_queries
from ..load.staging import Progress, batches

__all__ = ["FromLogReport", "click_question_id", "golden_from_log", "log_questions"]

_EXISTS_CHUNK = 1000


class FromLogReport(Model):
    """What `golden from-log` read, sampled, derived and loaded."""

    source: str
    impressions: int
    queries: int
    head: int
    tail: int
    #: the seed of the tail's draw and of auto's held-out split
    seed: int
    questions: int
    labelled: int
    unlabelled: int
    labels: int
    #: labels per grade ({"1": n, "2": m})
    grades: dict[str, int]
    judged_not_relevant: int
    model: ClickModel
    #: the click model the labels came from, and why it (auto: best held-out log-likelihood)
    click_model: str = "coec"
    chosen_by: str = ""
    #: every click model's held-out fit, best first (empty when the log is too small to hold a part out)
    fits: list[Fit] = []
    #: whose embedding came from a question of the same text already stored (no embedder given)
    reused_embeddings: int = 0
    load: LoadReport | None = None


def click_question_id(normalised: str) -> str:
    """The id of the question a normalised query becomes: `click_` and 8 hex digits of its sha256."""
    return "click_" + hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:8]


def _check_ids(db: Database, impressions: list[Impression], label_table: str, source: str) -> None:
    """Refuse, naming file:line and the id, the first id of the log that names no record."""
    first: dict[str, tuple[str, int]] = {}
    for impression in impressions:
        for doc in impression.shown:
            first.setdefault(doc, (doc, impression.line))
    for chunk in batches(list(first.values()), _EXISTS_CHUNK):
        records = [to_record(doc, label_table) for doc, _ in chunk]
        gone = {record_str(r) for r in db.value("RETURN fn::seval::missing_records($r)", {"r": records})}
        for (doc, line), record in zip(chunk, records):
            if record_str(record) in gone:
                raise InputError(f"id {doc!r} names no record ({record_str(record)} does not exist)", source=source, line=line)


def _canonical(impressions: list[Impression], label_table: str) -> list[Impression]:
    """`impressions` with every id written as the record it names (`5` and `seval_article:5` alike become
    `seval_article:5`), so one document is one document however the log spells it."""
    name = lambda doc: record_str(to_record(doc, label_table))  # noqa: E731
    return [i.model_copy(update={"shown": list(dict.fromkeys(map(name, i.shown))), "clicked": list(dict.fromkeys(map(name, i.clicked))),
                                 "dwell": {name(d): v for d, v in i.dwell.items()} if i.dwell else i.dwell}) for i in impressions]


def _stored_embeddings(db: Database, texts: list[str]) -> dict[str, list[float]]:
    """{text: embedding} of the questions of the harness's own set whose text is one of `texts`."""
    rows = db.value("RETURN fn::seval::stored_embeddings($texts)", {"texts": texts})
    return {row["text"]: row["embedding"] for row in rows}


def _provenance(found: LogLabels, query: str, labels: dict[str, int]) -> dict[str, LabelProvenance] | None:
    """Each label's provenance: the click model, how it was chosen, its held-out fit, the pair's relevance."""
    if not labels:
        return None
    fit = next((f for f in found.fits if f.model == found.model), None)
    how = (f"{found.chosen_by}: held-out log-likelihood {fit.log_likelihood:.4f} per impression, perplexity "
           f"{fit.perplexity:.4f}, {fit.held_out_impressions} of {fit.held_out_impressions + fit.train_impressions} "
           f"impressions held out") if fit else found.chosen_by
    by = who()
    return {doc: LabelProvenance(source="click", by=by, note=f"click model {found.model} ({how}); relevance "
                                 f"{found.scores[query][doc]:.3f}") for doc in labels}


def log_questions(impressions: list[Impression], groups: list[QueryGroup], model: ClickModel, *, seed: int = 0,
                  found: LogLabels | None = None) -> list[Question]:
    """The questions the sampled `groups` become, with the labels `model` derives from the whole log (`found`:
    label_log's answer, when already computed; `seed`: auto's held-out split)."""
    found = found or label_log(impressions, model, {g.normalised for g in groups}, seed)
    questions = []
    for group in groups:
        labels, unclicked = found.derived.get(group.normalised, ({}, []))
        questions.append(Question(id=click_question_id(group.normalised), text=group.text, source="click",
                                  frequency=group.frequency, relevant=list(labels), grades=[float(g) for g in labels.values()],
                                  nonrelevant=unclicked or None, provenance=_provenance(found, group.normalised, labels)))
    ids = Counter(q.id for q in questions)
    if len(ids) != len(questions):
        raise InputError(f"two queries share the question id {ids.most_common(1)[0][0]} (a sha256 prefix collision)")
    return questions


def golden_from_log(
    db: Database,
    path: Path | str,
    *,
    format: LogFormat = "auto",
    top: int = 50,
    sample: int = 50,
    seed: int = 0,
    model: ClickModel | None = None,
    embedder: Embedder | None = None,
    label_table: str | None = None,
    progress: Progress | None = None,
    load: bool = True,
) -> FromLogReport:
    """Make search log `path` into questions (source 'click', with their frequency) of the harness's own
    golden set and their click labels (provenance source 'click'), all or nothing.

    Questions: the `top` most frequent normalised queries and `sample` more drawn by frequency (`seed`).
    Labels: `model` (ClickModel defaults: the click model auto chooses by held-out fit on a split drawn with
    `seed`). Embeddings: `embedder`; with none, a question takes the embedding
    of a stored question with exactly its text, and the others are refused as `load golden` refuses them.
    Ids name records of `label_table` (bare) or `table:id`, as labels do (default: the corpus a run
    searches by default). `load` False reads, checks and derives without writing (a dry run).
    """
    model = model or ClickModel()
    source = str(path)
    if harness_config(db) is None:
        raise ConfigError("the harness is not imported here: load a corpus first (surreal-eval load beir / load corpus)")
    if label_table is None:
        label_table = db.value("RETURN fn::seval::default_corpus()") or DOCUMENTS
    impressions = list(read_log(Path(path), format=format))
    _check_ids(db, impressions, label_table, source)
    impressions = _canonical(impressions, label_table)
    head, tail = sample_queries(group_queries(impressions), top=top, sample=sample, seed=seed)
    found = label_log(impressions, model, {g.normalised for g in head + tail}, seed)
    questions = log_questions(impressions, head + tail, model, found=found)
    reused = 0
    if embedder is None:
        stored = _stored_embeddings(db, [q.text for q in questions])
        questions = [q.model_copy(update={"embedding": stored.get(q.text)}) for q in questions]
        reused = sum(q.embedding is not None for q in questions)
    grades = Counter(f"{g:g}" for q in questions for g in (q.grades or []))
    report = FromLogReport(
        source=source, impressions=len(impressions), queries=len(group_queries(impressions)), head=len(head), tail=len(tail), seed=seed,
        questions=len(questions), labelled=sum(bool(q.relevant) for q in questions),
        unlabelled=sum(not q.relevant for q in questions), labels=sum(len(q.relevant) for q in questions),
        grades=dict(sorted(grades.items())), judged_not_relevant=sum(len(q.nonrelevant or []) for q in questions),
        model=model, click_model=found.model, chosen_by=found.chosen_by, fits=found.fits, reused_embeddings=reused)
    if not load:
        return report
    loaded = load_golden(db, questions, embedder=embedder, progress=progress, label_table=label_table,
                         allow_unlabelled=True, label_source="click")
    return report.model_copy(update={"load": loaded})

