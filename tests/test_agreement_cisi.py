"""The database's metrics equal ranx and pytrec-eval (trec_eval) on real data: CISI, every question,
every retriever, k = 1, 5, 10, 100, to 1e-9, computed on the run exported as TREC files."""

from __future__ import annotations

from collections import defaultdict

import pytest

from surreal_eval import Settings, connect, evaluate
from surreal_eval.runs.export import export_qrels_trec, export_run_trec
from surreal_eval import RETRIEVERS

from .datasets import cisi

CISI = cisi()  # shipped in tests/data
KS = [1, 5, 10, 100]
TOLERANCE = 1e-9

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cisi_run(tmp_path_factory):
    from surreal_eval.golden.files import load_beir

    db = connect(Settings(url=f"surrealkv://{tmp_path_factory.mktemp('agreement') / 'store'}"))  # not mem://: CISI takes GBs there
    report = load_beir(db, CISI, create_harness=True)
    assert (report.corpus.loaded, report.golden.loaded, report.golden.skipped) == (1460, 76, 36)
    run = evaluate(db, ks=KS, retrievers=list(RETRIEVERS), per_question=True)
    run_lines = {scores: list(export_run_trec(db, run.run, scores=scores)) for scores in ("rank", "raw")}
    qrels_lines = list(export_qrels_trec(db, run=run.run))
    db.close()
    return run, run_lines, qrels_lines


def parse(run_lines, qrels_lines):
    runs: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for line in run_lines:
        qid, _, doc, _, score, tag = line.split()
        runs[tag][qid][doc] = float(score)
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in qrels_lines:
        qid, _, doc, grade = line.split()
        qrels[qid][doc] = int(float(grade))
    return runs, dict(qrels)


def ours(report, retriever):
    table: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for row in report.per_question:
        if row.retriever == retriever:
            qid = row.question.split(":", 1)[1]
            for metric in ("recall", "hit_rate", "precision", "mrr", "ndcg", "map", "r_precision"):
                table[qid][(metric, row.k)] = getattr(row, metric)
    return table


def test_the_run_covers_every_judged_question(cisi_run):
    report, run_lines, qrels_lines = cisi_run
    runs, qrels = parse(run_lines["rank"], qrels_lines)
    assert report.questions == 76 and len(qrels) == 76
    assert sum(len(labels) for labels in qrels.values()) == 3114
    assert set(runs) == set(RETRIEVERS)


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_every_metric_equals_ranx_for_every_question(cisi_run, retriever):
    from ranx import Qrels, Run, evaluate as ranx_evaluate

    report, run_lines, qrels_lines = cisi_run
    runs, qrels = parse(run_lines["rank"], qrels_lines)
    mine = ours(report, retriever)
    retrieved = {q: docs for q, docs in runs[retriever].items() if docs}
    names = {"recall": "recall", "hit_rate": "hit_rate", "precision": "precision", "mrr": "mrr", "ndcg": "ndcg", "map": "map"}
    metrics = [f"{name}@{k}" for name in names.values() for k in KS] + ["r-precision"]
    ranx_run = Run(retrieved)
    ranx_evaluate(Qrels({q: qrels[q] for q in retrieved}), ranx_run, metrics, make_comparable=True)
    checked = 0
    for qid in qrels:
        for ours_name, ranx_name in names.items():
            for k in KS:
                expected = ranx_run.scores[f"{ranx_name}@{k}"][qid] if qid in retrieved else 0.0
                assert mine[qid][(ours_name, k)] == pytest.approx(expected, abs=TOLERANCE), (qid, ours_name, k)
                checked += 1
        expected = ranx_run.scores["r-precision"][qid] if qid in retrieved else 0.0
        assert mine[qid][("r_precision", 100)] == pytest.approx(expected, abs=TOLERANCE), (qid, "r_precision")
    assert checked == 76 * 6 * len(KS)


@pytest.mark.parametrize("scores", ["rank", "raw"])
@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_every_trec_eval_metric_equals_pytrec_eval_for_every_question(cisi_run, retriever, scores):
    """Both exports: rank-based scores, and the retrievers' own (issue 26, 6: ties trec_eval would break by
    docid descending are written a 32-bit float's step apart, in the run's order)."""
    import pytrec_eval

    report, run_lines, qrels_lines = cisi_run
    runs, qrels = parse(run_lines[scores], qrels_lines)
    mine = ours(report, retriever)
    measures = {f"P_{k}" for k in KS} | {f"recall_{k}" for k in KS} | {f"ndcg_cut_{k}" for k in KS} \
        | {f"map_cut_{k}" for k in KS} | {"Rprec", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    theirs = evaluator.evaluate({q: dict(docs) for q, docs in runs[retriever].items() if docs})
    pairs = [("precision", "P_{}"), ("recall", "recall_{}"), ("ndcg", "ndcg_cut_{}"), ("map", "map_cut_{}")]
    for qid in qrels:
        got = theirs.get(qid)
        for ours_name, pattern in pairs:
            for k in KS:
                expected = got[pattern.format(k)] if got else 0.0
                assert mine[qid][(ours_name, k)] == pytest.approx(expected, abs=TOLERANCE), (qid, ours_name, k)
        # trec_eval's recip_rank and Rprec have no cutoff: our depth-100 ranking is all the run holds
        assert mine[qid][("mrr", 100)] == pytest.approx(got["recip_rank"] if got else 0.0, abs=TOLERANCE)
        assert mine[qid][("r_precision", 100)] == pytest.approx(got["Rprec"] if got else 0.0, abs=TOLERANCE)
