"""Held-out tuning: sweep one parameter on the dev split, pick by a metric, report on the test split."""

from __future__ import annotations

import hashlib
from typing import Any


from ..model_base import Model
from ..store.connection import Database, RecordID, record_str
from ..store.golden import golden_rows, golden_set
from ..errors import ConfigError, Rejected, on_interrupt
from .evaluate import evaluate
from ..store.schema import define_vector_ef, harness_config
from ..grammar import METRICS, check_number, parse_metric
from ..store.registry import registry, tuned_by
from ..models import RunReport
from ..stats import resolution
from .tune_verdict import TuneVerdict, current_value, inert_note, scores, verdict

__all__ = ["TUNABLE", "TuneResult", "assign_splits", "parse_values", "tune"]

#: The parameters tune can sweep; the retriever each is swept on by default is the first registry
#: row that `tunes` it (surql/registry.surql).
TUNABLE = ("floor", "rrf_k", "weights", "knn_ef")
#: The objective that sweeps knn_ef against the exact neighbours rather than the labels (ann_check.surql).
ANN_RECALL = "ann_recall"


class TuneResult(Model):
    """The sweep on the tuning questions, the value chosen, and the run that reports it."""

    param: str
    retriever: str
    metric: str
    sweep: list[dict[str, Any]]  # [{value, mean, questions}] on the tuning split
    #: the value chosen; None when the sweep cannot tell the values apart (then no run is recorded)
    best: Any
    forced: bool
    #: the smallest step one question moves the mean (stats.resolution): means closer are tied
    resolution: float
    #: the values tied with the best (within the resolution), the best first; all of them: no best
    tied: list[Any]
    #: what the sweep could not tell apart, in one line; None when one value is best
    note: str | None = None
    #: one line when the values swept cannot change the metric (tune_verdict.inert_note)
    inert: str | None = None
    report: RunReport | None
    #: the chosen value against the current setting on the reporting questions, paired by question
    verdict: TuneVerdict | None = None


def assign_splits(db: Database, *, dev_fraction: float = 0.5, seed: int = 0, golden: str | None = None) -> dict[str, int]:
    """Put each question in 'dev' or 'test' by a hash of its key and `seed` (stable, no state).

    The key is hashed as `question:<key>`, as releases before the seval_ prefix hashed the id, so a
    question keeps the split it was given then, and one of an attached golden set gets the same. The
    golden set is `golden`, else the default one; an attached set's splits are kept on the harness's side."""
    if not 0 < dev_fraction < 1:
        raise ConfigError(f"--dev must be a fraction between 0 and 1, got {dev_fraction}")
    chosen = golden_set(db, golden)
    ids = [row["id"] for row in golden_rows(db, chosen)]
    if not ids:
        raise ConfigError(f"the golden set {chosen.name} is empty: load or attach questions before assigning splits")

    def bucket(qid: object) -> str:
        digest = hashlib.sha256(f"{seed}:{record_str(RecordID('question', qid.id))}".encode()).digest()
        return "dev" if int.from_bytes(digest[:8], "big") / 2**64 < dev_fraction else "test"

    rows = [{"id": qid, "split": bucket(qid)} for qid in ids]
    db.query("BEGIN TRANSACTION; RETURN fn::seval::set_splits($g, $rows); COMMIT TRANSACTION;",
             {"g": chosen.model_dump(), "rows": rows})
    return {"dev": sum(r["split"] == "dev" for r in rows), "test": sum(r["split"] == "test" for r in rows)}


def parse_values(param: str, text: str) -> list[Any]:
    """The candidate values of `param` from text: `0,1.5,3` (floor), `20,60` (rrf_k, knn_ef), `0.3,0.7;0.5,0.5` (weights)."""
    if param not in TUNABLE:
        raise ConfigError(f"cannot tune {param!r}: tunable are {', '.join(TUNABLE)}")
    try:
        if param == "weights":
            values: list[Any] = [[float(w) for w in pair.split(",")] for pair in text.split(";") if pair.strip()]
            if any(len(v) != 2 for v in values):
                raise ValueError
        elif param == "floor":
            values = [float(v) for v in text.split(",") if v.strip()]
        else:
            values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        example = {"weights": "0.3,0.7;0.5,0.5", "floor": "0,1.5,3"}.get(param, "20,60,100")
        raise ConfigError(f"--values for {param} must look like {example}, got {text!r}") from None
    if not values:
        raise ConfigError("--values is empty: give at least one candidate")
    return check_values(param, values)


def check_values(param: str, values: list[Any]) -> list[Any]:
    """`values` if every candidate of `param` is in the range the option itself allows (grammar.LIMITS)."""
    for value in values:
        if param == "weights" and not isinstance(value, (list, tuple)):
            raise ConfigError(f"--values for weights: each candidate is a pair such as 0.3,0.7, got {value!r}")
        for number in value if param == "weights" else [value]:
            check_number(param, number, option=f"--values for {param}")
        if param == "weights" and (len(value) != 2 or sum(value) == 0):
            raise ConfigError(f"--values for weights: each pair is two weights, not both 0, got {value!r}")
    return values


def _split_sizes(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {split: sum(1 for r in rows if (r.get("split") or "none") == split) for split in ("dev", "test", "none")}


def tune(
    db: Database,
    *,
    param: str,
    values: list[Any] | None = None,
    metric: str = "recall@5",
    retriever: str | None = None,
    ks: list[int] | None = None,
    params: dict[str, Any] | None = None,
    force: bool = False,
    label: str | None = None,
    fresh: bool = False,
) -> TuneResult:
    """Sweep `param` over `values` on the dev split, choose the best mean `metric`, and record a run
    on the test split with that choice. For floor, `values` None sweeps 0 and the 10th to 90th
    percentiles of the BM25 scores seen on the tuning split (fn::seval::floor_grid). Means within the
    resolution of the best (stats.resolution) are tied with it: the first listed is taken and
    `note` says so; when every value ties, none is best and no run is recorded (`report` None). Tuning and reporting on the same questions (no dev/test
    split) is refused unless `force`, and such a run is marked forced in history.
    `fresh` retrieves every candidate list anew, in the sweep and the run (no list of an earlier run is read).
    """
    spec = parse_metric(metric, [*METRICS, ANN_RECALL])
    if param not in TUNABLE:
        raise ConfigError(f"cannot tune {param!r}: tunable are {', '.join(TUNABLE)}")
    if spec.name == ANN_RECALL and param != "knn_ef":
        raise ConfigError(f"--metric {spec} (the HNSW index's own recall) is the objective of --param knn_ef only")
    if not values and param != "floor":
        raise ConfigError(f"give the values of {param} to sweep (--values)")
    retriever = retriever or tuned_by(db, param)
    known = [r.name for r in registry(db)]
    if retriever not in known:
        raise ConfigError(f"unknown retriever {retriever!r}: use {', '.join(known)}")
    golden = golden_set(db, (params or {}).get("golden"))
    questions = golden_rows(db, golden)
    sizes = _split_sizes(questions)
    held_out = sizes.get("dev", 0) > 0 and sizes.get("test", 0) > 0
    if not held_out and not force:
        raise Rejected(
            f"no held-out split (dev {sizes.get('dev', 0)}, test {sizes.get('test', 0)} questions): tuning and "
            "reporting on the same questions overfits; run `surreal-eval split` first, or pass --force"
        )
    if values:
        check_values(param, list(values))
    base = {**{k: v for k, v in (params or {}).items() if v is not None}, "golden": golden.name}
    tune_split, report_split = ("dev", "test") if held_out else (None, None)
    with on_interrupt("no run was recorded (the sweep records none)"):
        sweep, seen = _sweep(db, param, values, spec, retriever, {**base, "split": tune_split, **({"fresh": True} if fresh else {})})
    inert = inert_note(param, [row["value"] for row in sweep], spec, seen["depth"], seen.get("lowest_bm25")) if seen else None
    counts = [len(q["relevant"]) for q in questions if tune_split is None or q.get("split") == tune_split]
    # ann_recall@k moves in steps of 1/k on one question, as precision@k does
    step = 1 / (spec.k * len(counts)) if spec.name == ANN_RECALL else resolution(counts, str(spec))
    top = max(row["mean"] for row in sweep)
    tied = [row["value"] for row in sweep if top - row["mean"] < step * (1 - 1e-9)]  # within one question's step
    values = [row["value"] for row in sweep]
    best = max(sweep, key=lambda row: row["mean"])["value"]  # first of equal means: values order decides
    on = tune_split or "all questions"
    if len(tied) == len(sweep) > 1:
        note = (f"the {len(sweep)} values of {param} give the same {spec} on {on} (within the mean's resolution "
                f"{step:.4g}): the sweep cannot tell them apart, so none is best and no run was recorded; "
                f"sweep values that change the rankings" + (" (the default grid comes from the BM25 scores seen)"
                                                             if param == "floor" else ""))
        return TuneResult(param=param, retriever=retriever, metric=str(spec), sweep=sweep, best=None,
                          forced=not held_out, resolution=step, tied=tied, note=note, inert=inert, report=None)
    note = (f"{param} = {', '.join(map(str, tied))} tie for the best {spec} on {on} (within the mean's resolution "
            f"{step:.4g}): the first listed is taken, a coin flip between them") if len(tied) > 1 else None
    chosen = {**base, "split": report_split, param: best}
    if param == "knn_ef":  # the run reads fn::vec_candidates_at_ef, rendered at the best ef
        define_vector_ef(db, best)
    tuning = {"param": param, "values": values, "metric": str(spec), "retriever": retriever,
              "sweep": sweep, "best": best, "tied": tied, "forced": not held_out, "tuned_on": tune_split or "all"}
    try:
        report = evaluate(
            db, ks=sorted(set(ks or []) | {spec.k}), retrievers=[retriever],
            params={**chosen, "tuning": tuning, **({"ann_check": True} if spec.name == ANN_RECALL else {})},
            label=label or f"tuned {param}={best} by {spec} on {tune_split or 'ALL (forced)'}",
            trigger="tune", fresh=fresh,
        )
    finally:
        if param == "knn_ef":
            _restore_ef(db)
    judged = None
    if spec.name != ANN_RECALL:  # the chosen value against the current one, on the questions the run reported on
        with on_interrupt(f"run {report.run} was recorded; its verdict against the current value was not worked out"):
            current = current_value(db, param, retriever, base)
            table = scores(db, param, [current, best], spec, retriever, {**base, "split": report_split})
            judged = verdict(table, param, spec, report_split or "all questions (forced)")
    return TuneResult(param=param, retriever=retriever, metric=str(spec), sweep=sweep, best=best,
                      forced=not held_out, resolution=step, tied=tied, note=note, inert=inert, report=report, verdict=judged)


def _restore_ef(db: Database) -> None:
    """fn::seval::vec_candidates_at_ef back at the configured ef (tidiness only: no ordinary run reads it)."""
    config = harness_config(db)
    if config is not None:
        define_vector_ef(db, config.knn_ef)


def _sweep(db: Database, param: str, values: list[Any], spec, retriever: str, given: dict[str, Any]) -> tuple[list[dict], dict | None]:
    """The sweep's rows [{value, mean, questions}] and fn::seval::tune_scores' table (None for knn_ef)."""
    if param != "knn_ef":
        table = scores(db, param, values or [], spec, retriever, given)
        rows = table["questions"]
        return [{"value": v, "mean": sum(r["scores"][i] for r in rows) / len(rows), "questions": len(rows)}
                for i, v in enumerate(table["values"])], table
    rows = []
    try:
        # the KNN ef is a literal in SurrealQL: a harness-owned copy of the vector candidates is
        # rendered per value, which only a run carrying knn_ef reads (never an ordinary evaluation)
        for ef in values:
            define_vector_ef(db, ef)
            if spec.name == ANN_RECALL:  # the index against the exact neighbours, not against the labels
                rows += db.value("RETURN fn::seval::ann_sweep($k, $given)", {"k": spec.k, "given": {**given, "knn_ef": ef}})
                continue
            rows += db.value(
                "RETURN fn::seval::tune_sweep('knn_ef', [$ef], $metric, $k, $retriever, $given)",
                {"ef": ef, "metric": spec.name, "k": spec.k, "retriever": retriever, "given": {**given, "knn_ef": ef}},
            )
    finally:
        _restore_ef(db)
    return rows, None
