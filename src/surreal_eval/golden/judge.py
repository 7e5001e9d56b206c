"""Holes a model judges (`surreal-eval golden judge`), through surql/judge.surql.

1. The holes: every document in the top `k` of run `run` (of each of its retrievers, or of `retrievers`)
   that nobody judged: the run did not score it as a label, the run's golden set neither labels it nor
   judges it not relevant now, and no model judged it yet (fn::seval::judge_holes).
2. The agreement sample: `agreement` pairs the humans judged in that golden set (seeded; half judged
   relevant, half not relevant, as far as there are enough of each, the rest from the other kind).
3. Every question is asked before anything is written, one request per pair, with the prompt template
   (the package's prompts/judge.txt unless replaced) filled with {question}, {title} and {passage}; the
   answers are cached (golden/chat.py), so an endpoint failure (exit 4) leaves the database exactly as it
   was and the next try pays only what failed.
4. Each answer is read by `judgment_in` (the first whole number 0 to 3); none: the pair stays unjudged,
   counted. The holes' grades are stored in one statement (fn::seval::add_model_judgments) as model
   judgments, never among the human ones; the agreement answers are not stored: they give Cohen's kappa
   between the humans (relevant: grade above 0) and the model (relevant: grade 2 or 3, the mapping a run
   on human+model judgments uses), with a bootstrap interval; where either side gave one answer to every pair
   kappa is not measurable (it would be 0 whatever the model said) and the report says why and what to judge.
5. After storing, the run's retrievers are ordered under human and under human+model judgments
   (golden/agreement.py: Kendall's tau per metric, a warning when the model's labels change which one ranks
   first), and with `calibrate` N pairs the model judged are drawn for a person to label (`golden agreement`
   then measures the agreement on them).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Optional


from ..model_base import Model
from ..kappa import Agreement, agreement
from .agreement import MODEL_RELEVANT, CalibrationPair, Orderings, calibration_draw, pair_texts, retriever_orderings
from ..errors import InputError, on_interrupt
from ..store.access import require_owner
from .chat import OpenAIChat
from .prompts import fill, require, shipped
from .generate import PASSAGE_CHARS
from .labels import who
from .wording import judgment_in
from ..store.connection import Database, record_str
from ..store.run_refs import resolve_run

__all__ = ["MODEL_RELEVANT", "JudgeReport", "default_judge_prompt", "judge_run"]

#: What to do when the human-judged sample's kappa cannot be measured.
SAMPLE_ADVICE = {
    "the humans": "judge some documents not relevant (`golden label Q DOC --not`), or measure on the pairs the model judged: "
                  "`golden judge --calibrate N`, label them, then `golden agreement`",
    "the model": "the model gave one answer to every sampled pair: ask about more (--agreement N), or measure on the pairs it "
                 "judged: `golden judge --calibrate N`, label them, then `golden agreement`",
}


class JudgeReport(Model):
    """What one `golden judge` did."""

    run: str
    k: int
    retrievers: list[str]
    golden: str
    model: str
    #: sha256 of the prompt template
    prompt: str
    #: the unjudged pairs found and asked about, those stored, and how the stored ones split by grade (0 to 3)
    holes: int
    stored: int
    grades: dict[int, int]
    #: the stored judgments that count as relevant on --judgments human+model (grade MODEL_RELEVANT or more)
    relevant: int
    #: pairs whose answer held no grade (left unjudged), as [question, doc]
    unparsable: list[list[str]]
    #: requests sent to the endpoint (the rest were answered from the cache)
    requests: int
    #: the human-judged pairs asked about, those whose answer held no grade, and the agreement on the rest
    agreement_asked: int
    agreement_unparsable: int
    agreement: Agreement
    #: the run's retrievers ordered under human and under human+model judgments (Kendall's tau per metric)
    orderings: Orderings
    #: pairs the model judged drawn for a person to label (--calibrate N), stratified by the model's grade
    calibration: list[CalibrationPair]
    warnings: list[str]


def default_judge_prompt() -> str:
    """The judging prompt template shipped with the package (prompts/judge.txt)."""
    return shipped("judge")


def _owner(db: Database) -> None:
    require_owner(db, "golden judge writes model judgments")


def agreement_sample(judged: list[dict[str, Any]], count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """`count` of the human judgments `judged` ({question, doc, grade}), seeded: half relevant (grade above 0)
    and half not, as far as each kind has enough, the rest from the other kind; in sample order."""
    ordered = sorted(judged, key=lambda j: (record_str(j["question"]), record_str(j["doc"])))
    relevant = [j for j in ordered if j["grade"] > 0]
    other = [j for j in ordered if j["grade"] <= 0]
    count = min(count, len(ordered))
    take_other = min(len(other), max(count // 2, count - len(relevant)))
    rng = random.Random(seed)
    chosen = rng.sample(relevant, count - take_other) + rng.sample(other, take_other)
    rng.shuffle(chosen)
    return chosen


def judge_run(db: Database, chat: OpenAIChat, *, run: str, k: int, retrievers: list[str] | None = None,
              agreement_pairs: int = 50, seed: int = 0, prompt: str | None = None,
              by: Optional[str] = None, calibrate: int = 0, resamples: int = 10_000) -> JudgeReport:
    """Ask `chat` to grade the unjudged documents in run `run`'s (an id, latest or previous) top `k` and store the grades as model
    judgments; ask it about `agreement_pairs` human-judged pairs too and measure the agreement, as the module says."""
    _owner(db)
    if agreement_pairs < 0:
        raise InputError(f"--agreement must be 0 or more, not {agreement_pairs}")
    if calibrate < 0:
        raise InputError(f"--calibrate must be 0 or more, not {calibrate}")
    template = require(default_judge_prompt() if prompt is None else prompt, {"question": "the question", "passage": "the document's text"})
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()
    run_id = resolve_run(db, run)
    row = db.value("RETURN fn::seval::run_settings($run)", {"run": run_id})
    if k not in row["ks"]:
        raise InputError(f"{record_str(run_id)} measured k = {', '.join(map(str, row['ks']))}, not {k}: judge the top k of a cutoff it measured")
    names = [r for r in row["retrievers"] if r != "floor_sweep"]
    unknown = [r for r in retrievers or [] if r not in names]
    if unknown:
        raise InputError(f"{record_str(run_id)} has no retriever {unknown[0]}: it ranked with {', '.join(names)}")
    golden = row["params"].get("golden") or "seval_question"
    holes = db.value("RETURN fn::seval::judge_holes($run, $k, $names)", {"run": run_id, "k": k, "names": retrievers or None})
    judged = db.value("RETURN fn::seval::judgments(fn::seval::golden_rows(fn::seval::golden_set($g), NONE, NONE))", {"g": golden})
    sample = agreement_sample(judged, agreement_pairs, seed=seed)
    pairs = holes + sample
    questions, texts = pair_texts(db, golden, pairs)
    conversations = []
    for pair in pairs:
        doc = texts.get(record_str(pair["doc"]), {"title": "", "text": ""})
        values = {"question": questions.get(record_str(pair["question"]), ""), "title": doc["title"],
                  "passage": doc["text"][:PASSAGE_CHARS]}
        conversations.append([{"role": "user", "content": fill(template, values)}])
    sent = chat.sent
    with on_interrupt("no judgment was stored in the database"):
        answers = chat.answer_all(conversations)  # every request before anything is written
    grades = [judgment_in(answer) for answer in answers]
    stored = [{"question": p["question"], "doc": p["doc"], "grade": g} for p, g in zip(holes, grades) if g is not None]
    if stored:
        db.value("RETURN fn::seval::add_model_judgments($golden, $rows, $model, $prompt, $run, $k, $by)",
                 {"golden": golden, "rows": stored, "model": chat.name, "prompt": digest, "run": run_id, "k": k, "by": by or who()})
    asked = [(p, g) for p, g in zip(sample, grades[len(holes):])]
    answered = [(p, g) for p, g in asked if g is not None]
    found = agreement([p["grade"] > 0 for p, _ in answered], [g >= MODEL_RELEVANT for _, g in answered],
                      names=("the humans", "the model"), seed=seed, resamples=resamples)
    if found.kappa.value is None and found.pairs:
        found.kappa.advice = SAMPLE_ADVICE["the model" if found.kappa.reason.startswith("the model") else "the humans"]
    orderings = retriever_orderings(db, run=record_str(run_id), k=k, retrievers=retrievers, seed=seed, resamples=resamples)
    drawn = calibration_draw(db, run=record_str(run_id), count=calibrate, k=k, retrievers=retrievers, seed=seed) if calibrate else []
    return JudgeReport(
        run=record_str(run_id), k=k, retrievers=retrievers or names, golden=golden, model=chat.name, prompt=digest,
        holes=len(holes), stored=len(stored), grades={g: sum(r["grade"] == g for r in stored) for g in range(4)},
        relevant=sum(r["grade"] >= MODEL_RELEVANT for r in stored),
        unparsable=[[record_str(p["question"]), record_str(p["doc"])] for p, g in zip(holes, grades) if g is None],
        requests=chat.sent - sent, agreement_asked=len(sample), agreement_unparsable=len(asked) - len(answered),
        agreement=found, orderings=orderings, calibration=drawn, warnings=list(orderings.warnings))
