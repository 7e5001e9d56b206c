"""How far to trust a model's judgments (`golden judge --calibrate`, `golden agreement`), read through the harness's
SurrealQL functions (golden.surql, evaluate.surql, metrics.surql, judge.surql); nothing here writes.

1. The grade scale both sides are compared on is the golden set's: 0 judged not relevant, then the label's
   grade. A model grade (0 to 3) is read as a run on human+model judgments reads it (`label_grade`): 2 or 3
   a label of grade 1 or 2, 0 or 1 judged not relevant. A human grade above 0 is its label's grade.
2. Calibration (`calibration_draw`): the pairs of the run's top k a model judged and no human has, drawn
   seeded and stratified by the model's grade (equal shares per grade as far as each has enough, the rest
   from the others), for a person to label (`golden label`, or a file `golden label --from-file` reads). The
   file never shows the model's grade.
3. Agreement (`measure_agreement`): every pair with both a human judgment and a model one (in practice the
   calibration pairs a person labelled: the model is only asked about pairs nobody judged): Cohen's kappa
   and quadratic-weighted kappa on the grades, their bootstrap intervals over pairs, the confusion counts and
   n (kappa.graded_agreement). Where a side holds one grade, not measurable, with what to label.
4. Orderings (`retriever_orderings`): each retriever of the run scored again on the questions it was scored
   on, against the golden set's human judgments now and against human+model (as `evaluate --judgments
   human+model` reads them), at cutoff k; per metric, Kendall's tau between the two orderings of the
   retrievers by their mean, with its bootstrap interval over questions, and a warning when the model's
   labels put another retriever first.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any


from ..model_base import Model
from ..errors import InputError
from ..grammar import METRICS
from ..kappa import Estimate, GradedAgreement, OrderingAgreement, graded_agreement, ordering_agreement
from ..store.connection import Database, record_str
from ..store.run_refs import resolve_run

__all__ = ["MODEL_RELEVANT", "AgreementReport", "CalibrationPair", "Orderings", "calibration_draw", "calibration_lines",
           "judged_by_both", "label_grade", "measure_agreement", "retriever_orderings"]

#: The lowest model grade a run on human+model judgments counts as relevant (its label grade: the model's less one).
MODEL_RELEVANT = 2

#: Metrics whose ordering is not compared: judged@k grows with every model judgment by construction.
NOT_ORDERED = ("judged",)

ADVICE_HUMAN = ("label pairs the model graded otherwise: `golden judge --calibrate N` draws pairs of every model grade, "
                "label them with `golden label --from-file FILE`")
ADVICE_MODEL = "the model gave one grade to every pair labelled: draw more with `golden judge --calibrate N` and label them"


def label_grade(model: int) -> float:
    """The label grade a run on human+model judgments reads from a model grade (0 to 3): 2 or 3 -> 1 or 2, else 0."""
    return float(model - 1) if model >= MODEL_RELEVANT else 0.0


def _human_grades(db: Database, golden: str, questions: list[Any]) -> dict[str, dict[str, float]]:
    """The human judgments of golden set `golden` on `questions`: question -> document -> grade (0: judged not relevant)."""
    if not questions:
        return {}
    rows = db.value("RETURN fn::seval::golden_rows(fn::seval::golden_set($g), NONE, $ids)", {"g": golden, "ids": questions})
    found: dict[str, dict[str, float]] = {}
    for row in rows:
        grades = row.get("grades") or []
        mine = {record_str(d): 0.0 for d in row.get("nonrelevant") or []}
        mine.update({record_str(d): float(grades[i]) if i < len(grades) and grades[i] is not None else 1.0
                     for i, d in enumerate(row.get("relevant") or [])})
        found[record_str(row["id"])] = mine
    return found


def judged_by_both(db: Database, golden: str) -> list[dict[str, Any]]:
    """Every pair of golden set `golden` with a model judgment and a human one, as {question, doc, human, model, model_grade}
    (human and model on the golden set's scale, model_grade as the model answered), by question then document."""
    model = db.value("RETURN fn::seval::model_judgments($g)", {"g": golden})
    humans = _human_grades(db, golden, list({record_str(m["question"]): m["question"] for m in model}.values()))
    pairs = []
    for m in model:
        q, d = record_str(m["question"]), record_str(m["doc"])
        if d in humans.get(q, {}):
            pairs.append({"question": q, "doc": d, "human": humans[q][d], "model": label_grade(m["grade"]),
                          "model_grade": m["grade"]})
    return sorted(pairs, key=lambda p: (p["question"], p["doc"]))


class CalibrationPair(Model):
    """A pair a model judged and no human has, drawn for a person to label."""

    question: str
    doc: str
    #: the model's grade (0 to 3): kept for the report, never written to the file a person labels
    model_grade: int
    text: str = ""
    title: str = ""
    passage: str = ""


def _run_row(db: Database, run: str) -> tuple[Any, dict[str, Any]]:
    run_id = resolve_run(db, run)
    return run_id, db.value("RETURN fn::seval::run_settings($run)", {"run": run_id})


def _retrievers(run_id: Any, row: dict[str, Any], retrievers: list[str] | None) -> list[str]:
    names = [r for r in row["retrievers"] if r != "floor_sweep"]
    unknown = [r for r in retrievers or [] if r not in names]
    if unknown:
        raise InputError(f"{record_str(run_id)} has no retriever {unknown[0]}: it ranked with {', '.join(names)}")
    return list(retrievers) if retrievers else names


def _cutoff(run_id: Any, row: dict[str, Any], k: int | None) -> int:
    if k is None:
        return max(row["ks"])
    if k not in row["ks"]:
        raise InputError(f"{record_str(run_id)} measured k = {', '.join(map(str, row['ks']))}, not {k}: use a cutoff it measured")
    return k


def stratified(pairs: list[dict[str, Any]], count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """`count` of `pairs` ({question, doc, grade}), seeded: an equal share of each grade as far as each has enough, the rest
    spread over the grades that have more; in a shuffled order. The same pairs in any order give the same draw."""
    if count < 0:
        raise InputError(f"--calibrate must be 0 or more, not {count}")
    strata: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in sorted(pairs, key=lambda p: (record_str(p["question"]), record_str(p["doc"]))):
        strata[p["grade"]].append(p)
    take = {g: 0 for g in strata}
    left = min(count, len(pairs))
    while left:
        open_ = [g for g in sorted(strata) if take[g] < len(strata[g])]
        share = max(1, left // len(open_))
        for g in open_:
            extra = min(share, len(strata[g]) - take[g], left)
            take[g] += extra
            left -= extra
            if not left:
                break
    rng = random.Random(seed)
    chosen = [p for g in sorted(strata) for p in rng.sample(strata[g], take[g])]
    rng.shuffle(chosen)
    return chosen


def pair_texts(db: Database, golden: str, pairs: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """The text of each question of `pairs` ({question, doc} records) in golden set `golden`, and each document's
    {doc, title, text} (fn::seval::doc_texts), both keyed by the record's id as record_str writes it."""
    questions = {record_str(r["id"]): r["text"] for r in db.value(
        "RETURN fn::seval::golden_rows(fn::seval::golden_set($g), NONE, $ids)",
        {"g": golden, "ids": list({record_str(p["question"]): p["question"] for p in pairs}.values())})}
    docs = {record_str(t["doc"]): t for t in db.value("RETURN fn::seval::doc_texts($docs)", {"docs": [p["doc"] for p in pairs]})}
    return questions, docs


def calibration_draw(db: Database, *, run: str, count: int, k: int | None = None, retrievers: list[str] | None = None,
                     seed: int = 0, passage_chars: int = 2000) -> list[CalibrationPair]:
    """`count` pairs of run `run`'s top `k` (default its deepest) that a model judged and no human has, seeded and stratified
    by the model's grade (`stratified`), with the question's text and the document's title and text for the person labelling."""
    run_id, row = _run_row(db, run)
    k = _cutoff(run_id, row, k)
    names = _retrievers(run_id, row, retrievers)
    golden = row["params"].get("golden") or "seval_question"
    model = {(record_str(m["question"]), record_str(m["doc"])): m
             for m in db.value("RETURN fn::seval::model_judgments($g)", {"g": golden})}
    rankings = db.value("RETURN fn::seval::run_rankings($run, $names)", {"run": run_id, "names": names})
    shown = {(record_str(r["question"]), record_str(d)) for r in rankings for d in r["ranked"][:k]}
    candidates = [m for key, m in model.items() if key in shown]
    humans = _human_grades(db, golden, list({record_str(m["question"]): m["question"] for m in candidates}.values()))
    unjudged = [m for m in candidates if record_str(m["doc"]) not in humans.get(record_str(m["question"]), {})]
    drawn = stratified(unjudged, count, seed=seed)
    if not drawn:
        return []
    texts, docs = pair_texts(db, golden, drawn)
    found = []
    for p in drawn:
        doc = docs.get(record_str(p["doc"]), {})
        found.append(CalibrationPair(question=record_str(p["question"]), doc=record_str(p["doc"]), model_grade=p["grade"],
                                     text=texts.get(record_str(p["question"]), ""), title=doc.get("title", ""),
                                     passage=doc.get("text", "")[:passage_chars]))
    return found


class Orderings(Model):
    """The run's retrievers ordered under human judgments and under human+model, per metric at cutoff k."""

    run: str
    k: int
    retrievers: list[str]
    #: the questions scored (those with a label graded above 0 under the human judgments)
    questions: int
    #: the model judgments of the golden set merged on the human+model side, and those on these questions' rankings
    model_judgments: int
    metrics: list[OrderingAgreement]
    warnings: list[str]


def _targets(db: Database, golden: str, ids: list[Any], corpus: str, judgments: str) -> dict[str, dict[str, Any]]:
    rows = db.value("RETURN fn::seval::golden_rows(fn::seval::run_golden({ golden: $g, judgments: $j }), NONE, $ids)"
                    ".map(|$q| object::extend(fn::seval::question_target($q, $corpus), { id: $q.id, model: $q.model ?? 0 }))",
                    {"g": golden, "j": judgments, "ids": ids, "corpus": corpus})
    return {record_str(r["id"]): r for r in rows}


def retriever_orderings(db: Database, *, run: str, k: int | None = None, retrievers: list[str] | None = None, seed: int = 0,
                        resamples: int = 10_000) -> Orderings:
    """Kendall's tau between the orderings of run `run`'s retrievers under the human judgments and under human+model, per
    metric at cutoff `k` (default the run's deepest), as the module says."""
    run_id, row = _run_row(db, run)
    k = _cutoff(run_id, row, k)
    names = _retrievers(run_id, row, retrievers)
    params = row["params"]
    golden = params.get("golden") or "seval_question"
    corpus = params.get("corpus") or db.value("RETURN fn::seval::default_corpus()")
    rankings = db.value("RETURN fn::seval::run_rankings($run, $names)", {"run": run_id, "names": names})
    ids = list({record_str(r["question"]): r["question"] for r in rankings}.values())
    human = _targets(db, golden, ids, corpus, "human")
    mixed = _targets(db, golden, ids, corpus, "human+model")
    scored = sorted(q for q, t in human.items() if any(g > 0 for g in t.get("gains") or []) and q in mixed)
    keep = [r for r in rankings if record_str(r["question"]) in scored]
    items = [{"ranked": r["ranked"], **{key: side[record_str(r["question"])][key] for key in ("judged", "gains")}}
             for side in (human, mixed) for r in keep]
    score = "RETURN $items.map(|$i| fn::seval::metrics_at_level($i.ranked, $i.judged, $i.gains, [$k], $level)[0].metrics)"
    values = db.value(score, {"items": items, "k": k, "level": params.get("relevance_level") or 1}) if items else []
    # side (human, human+model): retriever: question: metrics
    scores: tuple[dict[str, dict[str, dict[str, float]]], ...] = (defaultdict(dict), defaultdict(dict))
    for n, r in enumerate(keep * 2):
        scores[n // len(keep)][r["retriever"]][record_str(r["question"])] = values[n]
    present = sorted({r["retriever"] for r in keep})
    order = {name: n for n, name in enumerate(METRICS)}
    metric_names = sorted((m for m in (values[0] if values else {}) if m not in NOT_ORDERED),
                          key=lambda m: (order.get(m, len(order)), m))
    metrics, warnings = [], []
    for metric in metric_names:
        columns = [{name: [_number(scores[side][name][q][metric]) for q in scored] for name in present} for side in (0, 1)]
        found = ordering_agreement(f"{metric}@{k}", columns[0], columns[1], names=("the human judgments", "human+model"),
                                   seed=seed, resamples=resamples)
        metrics.append(found)
        if found.top_changes:
            warnings.append(f"{found.metric}: the model's judgments change which retriever ranks first: {_firsts(found.top_first)} "
                            f"on human judgments, {_firsts(found.top_second)} on human+model")
    merged = sum(int(mixed[q].get("model") or 0) for q in scored)
    return Orderings(run=record_str(run_id), k=k, retrievers=present, questions=len(scored), model_judgments=merged,
                     metrics=metrics, warnings=warnings)


def _firsts(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names) + " (tied)"


def _number(value: Any) -> float:
    try:
        found = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if found != found else found  # NaN (no label reaches a relevance level above 1): 0, as a run scores it


class AgreementReport(Model):
    """What `golden agreement` measured."""

    golden: str
    model_judgments: int
    #: the pairs with both a human and a model judgment, on the golden set's scale, as [question, doc, human, model]
    pairs: list[list[Any]]
    agreement: GradedAgreement
    #: relevant or not (grade above 0) on the same pairs
    relevant: GradedAgreement
    orderings: Orderings
    warnings: list[str]


def _advise(found: Estimate) -> Estimate:
    if found.value is not None or found.advice:
        return found
    if found.reason and found.reason.startswith("the humans"):
        return found.model_copy(update={"advice": ADVICE_HUMAN})
    if found.reason and found.reason.startswith("the model"):
        return found.model_copy(update={"advice": ADVICE_MODEL})
    return found.model_copy(update={"advice": "label the pairs `golden judge --calibrate N` draws (`golden label --from-file FILE`)"})


def advised(found: GradedAgreement) -> GradedAgreement:
    """`found` with what to label added to each kappa that cannot be measured."""
    return found.model_copy(update={"kappa": _advise(found.kappa), "weighted_kappa": _advise(found.weighted_kappa)})


def measure_agreement(db: Database, *, run: str = "latest", k: int | None = None, retrievers: list[str] | None = None, seed: int = 0,
                      resamples: int = 10_000) -> AgreementReport:
    """The agreement of the humans and the model on the pairs both judged in run `run`'s golden set, and the orderings of its
    retrievers under human and human+model judgments, as the module says."""
    run_id, row = _run_row(db, run)
    golden = row["params"].get("golden") or "seval_question"
    pairs = judged_by_both(db, golden)
    names = ("the humans", "the model")
    human, model = [p["human"] for p in pairs], [p["model"] for p in pairs]
    graded = advised(graded_agreement(human, model, names=names, seed=seed, resamples=resamples))
    binary = advised(graded_agreement([float(h > 0) for h in human], [float(m > 0) for m in model], names=names, seed=seed,
                                      resamples=resamples))
    orderings = retriever_orderings(db, run=record_str(run_id), k=k, retrievers=retrievers, seed=seed, resamples=resamples)
    total = db.value("RETURN array::len(fn::seval::model_judgments($g))", {"g": golden})
    return AgreementReport(golden=golden, model_judgments=total,
                           pairs=[[p["question"], p["doc"], p["human"], p["model"]] for p in pairs],
                           agreement=graded, relevant=binary, orderings=orderings, warnings=list(orderings.warnings))


def calibration_lines(pairs: list[CalibrationPair]) -> list[str]:
    """The JSONL a person grades (each line's "grade": null filled in: 0 not relevant, 1 answers part of it, 2 answers it) and
    `golden label --from-file` reads back; the model's grade is left out, so as not to lead the person."""
    import json

    return [json.dumps({"question": p.question, "doc": p.doc, "grade": None, "text": p.text, "title": p.title,
                        "passage": p.passage}, ensure_ascii=False) for p in pairs]
