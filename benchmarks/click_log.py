"""A search log simulated from CISI's real judgments, and how well `golden from-log` recovers them.

    python benchmarks/click_log.py --out cisi_clicks.jsonl [--impressions 20000] [--seed 7] [--behaviour pbm] [--measure]

The log (the format of docs/golden-set.md, seeded, deterministic): each of CISI's 76 judged queries is asked with a
Zipf frequency (the k-th most asked ∝ 1/k, k in a seeded order); each impression shows the top 10 of a
ranking of the corpus by cosine over the shipped all-MiniLM-L6-v2 embeddings, dithered (each document's
rank r replaced by exp(ln r + N(0, 0.35)) before sorting, so documents move a little between impressions
and position correction matters); a user (of 400) clicks as `--behaviour` says (BEHAVIOURS):

- `pbm` (the default): examines rank r with probability 1/r^0.7 (a position-based click model) and clicks an
  examined document with probability 0.6 when CISI judges it relevant, 0.06 otherwise;
- `pbm-steep`: the same with steep examination, 1/r^2;
- `cascade`: reads down the list, clicks with those probabilities and stops at the first click;
- `dbn`: reads down the list, clicks with those probabilities; a click satisfies (0.7 on a relevant
  document, 0.1 on another) and the user stops, else goes on to the next rank with probability 0.9;
- `trust`: position-based (1/r^0.7) with trust bias: a document that is not relevant is clicked with 0.06 + 0.3/r;
- `weak`: position-based (1/r^0.7), a weak click signal: 0.3 on relevant documents, 0.15 on others;
- `noise`: position-based (1/r^0.7), and one impression in five also clicks a document drawn at random.

A click's dwell is log-normal, median 45 s on a relevant document and 6 s on another.
Raw query text varies (lower case, a trailing `?` dropped, doubled spaces) for 30% of impressions.
`--random-clicks` ignores relevance (every examined document clicked with probability 0.2): a log whose
clicks carry no signal, that should yield few true labels.

With --measure, CISI is loaded into a throwaway database, the log loaded with `golden_from_log`
(--top 40 --sample 36: every query; the click model auto chooses, then COEC without position correction:
raw clicks), and the script prints the click model used and every model's held-out fit, the precision and recall of the derived
labels against CISI's qrels (recall over every true label, and over the true labels ever shown), and the
metric means of the vector retriever (the ranker that made the log) and BM25 on the derived labels
against the same queries on their true labels.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

EXAMINE_POWER = 0.7
CLICK_RELEVANT, CLICK_OTHER, CLICK_RANDOM = 0.6, 0.06, 0.2
SATISFIED, PERSEVERE = 0.7, 0.9
SHOWN = 10


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def cisi_folder() -> Path:
    """The CISI folder unpacked from tests/data/cisi.tar.xz (tests/datasets.py)."""
    sys.path.insert(0, str(ROOT))
    from tests.datasets import cisi

    return cisi()


@functools.lru_cache(maxsize=4)
def load_collection(folder: Path) -> tuple[dict[str, str], dict[str, set[str]], list[str], np.ndarray, dict[str, np.ndarray]]:
    """(query texts, qrels {query: relevant docs}, doc ids, doc matrix (unit rows), query vectors (unit)), read once
    per folder (shared: never change them)."""
    texts = {row["_id"]: row["text"] for row in _jsonl(folder / "queries.jsonl")}
    qrels: dict[str, set[str]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, doc, score = line.split("\t")
        if float(score) > 0:
            qrels.setdefault(query, set()).add(doc)
    docs = _jsonl(folder / "embeddings" / "corpus.jsonl")
    ids = [row["_id"] for row in docs]
    matrix = np.array([row["embedding"] for row in docs], dtype=float)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    vectors = {row["_id"]: np.array(row["embedding"]) / np.linalg.norm(row["embedding"])
               for row in _jsonl(folder / "embeddings" / "queries.jsonl") if row["_id"] in qrels}
    return texts, qrels, ids, matrix, vectors


def _examined_pbm(power: float):
    def clicks(relevant: list[bool], draw: random.Random) -> list[int]:
        return [r for r, rel in enumerate(relevant)
                if draw.random() < 1 / (r + 1) ** power and draw.random() < (CLICK_RELEVANT if rel else CLICK_OTHER)]
    return clicks


def _cascade(relevant: list[bool], draw: random.Random) -> list[int]:
    """Read down the list, click with the document's attractiveness, stop at the first click (Craswell et al.)."""
    for r, rel in enumerate(relevant):
        if draw.random() < (CLICK_RELEVANT if rel else CLICK_OTHER):
            return [r]
    return []


def _dbn(relevant: list[bool], draw: random.Random) -> list[int]:
    """Read down the list; click with the attractiveness; a click satisfies with SATISFIED (relevant) or 0.1 and the
    user stops; otherwise goes on to the next rank with probability PERSEVERE (Chapelle and Zhang's DBN)."""
    clicks = []
    for r, rel in enumerate(relevant):
        if draw.random() < (CLICK_RELEVANT if rel else CLICK_OTHER):
            clicks.append(r)
            if draw.random() < (SATISFIED if rel else 0.1):
                break
        if draw.random() >= PERSEVERE:
            break
    return clicks


def _trust(relevant: list[bool], draw: random.Random) -> list[int]:
    """Position-based (1/r^0.7) with trust bias: an examined document that is not relevant is clicked with
    0.06 + 0.3/r (users trust the top of the list; Agarwal et al. 2019)."""
    return [r for r, rel in enumerate(relevant)
            if draw.random() < 1 / (r + 1) ** EXAMINE_POWER and draw.random() < (CLICK_RELEVANT if rel else CLICK_OTHER + 0.3 / (r + 1))]


def _weak(relevant: list[bool], draw: random.Random) -> list[int]:
    """Position-based (1/r^0.7), a weak click signal: 0.3 on relevant documents, 0.15 on others."""
    return [r for r, rel in enumerate(relevant) if draw.random() < 1 / (r + 1) ** EXAMINE_POWER and draw.random() < (0.3 if rel else 0.15)]


def _noise(relevant: list[bool], draw: random.Random) -> list[int]:
    """Position-based (1/r^0.7), and one impression in five also clicks a document drawn at random."""
    clicks = _examined_pbm(EXAMINE_POWER)(relevant, draw)
    if draw.random() < 0.2:
        clicks = sorted(set(clicks) | {draw.randrange(len(relevant))})
    return clicks


def _random(relevant: list[bool], draw: random.Random) -> list[int]:
    return [r for r in range(len(relevant)) if draw.random() < 1 / (r + 1) ** EXAMINE_POWER and draw.random() < CLICK_RANDOM]


#: the user behaviours a log can be simulated with (module docstring)
BEHAVIOURS = {"pbm": _examined_pbm(EXAMINE_POWER), "pbm-steep": _examined_pbm(2.0), "cascade": _cascade, "dbn": _dbn,
              "trust": _trust, "weak": _weak, "noise": _noise}


def _variant(text: str, draw: random.Random) -> str:
    choice = draw.random()
    if choice < 0.7:
        return text
    if choice < 0.8:
        return text.lower()
    if choice < 0.9:
        return text.rstrip("?.! ")
    return text.replace(" ", "  ", 3)


def simulate(folder: Path, *, impressions: int = 20000, seed: int = 7, users: int = 400, random_clicks: bool = False,
             dither: float = 0.35, behaviour: str = "pbm") -> list[dict]:
    """The simulated log, one dict per impression (module docstring)."""
    texts, qrels, ids, matrix, vectors = load_collection(folder)
    draw = random.Random(seed)
    queries = sorted(vectors, key=int)
    draw.shuffle(queries)
    weights = [1 / (k + 1) for k in range(len(queries))]
    pools = {q: [ids[i] for i in np.argsort(-(matrix @ vectors[q]), kind="stable")[:2 * SHOWN]] for q in queries}
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    log = []
    for n in range(impressions):
        query = draw.choices(queries, weights)[0]
        noisy = sorted(range(len(pools[query])), key=lambda r: math.log(r + 1) + draw.gauss(0, dither))
        shown = [pools[query][r] for r in noisy[:SHOWN]]
        relevant = [doc in qrels[query] for doc in shown]
        clicks = BEHAVIOURS[behaviour](relevant, draw) if not random_clicks else _random(relevant, draw)
        clicked, dwell = [], {}
        for rank in clicks:
            doc = shown[rank]
            clicked.append(doc)
            dwell[doc] = round(math.exp(draw.gauss(math.log(45 if relevant[rank] and not random_clicks else 6), 0.8)), 1)
        log.append({"query": _variant(texts[query], draw), "shown": shown, "clicked": clicked, "dwell": dwell,
                    "user": f"u{draw.randrange(users)}", "time": (start + timedelta(seconds=37 * n)).isoformat()})
    return log


def write_log(log: list[dict], out: Path) -> None:
    with out.open("w", encoding="utf-8") as handle:
        for row in log:
            handle.write(json.dumps(row) + "\n")


def recovery(db, folder: Path, log: list[dict]) -> dict:
    """Precision and recall of the click labels stored for the click questions against CISI's qrels."""
    from surreal_eval.golden.search_log import normalise

    texts, qrels, *_ = load_collection(folder)
    by_text = {normalise(texts[q]): q for q in qrels}
    shown: dict[str, set[str]] = {}
    for row in log:
        shown.setdefault(by_text[normalise(row["query"])], set()).update(row["shown"])
    rows = db.value("SELECT text, relevant.map(|$r| <string> record::id($r)) AS relevant FROM seval_question WHERE source = 'click'")
    derived = {by_text[normalise(r["text"])]: set(r["relevant"]) for r in rows}
    hit = sum(len(d & qrels[q]) for q, d in derived.items())
    labels = sum(len(d) for d in derived.values())
    true_all = sum(len(qrels[q]) for q in derived)
    true_shown = sum(len(qrels[q] & shown[q]) for q in derived)
    return {"questions": len(derived), "labels": labels, "true_labels": true_all, "true_labels_shown": true_shown,
            "precision": hit / labels if labels else 0.0, "recall": hit / true_all if true_all else 0.0,
            "recall_shown": hit / true_shown if true_shown else 0.0, "pairs": derived}


def paired_means(db, folder: Path, retrievers: list[str], k: int = 10) -> dict:
    """{retriever: {metric: (mean on derived labels, mean on true labels)}} over the click questions with a
    label and the CISI questions of the same queries (one evaluation of both)."""
    from surreal_eval import evaluate
    from surreal_eval.golden.search_log import normalise

    texts, qrels, *_ = load_collection(folder)
    by_text = {normalise(texts[q]): q for q in qrels}
    clicks = {f"seval_question:{r['id']}": by_text[normalise(r["text"])] for r in db.value(
        "SELECT record::id(id) AS id, text FROM seval_question WHERE source = 'click' AND array::len(relevant) > 0")}
    run = evaluate(db, ks=[k], retrievers=retrievers, per_question=True)
    found: dict = {}
    for retriever in retrievers:
        rows = {r.question: r for r in run.per_question if r.retriever == retriever and r.k == k}
        found[retriever] = {metric: (float(np.mean([rows[c].score(metric) for c in clicks])),
                                     float(np.mean([rows[f"seval_question:{q}"].score(metric) for q in clicks.values()])))
                            for metric in ("precision", "mrr", "hit_rate", "recall", "ndcg")}
    return found


def measure(log_path: Path, log: list[dict], folder: Path, *, retrievers: list[str], **model: object) -> dict:
    from surreal_eval import ClickModel, Settings, connect, golden_from_log, load_beir

    with connect(Settings(url="mem://")) as db:
        load_beir(db, folder, create_harness=True)
        report = golden_from_log(db, log_path, top=40, sample=36, model=ClickModel(**model))
        found = recovery(db, folder, log)
        found.pop("pairs")
        return {"report": report.model_dump(mode="json", exclude={"load"}), "recovery": found,
                "means": paired_means(db, folder, retrievers)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--impressions", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--random-clicks", action="store_true")
    parser.add_argument("--behaviour", choices=sorted(BEHAVIOURS), default="pbm", help="How users click (module docstring)")
    parser.add_argument("--cisi", type=Path, default=None, help="CISI in BEIR layout (default: tests/data/cisi.tar.xz unpacked)")
    parser.add_argument("--measure", action="store_true", help="Load CISI and the log and report the recovery")
    args = parser.parse_args()
    folder = args.cisi or cisi_folder()
    log = simulate(folder, impressions=args.impressions, seed=args.seed, random_clicks=args.random_clicks, behaviour=args.behaviour)
    write_log(log, args.out)
    print(f"wrote {len(log)} impressions to {args.out}")
    if args.measure:
        for label, options in (("auto (defaults)", {}), ("raw clicks (COEC, no position correction)",
                                                         {"name": "coec", "position_correction": False})):
            found = measure(args.out, log, folder, retrievers=["vector", "bm25"], **options)
            r = found["recovery"]
            report = found["report"]
            print(f"\n{label}: click model {report['click_model']} ({report['chosen_by']}): {report['labels']} labels on "
                  f"{report['labelled']} of {report['questions']} questions (grades {report['grades']})")
            for fit in report["fits"]:
                print(f"  {fit['model']:8} held-out log-likelihood {fit['log_likelihood']:.4f}, perplexity {fit['perplexity']:.4f}")
            print(f"  precision {r['precision']:.3f}, recall {r['recall']:.3f} of all true labels, "
                  f"{r['recall_shown']:.3f} of the true labels ever shown ({r['true_labels_shown']} of {r['true_labels']})")
            for retriever, metrics in found["means"].items():
                print(f"  {retriever}@10 derived vs true: " + ", ".join(
                    f"{m} {d:.3f} vs {t:.3f}" for m, (d, t) in metrics.items()))


if __name__ == "__main__":
    main()
