"""evaluate --ann-check: the exact nearest neighbours (retriever vector_exact, a scan of every record)
beside the HNSW list, and ann_recall@k, the share of the exact top k the index returned."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from surreal_eval.errors import ConfigError
from surreal_eval.load.attach import attach_table
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_golden
from surreal_eval.models import Article, Question
from surreal_eval.present.cli import app
from surreal_eval.present.html import render_report
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.runs.tune import assign_splits, tune

from .conftest import fresh_db

runner = CliRunner()


def hits(*pairs):
    return [{"id": f"seval_article:{name}", "distance": distance} for name, distance in pairs]


@pytest.mark.parametrize(("index", "k", "expected"), [
    (hits(("a", 0.1), ("b", 0.2), ("c", 0.3)), 3, 1.0),      # the exact list itself
    (hits(("a", 0.1), ("c", 0.3), ("d", 0.4)), 2, 0.5),      # c is farther than the exact 2nd (b, 0.2)
    (hits(("a", 0.1), ("c", 0.3), ("d", 0.4)), 3, 2 / 3),    # a and c of a, b, c
    (hits(("a", 0.1), ("e", 0.2), ("c", 0.3)), 2, 1.0),      # e ties with the exact 2nd: counted
    (hits(("d", 0.4)), 3, 0.0),                              # none of them
    (hits(("a", 0.1)), 3, 1 / 3),                            # a short list loses the rest
])
def test_ann_recall_is_the_share_of_the_exact_top_k_the_index_returned(db, index, k, expected):
    exact = hits(("a", 0.1), ("b", 0.2), ("c", 0.3), ("f", 0.5))
    got = db.value("RETURN fn::seval::ann_recall($index, $exact, $k)", {"index": index, "exact": exact, "k": k})
    assert got == pytest.approx(expected)
    assert db.value("RETURN fn::seval::ann_recall($index, [], 3)", {"index": index}) == 1.0  # an empty corpus loses nothing


#: Hand-made 2-d documents at known angles from the question [1, 0]: a (0°), b (30°), c (60°), d (90°), e (180°).
ANGLES = {"a": 0, "b": 30, "c": 60, "d": 90, "e": 180}


def angled_db():
    db = fresh_db(dimension=2)
    load_corpus(db, [Article(id=name, title=name, content=f"document {name} about angle {deg}",
                             embedding=[float(np.cos(np.radians(deg))), float(np.sin(np.radians(deg)))])
                     for name, deg in ANGLES.items()])
    load_golden(db, [Question(id="east", text="angle", embedding=[1.0, 0.0], relevant=["b"]),
                     Question(id="north", text="angle", embedding=[0.0, 1.0], relevant=["c", "d"])])
    return db


def test_the_exact_list_ranks_hand_made_vectors_by_their_known_angles():
    db = angled_db()
    report = evaluate(db, ks=[1, 3], retrievers=["vector"], params={"ann_check": True}, per_question=True)
    assert report.retrievers == ["vector", "vector_exact"]
    assert report.params["ann_check"] is True
    ranked = {(r.question, r.retriever): r.ranked for r in report.per_question if r.k == 3}
    assert ranked["seval_question:east", "vector_exact"] == ["seval_article:a", "seval_article:b", "seval_article:c"]
    assert ranked["seval_question:north", "vector_exact"] == ["seval_article:d", "seval_article:c", "seval_article:b"]  # 0°, 30°, 60° off
    assert [(a.k, a.ann_recall, a.questions) for a in report.ann] == [(1, 1.0, 2), (3, 1.0, 2)]
    exact = {r.k: r for r in report.results if r.retriever == "vector_exact"}
    assert exact[1].recall == 0.25 and exact[3].recall == 1.0  # east: b at rank 2; north: d at 1, c at 2
    db.close()


def random_corpus(*, docs: int = 1500, dimension: int = 16, questions: int = 30, knn_ef: int = 10, seed: int = 7):
    """`docs` random unit vectors loaded in bulk (so the HNSW graph is built, with a small search
    width `knn_ef`), and `questions` random questions each labelled with its exact nearest neighbour."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(docs, dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    asked = rng.normal(size=(questions, dimension))
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    db = fresh_db(dimension=dimension, knn_depth=10, knn_ef=knn_ef)
    load_corpus(db, [Article(id=f"d{i:04d}", title="", content=f"random vector {i}", embedding=v.tolist())
                     for i, v in enumerate(vectors)])
    order = np.argsort(-(asked @ vectors.T), axis=1)  # cosine similarity of unit vectors, best first
    load_golden(db, [Question(id=f"q{j:02d}", text=f"question {j}", embedding=q.tolist(), relevant=[f"d{order[j, 0]:04d}"])
                     for j, q in enumerate(asked)])
    return db, order


@pytest.mark.slow
def test_a_tiny_ef_loses_true_neighbours_and_the_exact_list_does_not():
    db, order = random_corpus(knn_ef=10)
    report = evaluate(db, ks=[10], retrievers=["vector"], params={"ann_check": True}, per_question=True)
    truth = {f"seval_question:q{j:02d}": [f"seval_article:d{i:04d}" for i in order[j, :10]] for j in range(order.shape[0])}
    exact = {r.question: r.ranked for r in report.per_question if r.retriever == "vector_exact"}
    index = {r.question: r.ranked for r in report.per_question if r.retriever == "vector"}
    assert exact == truth  # the scan returns exactly numpy's top 10
    shares = [len(set(index[q]) & set(truth[q])) / 10 for q in truth]
    assert report.ann[0].ann_recall == pytest.approx(float(np.mean(shares)))
    assert report.ann[0].ann_recall < 1.0  # the graph searched with ef = 10 really loses neighbours
    means = {r.retriever: r for r in report.results}
    assert means["vector_exact"].hit_rate == 1.0  # every label is the exact nearest neighbour
    low, high = report.ann[0].interval.low, report.ann[0].interval.high
    assert low <= report.ann[0].ann_recall <= high
    db.close()


@pytest.mark.slow
def test_tune_sweeps_knn_ef_against_the_exact_neighbours():
    db, _ = random_corpus(knn_ef=10)
    assign_splits(db, dev_fraction=0.5)
    result = tune(db, param="knn_ef", values=[2, 10, 200], metric="ann_recall@10")
    means = {row["value"]: row["mean"] for row in result.sweep}
    assert means[2] < means[10] <= means[200]  # ef below k even returns fewer than k records
    assert 0 < means[2] <= 0.2 + 1e-9  # two records of the exact ten at best: ef = 2 returns two
    assert result.best == 200
    assert result.report.params["ann_check"] is True and result.report.params["knn_ef"] == 200
    assert [a.k for a in result.report.ann] == [10]
    with pytest.raises(ConfigError, match="knn_ef only"):
        tune(db, param="rrf_k", values=[10, 60], metric="ann_recall@10")
    db.close()


def test_the_ann_check_reads_an_attached_tables_own_index():
    db = fresh_db(dimension=2)
    db.query("DEFINE TABLE notes SCHEMALESS; DEFINE INDEX notes_vec ON notes FIELDS vec HNSW DIMENSION 2 DIST COSINE; "
             "DEFINE INDEX notes_body ON notes FIELDS body FULLTEXT ANALYZER seval_english BM25;")
    for name, deg in ANGLES.items():
        db.query("CREATE type::record('notes', $k) CONTENT { body: $b, vec: $v }",
                 {"k": name, "b": f"note {name}", "v": [float(np.cos(np.radians(deg))), float(np.sin(np.radians(deg)))]})
    attach_table(db, "notes", content="body", embedding="vec")
    load_golden(db, [Question(id="east", text="note", embedding=[1.0, 0.0], relevant=["b"])], label_table="notes")
    report = evaluate(db, ks=[2], retrievers=["vector"], params={"ann_check": True, "corpus": "notes"}, per_question=True)
    ranked = {r.retriever: r.ranked for r in report.per_question}
    assert ranked["vector_exact"] == ["notes:a", "notes:b"]
    assert ranked["vector"] == ranked["vector_exact"] and report.ann[0].ann_recall == 1.0
    db.close()


def test_evaluate_ann_check_prints_the_check_and_the_json_and_report_carry_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["init", "--demo"]).exit_code == 0
    shown = runner.invoke(app, ["evaluate", "--k", "1,3", "--ann-check", "--retriever", "vector"])
    assert shown.exit_code == 0, shown.output
    assert "ANN check" in shown.output and "vector_exact" in shown.output
    done = runner.invoke(app, ["evaluate", "--k", "1,3", "--ann-check", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert [(a["k"], a["ann_recall"]) for a in report["ann"]] == [(1, 1.0), (3, 1.0)]
    assert "vector_exact" in {r["retriever"] for r in report["results"]}
    assert {c["check"]: c["status"] for c in report["checks"]} == {"bm25": "passed", "vector": "passed"}
    plain = json.loads(runner.invoke(app, ["evaluate", "--k", "1", "--json"]).output)
    assert plain["ann"] == [] and "vector_exact" not in {r["retriever"] for r in plain["results"]}
    from surreal_eval import Settings, connect

    with connect(Settings(url="surrealkv://surreal-eval.db")) as db:
        page = render_report(db, runs=[report["run"]])
    assert "<th class=\"\">ann_recall</th>" in page and "1.000 [1.00, 1.00]" in page
