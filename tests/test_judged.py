"""judged@k and explicit non-relevant judgments: grades of 0 and below are kept, counted by judged@k
(trec_eval judged_k: judged ids in the top k / k), and ignored by every binary metric and by nDCG;
compare warns when two runs' judged@k are far apart. Checked by hand and against pytrec_eval."""

from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict

import pytest

from surreal_eval import InputError, compare_runs, evaluate
from surreal_eval.golden.files import load_golden
from surreal_eval.load.collections import read_qrels
from surreal_eval.load.readers import read_questions
from surreal_eval.models import Question

from .datasets import cisi

RANKED = ["a", "b", "c", "d", "e"]


def _metrics(db, relevant, grades, k):
    return db.value("RETURN fn::seval::metrics($ranked.map(|$x| type::record('seval_article', $x)), "
                    "$relevant.map(|$x| type::record('seval_article', $x)), $grades, $k)",
                    {"ranked": RANKED, "relevant": relevant, "grades": grades, "k": k})


def test_judged_at_k_counts_relevant_and_non_relevant_judgments_by_hand(db):
    # b is relevant (grade 2), c and d are judged non-relevant (grade 0), a and e are unjudged
    got = _metrics(db, ["b", "c", "d"], [2, 0, 0], 4)
    assert got["judged"] == pytest.approx(3 / 4)  # b, c, d of a, b, c, d
    assert got["precision"] == pytest.approx(1 / 4) and got["recall"] == 1.0 and got["hit_rate"] == 1.0
    assert got["mrr"] == pytest.approx(1 / 2) and got["map"] == pytest.approx(1 / 2)
    assert got["r_precision"] == 0.0  # R = 1: the top 1 is a
    assert got["ndcg"] == pytest.approx((2 / math.log2(3)) / 2)
    assert _metrics(db, ["b", "c", "d"], [2, 0, 0], 1)["judged"] == 0.0
    assert _metrics(db, ["b", "x"], [2, 0], 5)["judged"] == pytest.approx(1 / 5)  # x never retrieved


def test_non_relevant_judgments_change_no_metric_but_judged(db):
    for k in (1, 2, 3, 5, 10):
        with_zeros = _metrics(db, ["b", "e", "a", "d"], [1, 3, 0, 0], k)
        without = _metrics(db, ["b", "e"], [1, 3], k)
        assert {m: v for m, v in with_zeros.items() if m != "judged"} == pytest.approx(
            {m: v for m, v in without.items() if m != "judged"}), k
        # the one-pass fn::metrics_at agrees with the functions one by one
        at = db.value("RETURN fn::seval::metrics_at($ranked.map(|$x| type::record('seval_article', $x)), "
                      "[seval_article:b, seval_article:e, seval_article:a, seval_article:d], [1, 3, 0, 0], [$k])[0].metrics",
                      {"ranked": RANKED, "k": k})
        assert at == pytest.approx(with_zeros), k


def test_grades_of_zero_and_below_load_as_non_relevant_judgments(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q", "text": "t", "relevant": {"d1": 2, "d2": 0, "d3": -1}}) + "\n"
                      + json.dumps({"id": "r", "text": "t", "relevant": {"d1": 1}}) + "\n")
    q, r = read_questions(golden)
    assert (q.relevant, q.grades, q.nonrelevant) == (["d1"], [2.0], ["d2", "d3"])
    assert r.nonrelevant is None
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 -2\nq2 0 d1 0\n")
    parsed = read_qrels(qrels, format="trec")
    assert parsed.judgments == {"q1": {"d1": 1.0}} and parsed.nonrelevant == {"q1": ["d2", "d3"], "q2": ["d1"]}
    assert parsed.dropped == 3


def test_non_relevant_judgments_are_stored_and_one_also_relevant_is_refused(seeded):
    before = seeded.value("SELECT * FROM seval_question ORDER BY id")
    question = Question(id="both", text="refund", embedding=[0.1, 0.9, 0.1, 0.0], relevant=["refund_request"],
                        nonrelevant=["refund_request"])
    with pytest.raises(InputError, match="seval_article:refund_request is judged both relevant and non-relevant"):
        load_golden(seeded, [question])
    assert seeded.value("SELECT * FROM seval_question ORDER BY id") == before
    kept = question.model_copy(update={"nonrelevant": ["track_order", "return_item"]})
    load_golden(seeded, [kept])
    stored = seeded.value("SELECT VALUE nonrelevant FROM ONLY seval_question:both")
    assert [str(r) for r in stored] == ["seval_article:track_order", "seval_article:return_item"]


def _judged_by_hand(row, nonrelevant):
    judged = set(row.relevant) | nonrelevant
    return sum(1 for doc in row.ranked[:row.k] if doc in judged) / row.k


def test_a_run_reports_judged_at_k_from_the_stored_judgments(seeded):
    plain = evaluate(seeded, ks=[1, 3, 5], per_question=True)
    # judge the documents the vector retriever ranks 2nd and 3rd for each question non-relevant
    chosen = {}
    for row in plain.per_question:
        if row.retriever == "vector" and row.k == 5:
            chosen[row.question] = [d for d in row.ranked[1:3] if d not in row.relevant]
    for question, docs in chosen.items():
        seeded.query("UPDATE type::record($q) SET nonrelevant = $docs",
                     {"q": question, "docs": [seeded.value("RETURN type::record($d)", {"d": d}) for d in docs]})
    judged = evaluate(seeded, ks=[1, 3, 5], per_question=True)
    assert "judged" in judged.metrics
    for before, after in zip(plain.per_question, judged.per_question, strict=True):
        assert (before.question, before.retriever, before.k) == (after.question, after.retriever, after.k)
        assert before.judged == pytest.approx(_judged_by_hand(before, set()))
        assert after.judged == pytest.approx(_judged_by_hand(after, set(chosen[after.question])))
        assert {m: v for m, v in after.scores.items() if m != "judged"} == pytest.approx(
            {m: v for m, v in before.scores.items() if m != "judged"})
    assert any(a.judged > b.judged for a, b in zip(judged.per_question, plain.per_question))
    comparison = compare_runs(seeded, plain.run, judged.run)
    lines = [w for w in comparison.warnings if "judged@" in w]
    assert lines and all("run A may score lower for want of judgments" in w for w in lines)
    assert not [w for w in compare_runs(seeded, judged.run, judged.run).warnings if "judged@" in w]


def test_with_positive_judgments_only_a_regression_draws_no_judged_warning(regressed):
    """The demo's labels are all positive: judged@k is precision@k, so the reversed embeddings' drop in judged@k is the
    regression itself, not a want of judgments."""
    db, good, bad = regressed
    comparison = compare_runs(db, good.run, bad.run)
    vector = next(r for r in comparison.rows if r.retriever == "vector" and r.metric == "recall@5")
    assert vector.broken and not vector.fixed  # it regressed
    assert not [w for w in comparison.warnings if "judged@" in w]


@pytest.mark.slow
def test_judged_and_binary_metrics_with_non_relevant_judgments_equal_pytrec_eval_on_cisi(tmp_path):
    """CISI's qrels plus explicit judgments of 0 and -1 (every document whose id ends in 3 or 7 that
    is not relevant): P_k, recall_k, ndcg_cut_k and map_cut_k equal pytrec_eval's, and judged@k
    equals trec_eval's judged_k from its counts, a negative grade counted as judged."""
    import pytrec_eval

    from surreal_eval import Settings, connect
    from surreal_eval.golden.files import load_beir
    from surreal_eval.runs.export import export_run_trec

    folder = shutil.copytree(cisi(), tmp_path / "cisi")
    lines = (folder / "qrels" / "test.tsv").read_text().splitlines()
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in lines[1:]:
        qid, doc, score = line.split("\t")
        qrels[qid][doc] = int(score)
    docs = [json.loads(line)["_id"] for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
    extra = []
    for qid in list(qrels):
        for doc in docs:
            if doc[-1] in "37" and doc not in qrels[qid]:
                qrels[qid][doc] = -1 if doc.endswith("77") else 0
                extra.append(f"{qid}\t{doc}\t{qrels[qid][doc]}")
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines + extra) + "\n")
    ks = [1, 5, 10, 100]
    db = connect(Settings(url=f"surrealkv://{tmp_path / 'store'}"))  # not mem://: CISI takes GBs there
    report = load_beir(db, folder, create_harness=True)
    assert report.golden.loaded == 76
    run = evaluate(db, ks=ks, retrievers=["bm25", "vector"], per_question=True)
    runs: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for line in export_run_trec(db, run.run):
        qid, _, doc, _, score, tag = line.split()
        runs[tag][qid][doc] = float(score)
    db.close()
    measures = {f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in ks}
    evaluator = pytrec_eval.RelevanceEvaluator(dict(qrels), measures)
    # pytrec-eval-terrier lacks judged_k: trec_eval's judged_k is (relevant + judged non-relevant
    # retrieved) / k over the top k, so count both with num_rel_ret and num_nonrel_judged_ret on
    # the run cut to its top k (the exported scores strictly decrease: the run's own order)
    counter = pytrec_eval.RelevanceEvaluator(dict(qrels), {"num_rel_ret", "num_nonrel_judged_ret"})
    pairs = [("precision", "P_{}"), ("recall", "recall_{}"), ("ndcg", "ndcg_cut_{}"), ("map", "map_cut_{}")]
    checked = 0
    for retriever in ("bm25", "vector"):
        ranked = {q: d for q, d in runs[retriever].items() if d}
        theirs = evaluator.evaluate(ranked)
        counts = {k: counter.evaluate({q: dict(sorted(d.items(), key=lambda kv: -kv[1])[:k]) for q, d in ranked.items()})
                  for k in ks}
        for row in run.per_question:
            if row.retriever != retriever:
                continue
            qid = row.question.split(":", 1)[1]
            for ours_name, pattern in pairs:
                assert row.score(ours_name) == pytest.approx(theirs[qid][pattern.format(row.k)], abs=1e-9), (qid, ours_name)
            got = counts[row.k][qid]
            # trec_eval takes a negative grade as "not in the pool", unjudged; here it is judged non-relevant
            negative = sum(1 for doc in row.ranked[:row.k] if qrels[qid].get(doc.split(":", 1)[1], 0) < 0)
            judged = got["num_rel_ret"] + got["num_nonrel_judged_ret"] + negative
            assert row.judged == pytest.approx(judged / row.k, abs=1e-9), qid
            checked += 1
    assert checked == 76 * len(ks) * 2
    assert any(row.judged > row.precision for row in run.per_question)  # the zeros were retrieved
    assert any(qrels[row.question.split(":", 1)[1]].get(d.split(":", 1)[1], 0) < 0 for row in run.per_question for d in row.ranked)
