"""Whether a tuned value beats the current setting on the held-out questions, and when a swept
parameter cannot change the metric at all.

    current_value(db, param, retriever, given)  the value a run uses when the parameter is not tuned
    scores(db, param, values, spec, retriever, given)  fn::seval::tune_scores (knn_ef rendered per value)
    verdict(...)                                the chosen value against the current one, paired by question
    inert_note(param, values, spec, depth, lowest_bm25)  one line when the sweep cannot move the metric
"""

from __future__ import annotations

from typing import Any, Literal

from ..grammar import MetricSpec
from ..stats import PairedComparison, format_p, paired_test, resolution
from ..store.connection import Database
from ..store.schema import define_vector_ef, harness_config

__all__ = ["SET_METRICS", "TuneVerdict", "current_value", "inert_note", "rrf_inert", "scores", "verdict"]

#: The metrics that see only which records are in the top k, not their order.
SET_METRICS = ("recall", "hit_rate", "precision")
#: Below this p-value a difference counts as better or worse.
ALPHA = 0.05


class TuneVerdict(PairedComparison):
    """The chosen value (B) against the current setting (A) on the reporting questions, paired by
    question (`stats.paired_test`): `verdict` is 'better' or 'worse' when p < 0.05 and the
    difference is larger than the mean's resolution, else 'no different'; `line` says so."""

    param: str
    metric: str
    split: str
    current: Any
    chosen: Any
    resolution: float
    tied: bool
    verdict: Literal["better", "no different", "worse"]
    line: str


def current_value(db: Database, param: str, retriever: str, given: dict[str, Any]) -> Any:
    """The value of `param` a run of `retriever` uses under `given` when nothing is tuned: the run
    parameter (the default unless given) under the retriever's own; knn_ef: the harness's configured ef."""
    if param == "knn_ef":
        config = harness_config(db)
        return config.knn_ef if config else None
    return db.value(
        "RETURN fn::seval::ranking_configs(fn::seval::run_params([1], $given), fn::seval::retriever_entries([$r]))[0].params[$param]",
        {"given": {k: v for k, v in given.items() if k not in ("fresh", "split")}, "r": retriever, "param": param},
    )


def scores(db: Database, param: str, values: list[Any], spec: MetricSpec, retriever: str, given: dict[str, Any]) -> dict:
    """fn::seval::tune_scores of `values`; for knn_ef the vector candidates are rendered at each ef in turn."""
    query = "RETURN fn::seval::tune_scores($param, $values, $metric, $k, $retriever, $given)"
    args = {"param": param, "metric": spec.name, "k": spec.k, "retriever": retriever}
    if param != "knn_ef":
        return db.value(query, {**args, "values": values, "given": given})
    merged: dict | None = None
    try:
        for ef in values:
            define_vector_ef(db, ef)
            part = db.value(query, {**args, "values": [ef], "given": {**given, "knn_ef": ef}})
            if merged is None:
                merged = part
            else:
                merged["values"] += part["values"]
                for row, more in zip(merged["questions"], part["questions"], strict=True):
                    row["scores"] += more["scores"]
    finally:
        config = harness_config(db)
        if config is not None:
            define_vector_ef(db, config.knn_ef)
    return merged or {"values": [], "questions": []}


def verdict(table: dict, param: str, spec: MetricSpec, split: str) -> TuneVerdict:
    """The second value of `table` (fn::seval::tune_scores of [current, chosen]) against the first."""
    current, chosen = table["values"]
    rows = table["questions"]
    test = paired_test([r["scores"][0] for r in rows], [r["scores"][1] for r in rows])
    step = resolution([max(1, r["labels"]) for r in rows], str(spec))
    tied = abs(test.difference) < step * (1 - 1e-9)
    kind = "no different" if tied or test.p_value >= ALPHA else "better" if test.difference > 0 else "worse"
    said = {"better": "BETTER than", "worse": "WORSE than", "no different": "NO BETTER than"}[kind]
    if current == chosen:
        head = f"{param} = {chosen} is the current setting: tuning changes nothing"
    else:
        head = f"{param} = {chosen} is {said} the current {param} = {current}"
    line = (f"on the {split} split {head} ({spec} {test.mean_b:.4f} vs {test.mean_a:.4f}, difference "
            f"{test.difference:+.4f}, {test.level:.0%} interval [{test.low:+.4f}, {test.high:+.4f}], "
            f"p = {format_p(test.p_value)}, {test.n} questions paired)")
    return TuneVerdict(**test.model_dump(), param=param, metric=str(spec), split=split, current=current, chosen=chosen,
                       resolution=step, tied=tied, verdict=kind, line=line)


def rrf_inert(constants: list[int], depth: int, k: int, metric: str, lists: int = 2) -> bool:
    """Whether RRF constants `constants` all give the same `metric`@`k` when `lists` candidate lists of
    `depth` are fused and cut at `depth`. True when the metric sees only the set of the top k
    (SET_METRICS), k equals the depth, there are two lists, and every constant is at least depth - 1:
    then a record in both lists always outscores one in a single list (2 / (c + depth) > 1 / (c + 1)),
    records in one list keep their rank order whatever c, and the top `depth` is the same set."""
    return (metric in SET_METRICS and k == depth and lists == 2
            and all(c >= depth - 1 for c in constants))


def inert_note(param: str, values: list[Any], spec: MetricSpec, depth: int, lowest_bm25: float | None) -> str | None:
    """One line when `values` of `param` cannot change `spec` (see rrf_inert; a floor at or below the
    lowest BM25 candidate score lets every candidate through, as no floor does); None otherwise."""
    if param == "rrf_k" and len(values) > 1 and rrf_inert(values, depth, spec.k, spec.name):
        return (f"rrf_k cannot change {spec} here: the fused list is cut at depth {depth} = k and every constant "
                f"is at least depth - 1 = {depth - 1}, so the top {spec.k} is the same set for each; only the order "
                "within it moves (which mrr, ndcg and map see)")
    if param == "floor" and lowest_bm25 is not None:
        below = [v for v in values if v <= lowest_bm25]
        if len(below) > 1 or (below and len(below) == len(values)):
            return (f"floor = {', '.join(map(str, below))} cannot change {spec}: at or below the lowest BM25 "
                    f"candidate score seen ({lowest_bm25:.4g}), each fuses every candidate, as no floor does")
    return None
