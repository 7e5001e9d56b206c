"""The database's metrics equal ranx and pytrec-eval (trec_eval) on real data: CISI, every question,
every retriever, k = 1, 5, 10, 100, to 1e-9, computed on the run exported as TREC files; and on the same run,
`golden judge` (against the tests' local chat server) reads its agreement honestly: CISI judges no document
not relevant, so the human-judged sample's kappa is not measurable (never 0), and it prints Kendall's tau
between the retrievers' orderings on human and on human+model judgments (issue 34)."""

from __future__ import annotations

from collections import defaultdict

import json
import re

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect, evaluate
from surreal_eval.present.cli import app
from surreal_eval.runs.export import export_qrels_trec, export_run_trec
from surreal_eval import RETRIEVERS

from .chat_server import chat_server
from .datasets import cisi

CISI = cisi()  # shipped in tests/data
KS = [1, 5, 10, 100]
TOLERANCE = 1e-9

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cisi_run(tmp_path_factory):
    from surreal_eval.golden.files import load_beir

    url = f"surrealkv://{tmp_path_factory.mktemp('agreement') / 'store'}"
    db = connect(Settings(url=url))  # not mem://: CISI takes GBs there
    report = load_beir(db, CISI, create_harness=True)
    assert (report.corpus.loaded, report.golden.loaded, report.golden.skipped) == (1460, 76, 36)
    run = evaluate(db, ks=KS, retrievers=list(RETRIEVERS), per_question=True)
    run_lines = {scores: list(export_run_trec(db, run.run, scores=scores)) for scores in ("rank", "raw")}
    qrels_lines = list(export_qrels_trec(db, run=run.run))
    db.close()
    return run, run_lines, qrels_lines, url


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
    report, run_lines, qrels_lines, _ = cisi_run
    runs, qrels = parse(run_lines["rank"], qrels_lines)
    assert report.questions == 76 and len(qrels) == 76
    assert sum(len(labels) for labels in qrels.values()) == 3114
    assert set(runs) == set(RETRIEVERS)


@pytest.mark.parametrize("retriever", RETRIEVERS)
def test_every_metric_equals_ranx_for_every_question(cisi_run, retriever):
    from ranx import Qrels, Run, evaluate as ranx_evaluate

    report, run_lines, qrels_lines, _ = cisi_run
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

    report, run_lines, qrels_lines, _ = cisi_run
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


def test_golden_judge_on_cisi_never_prints_kappa_0_for_its_one_sided_sample_and_prints_kendalls_tau(cisi_run, tmp_path, monkeypatch):
    report, _, _, url = cisi_run
    monkeypatch.setenv("SURREAL_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SURREAL_EVAL_CHAT", raising=False)
    with chat_server(dimension=4) as server:  # grades by the question's words found in the passage (chat_server.judge_grade)
        chat = ["--chat", f"openai:judge@{server.url}", "--concurrency", "8"]
        text = CliRunner().invoke(app, ["--url", url, "golden", "judge", report.run, "--k", "5", *chat])
        assert text.exit_code == 0, text.output
        again = CliRunner().invoke(app, ["--url", url, "golden", "judge", report.run, "--k", "5", "--json", *chat])
    assert again.exit_code == 0, again.output
    assert not re.search(r"kappa -?0\.000", text.stdout)
    assert ("Cohen's kappa not measurable: the humans put all 50 pairs in one class (relevant): kappa is 0 whatever the other side "
            "says") in text.stdout
    assert "Kendall's tau" in text.stdout and re.search(r"recall@5: Kendall's tau -?[01]\.\d{3} \(95% interval", text.stdout)
    found = json.loads(again.stdout)
    assert found["agreement"]["kappa"]["value"] is None and "one class" in found["agreement"]["kappa"]["reason"]
    orderings = found["orderings"]
    assert orderings["questions"] == 76 and set(orderings["retrievers"]) == set(RETRIEVERS) and orderings["model_judgments"] > 0
    for m in orderings["metrics"]:  # measured with its interval, or (hit_rate@5: every retriever 1.0 on human+model) said why not
        tau = m["tau"]
        assert (tau["value"] is not None and -1 <= tau["low"] <= tau["high"] <= 1) or "tie every system" in tau["reason"], m
    (recall,) = [m for m in orderings["metrics"] if m["metric"] == "recall@5"]
    assert recall["tau"]["value"] is not None
