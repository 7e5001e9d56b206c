"""What fell from one run to the next, question by question, without a comparison's statistics: what a watched
load prints after its evaluation (`compare` gives the intervals and tests)."""

from __future__ import annotations

from typing import Any

from ..model_base import Model
from ..models import RunReport
from ..runs.record import load_run, resolve_run, results_of
from ..store.connection import Database
from ..store.record_ids import record_str, to_record
from .blame import Culprit, Entered, InputList, Pushed
from .compare import TOLERANCE, QuestionDelta, metric_specs, paired_scores, report_index

__all__ = ["Fell", "prepare_what_fell", "read_rescored", "what_fell", "what_fell_after"]

class Fell(Model):
    """A retriever and metric@k on which questions fell from run A to run B: their means over the questions both
    scored, and the questions that fell (largest fall first)."""

    retriever: str
    metric: str
    mean_a: float
    mean_b: float
    broken: list[QuestionDelta]


def what_fell(a: RunReport, b: RunReport, *, run_means: bool = False) -> list[Fell]:
    """Every retriever and metric@k both loaded runs measured on which a question scored lower in `b` than in `a`:
    what `compare_reports` lists as broken, with the same means (with `run_means`, each run's own mean over all its
    questions, for reports holding only some questions' results), without its intervals and tests."""
    index_a, index_b = report_index(a), report_index(b)
    shared = sorted({r.question for r in a.per_question or []} & {r.question for r in b.per_question or []})
    specs = metric_specs(None, [k for k in a.ks if k in b.ks], names=[m for m in a.metrics if m in b.metrics])
    names = [r for r in a.retrievers if r in b.retrievers]
    fell = []
    for retriever, spec, scores_a, scores_b, paired in paired_scores(index_a, index_b, names, specs, shared):
        broken = [QuestionDelta(question=q, before=scores_a[q], after=scores_b[q]) for q in paired
                  if scores_b[q] < scores_a[q] - TOLERANCE]
        if broken:
            mean_a = a.mean(retriever, spec.name, spec.k) if run_means else None
            mean_b = b.mean(retriever, spec.name, spec.k) if run_means else None
            fell.append(Fell(retriever=retriever, metric=str(spec),
                             mean_a=sum(scores_a[q] for q in paired) / len(paired) if mean_a is None else mean_a,
                             mean_b=sum(scores_b[q] for q in paired) / len(paired) if mean_b is None else mean_b,
                             broken=sorted(broken, key=lambda d: (-abs(d.after - d.before), d.question))))
    return fell


def prepare_what_fell() -> None:
    """Build ahead the models what fell after an ingest and what broke it are read into (each is built when first
    used: model_base.Model), for a caller that can do it while the engine works (a watched load: during the
    questions' statements of the run after its ingest)."""
    for model in (QuestionDelta, Fell, Entered, Pushed, InputList, Culprit):
        model.model_rebuild()


def read_rescored(db: Database, run: Any, groups: list[dict]) -> dict | None:
    """What `what_fell_after` reads of `run` and the run it follows (fn::seval::rescored_results), read while the run's
    finish is in flight (runs.evaluate's `alongside_finish`, handed the finish's `groups`): None when it follows none."""
    return db.value("RETURN fn::seval::rescored_results($run, $groups)", {"run": run, "groups": groups})


def what_fell_after(db: Database, base: str, run: str, *, read: dict | None = None) -> tuple[list[Fell], RunReport, RunReport]:
    """What fell from finished run `base` to `run`, a run that followed it on the same golden set (an incremental run
    after an ingest): `what_fell` on the questions `run` scored again (a question it copied from `base` scored as there
    and cannot have fallen), each Fell's means the runs' own over every question. Returns it with the two reports, each
    holding those questions' scores (what `blame.culprits` reads: it reads the rankings itself). `read`: what
    `read_rescored` read of them beside the run's finish, used when it is of `base`."""
    run_id = resolve_run(db, run)
    if read is not None and record_str(read["base"]) == record_str(to_record(base, "seval_run")):
        base_id, questions, results = read["base"], read["questions"], [read["before"], read["after"]]
    else:
        base_id = resolve_run(db, base)
        questions = db.value("RETURN fn::seval::rescored_questions($run)", {"run": run_id})
        results = results_of(db, [base_id, run_id], questions, scores_only=True)
    before = load_run(db, base_id, per_question=True, intervals=False, questions=questions, scores_only=True, results=results[0])
    after = load_run(db, run_id, per_question=True, intervals=False, questions=questions, scores_only=True, results=results[1])
    return what_fell(before, after, run_means=True), before, after
