"""How well each click model, and `auto`, recovers CISI's judgments from logs of different user behaviour.

    python benchmarks/click_behaviours.py [--impressions 10000] [--seed 11] [--behaviour NAME ...] [--json FILE]

For each behaviour of benchmarks/click_log.py (BEHAVIOURS: position-based with shallow 1/r^0.7 and steep
1/r^2 examination, cascade, DBN with satisfaction, trust bias, a weak click signal, noise clicks) a log is
simulated from CISI's real judgments (seeded) and labelled, with no database, by each click model
(`ClickModel(name=...)`: pbm, cascade, ubm, coec, auto), by `coec-point` (COEC with no margin: the rule up
to 0.2) and by raw clicks (COEC without position correction: clicks against the log's mean click-through
rate), under the default thresholds. Printed per
behaviour and model: the labels, their precision against CISI's qrels, their recall over the true labels ever
shown, and the error of recall@10's mean (the exact-cosine ranking, the vector retriever that made the log)
on the derived labels against the same queries on their true labels (derived minus true), over the queries
with a label. For auto, the model it chose and every model's held-out log-likelihood.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import click_log  # noqa: E402

from surreal_eval.golden.click_model import ClickModel, label_log  # noqa: E402
from surreal_eval.golden.search_log import Impression, normalise  # noqa: E402

METHODS = ("pbm", "cascade", "ubm", "coec", "coec-point", "raw", "auto")


def score(folder: Path, log: list[dict], method: str, seed: int = 0) -> dict:
    """Labels of `method` on `log` against CISI's qrels (module docstring)."""
    texts, qrels, ids, matrix, vectors = click_log.load_collection(folder)
    by_text = {normalise(texts[q]): q for q in qrels}
    impressions = [Impression(**row) for row in log]
    shown: dict[str, set[str]] = {}
    for i in impressions:
        shown.setdefault(by_text[normalise(i.query)], set()).update(i.shown)
    model = {"raw": ClickModel(name="coec", position_correction=False),
             "coec-point": ClickModel(name="coec", margin=0)}.get(method) or ClickModel(name=method)
    found = label_log(impressions, model, seed=seed)
    derived = {by_text[q]: set(labels) for q, (labels, _) in found.derived.items() if labels}
    hit = sum(len(d & qrels[q]) for q, d in derived.items())
    labels = sum(len(d) for d in derived.values())
    true_shown = sum(len(qrels[q] & shown[q]) for q in shown)
    errors = []
    for q, d in derived.items():
        top = {ids[i] for i in np.argsort(-(matrix @ vectors[q]), kind="stable")[:10]}
        errors.append(len(top & d) / len(d) - len(top & qrels[q]) / len(qrels[q]))
    return {"method": method, "model": found.model, "labels": labels, "questions": len(derived),
            "precision": hit / labels if labels else None, "recall": hit / true_shown if true_shown else None,
            "recall_at_10_error": float(np.mean(errors)) if errors else None,
            "fits": [f.model_dump() for f in found.fits] if method == "auto" else []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impressions", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--behaviour", action="append", choices=sorted(click_log.BEHAVIOURS))
    parser.add_argument("--json", type=Path, help="Also write every figure to this file as JSON")
    args = parser.parse_args()
    folder = click_log.cisi_folder()
    results = {}
    for behaviour in args.behaviour or list(click_log.BEHAVIOURS):
        log = click_log.simulate(folder, impressions=args.impressions, seed=args.seed, behaviour=behaviour)
        results[behaviour] = [score(folder, log, method) for method in METHODS]
        print(f"\n{behaviour} ({args.impressions} impressions, seed {args.seed})")
        for r in results[behaviour]:
            name = f"auto ({r['model']})" if r["method"] == "auto" else r["method"]
            figures = ", ".join(f"{k} {r[k]:.3f}" if r[k] is not None else f"{k} not measurable (no label)"
                                for k in ("precision", "recall", "recall_at_10_error"))
            print(f"  {name:16} {r['labels']:4} labels  {figures}")
        fits = next(r for r in results[behaviour] if r["method"] == "auto")["fits"]
        print("  held-out log-likelihood: " + ", ".join(f"{f['model']} {f['log_likelihood']:.3f}" for f in fits))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
