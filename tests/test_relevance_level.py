"""--relevance-level N (binary metrics count a label from grade N, nDCG keeps the grades: trec_eval -l)
and --ignore-identical-ids (a question's own record is dropped before scoring: BEIR's convention).

Checked by hand, against pytrec_eval's relevance_level on random graded cases and on CISI with
graded labels, and against BEIR's rule (drop every retrieved id equal to the query id) on a
question that is its own document and on CISI, whose question and document ids overlap.
"""

from __future__ import annotations

import random
import shutil
from collections import defaultdict

import pytest
import pytrec_eval
from typer.testing import CliRunner

from surreal_eval import ConfigError, Settings, compare_runs, connect, evaluate
from surreal_eval.present.cli import app
from surreal_eval.runs.export import export_qrels_trec, export_run_trec
from surreal_eval.runs.watch import get_watch, set_watch

from .conftest import snapshot
from .datasets import cisi

KS = [1, 3, 5]
BINARY = ("recall", "hit_rate", "precision", "mrr", "map", "r_precision")
runner = CliRunner()


def at_level(db, ranked, labels, ks, level):
    rows = db.value("RETURN fn::seval::metrics_at_level($ranked, $relevant, $grades, $ks, $level)",
                    {"ranked": ranked, "relevant": list(labels), "grades": list(labels.values()), "ks": ks, "level": level})
    return {row["k"]: row["metrics"] for row in rows}


def trec(qrels, ranked, k, level):
    """pytrec_eval (trec_eval) at relevance level `level` of one ranking, as our metric names at cutoff k."""
    run = {"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
    top = {"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked[:k])}}
    measures = {f"recall_{k}", f"P_{k}", f"ndcg_cut_{k}", f"map_cut_{k}", f"success_{k}", "Rprec"}
    full = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures, relevance_level=level).evaluate(run)["q"]
    rr = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"recip_rank"}, relevance_level=level).evaluate(top)["q"]
    return {"recall": full[f"recall_{k}"], "precision": full[f"P_{k}"], "ndcg": full[f"ndcg_cut_{k}"],
            "map": full[f"map_cut_{k}"], "hit_rate": full[f"success_{k}"], "r_precision": full["Rprec"],
            "mrr": rr.get("recip_rank", 0.0)}


def test_relevance_level_by_hand(db):
    # labels a: 1, c: 3, d: 2; ranking a, b, c. At level 2 the relevant ones are c and d.
    got = at_level(db, ["a", "b", "c"], {"a": 1, "c": 3, "d": 2}, [1, 3], 2)
    assert got[3]["recall"] == 0.5 and got[3]["precision"] == pytest.approx(1 / 3)
    assert got[3]["mrr"] == pytest.approx(1 / 3) and got[3]["map"] == pytest.approx((1 / 3) / 2)
    assert got[3]["r_precision"] == 0.0  # the top 2 (a, b) holds neither c nor d
    assert got[1]["hit_rate"] == 0.0 and got[3]["hit_rate"] == 1.0
    # nDCG keeps every grade: (1 + 3/2) / (3 + 2/log2(3) + 1/2), the same as at level 1
    assert got[3]["ndcg"] == pytest.approx((1 + 3 / 2) / (3 + 2 / 1.5849625007211562 + 1 / 2))
    assert got[3]["ndcg"] == at_level(db, ["a", "b", "c"], {"a": 1, "c": 3, "d": 2}, [3], 1)[3]["ndcg"]
    # judged stays "any judgment": a and c of the top 3 are judged
    assert got[3]["judged"] == pytest.approx(2 / 3)


def test_a_question_with_no_label_at_the_level_scores_zero_as_trec_eval(db):
    got = at_level(db, ["a", "b"], {"a": 1, "b": 1}, [1, 2], 2)
    assert all(got[k][m] == 0 for k in (1, 2) for m in BINARY)
    assert got[2]["ndcg"] == 1.0 and got[2]["judged"] == 1.0
    assert trec({"a": 1, "b": 1}, ["a", "b"], 2, 2) == pytest.approx({**{m: 0.0 for m in BINARY}, "ndcg": 1.0})


@pytest.mark.parametrize("seed", range(12))
def test_every_metric_equals_pytrec_eval_at_every_relevance_level(db, seed):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(25)]
    for _ in range(4):
        labels = {d: rng.choice([0, 1, 1, 2, 3, 4]) for d in rng.sample(docs, rng.randint(1, 12))}
        labels[rng.choice(list(labels))] = rng.randint(1, 4)  # at least one relevant label at level 1
        ranked = rng.sample(docs, rng.randint(1, 20))
        for level in (1, 2, 3, 4):
            got = at_level(db, ranked, labels, [1, 3, 5, 10], level)
            for k in (1, 3, 5, 10):
                assert {m: got[k][m] for m in (*BINARY, "ndcg")} == pytest.approx(trec(labels, ranked, k, level), abs=1e-12), (
                    labels, ranked, k, level)


def means(report):
    return {(r.retriever, r.k): r.scores for r in report.results}


def test_level_2_on_the_seed_keeps_ndcg_and_only_money_backs_grade_2_label(seeded):
    one = evaluate(seeded, ks=KS, per_question=True)
    two = evaluate(seeded, ks=KS, params={"relevance_level": 2}, per_question=True)
    assert one.params["relevance_level"] == 1 and two.params["relevance_level"] == 2
    for key, metrics in means(one).items():
        assert means(two)[key]["ndcg"] == pytest.approx(metrics["ndcg"])
        assert means(two)[key]["judged"] == pytest.approx(metrics["judged"])
    for row in two.per_question:
        if row.question == "seval_question:money_back":  # refund_request (grade 2) is its one relevant label now
            assert row.recall == (1.0 if "seval_article:refund_request" in row.ranked[: row.k] else 0.0)
        else:  # every other question has grade-1 labels only: nothing reaches level 2
            assert all(getattr(row, m) == 0 for m in BINARY)


def test_the_default_level_is_level_1(seeded):
    default, one = means(evaluate(seeded, ks=KS)), means(evaluate(seeded, ks=KS, params={"relevance_level": 1}))
    assert default.keys() == one.keys() and all(default[key] == pytest.approx(one[key], abs=1e-12) for key in default)


def test_compare_warns_when_the_scoring_rules_differ(seeded):
    a = evaluate(seeded, ks=KS)
    b = evaluate(seeded, ks=KS, params={"relevance_level": 2, "ignore_identical_ids": True})
    comparison = compare_runs(seeded, a.run, b.run, metrics=["recall@3"])
    assert {c.field for c in comparison.changes} >= {"params.relevance_level", "params.ignore_identical_ids"}
    warned = [w for w in comparison.warnings if "different relevance_level" in w or "different ignore_identical_ids" in w]
    assert len(warned) == 2 and "A 1, B 2" in warned[0]
    same = compare_runs(seeded, a.run, evaluate(seeded, ks=KS).run, metrics=["recall@3"])
    assert not any("scored with different" in w for w in same.warnings)


@pytest.mark.parametrize(("params", "message"), [
    ({"relevance_level": 0}, "relevance level must be at least 1"),
    ({"relevance_level": 1.5}, "relevance level must be a whole number"),
    ({"relevance_level": "2"}, "relevance level must be a whole number"),
    ({"ignore_identical_ids": "yes"}, "ignore_identical_ids must be true or false"),
])
def test_bad_scoring_parameters_are_refused_and_change_nothing(seeded, params, message):
    before = snapshot(seeded)
    with pytest.raises(ConfigError, match=message):
        evaluate(seeded, ks=KS, params=params)
    with pytest.raises(ConfigError, match=message):
        set_watch(seeded, ks=KS, params=params)
    assert snapshot(seeded) == before


def test_watch_and_tune_record_the_scoring_parameters(seeded):
    set_watch(seeded, ks=[3], params={"relevance_level": 2, "ignore_identical_ids": True})
    assert get_watch(seeded)["params"] == {"relevance_level": 2, "ignore_identical_ids": True, "golden": "seval_question"}
    from surreal_eval.runs.tune import tune

    sweep = lambda level: tune(seeded, param="floor", values=[0.0, 3.0], metric="recall@3", retriever="hybrid_floor",  # noqa: E731
                               params={"relevance_level": level}, force=True)
    one, two = sweep(1), sweep(2)
    # level 1: floor 0 loses money_back's grade-1 label (1/2 of one question of eight); level 2 counts only
    # money_back's grade-2 label, which both floors find: 1/8 each, a tie, so no run is recorded
    assert [r["mean"] for r in one.sweep] == pytest.approx([0.9375, 1.0]) and one.report.params["relevance_level"] == 1
    assert [r["mean"] for r in two.sweep] == pytest.approx([0.125, 0.125]) and two.report is None


# ---------------------------------------------------------------------------------------------
# --ignore-identical-ids
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def own_document(seeded):
    """A question whose key is an article's key and whose text and embedding are that article's."""
    seeded.query("CREATE seval_question:password_reset CONTENT { text: 'forgot password reset link email', "
                 "embedding: [0.9, 0.1, 0.0, 0.1], relevant: [seval_article:account_locked] }")
    return seeded


def beir_drop(ranked, qid):
    """BEIR's EvaluateRetrieval.evaluate(ignore_identical_ids=True): drop every result whose id is the query's."""
    return [d for d in ranked if d.split(":", 1)[1] != qid]


def test_ignore_identical_ids_drops_the_questions_own_record(own_document):
    kept = evaluate(own_document, ks=KS, retrievers=["vector"], params={"depth": 6}, per_question=True)
    dropped = evaluate(own_document, ks=KS, retrievers=["vector"], params={"ignore_identical_ids": True, "depth": 6},
                       per_question=True)
    (before,) = [r for r in kept.per_question if r.question == "seval_question:password_reset" and r.k == 1]
    (after,) = [r for r in dropped.per_question if r.question == "seval_question:password_reset" and r.k == 1]
    assert before.ranked == ["seval_article:password_reset"] and before.mrr == 0.0
    assert after.ranked == ["seval_article:account_locked"] and after.mrr == 1.0
    # the stored rankings: BEIR's rule applied to the kept one gives the dropped one; no other question changed
    (full_kept, _), (full_dropped, _) = parsed(own_document, kept.run), parsed(own_document, dropped.run)
    assert full_dropped["password_reset"] == [d for d in full_kept["password_reset"] if d != "password_reset"]
    assert len(full_dropped["password_reset"]) == 5
    assert {q: r for q, r in full_kept.items() if q != "password_reset"} == {
        q: r for q, r in full_dropped.items() if q != "password_reset"}
    assert dropped.params["ignore_identical_ids"] is True and dropped.params["depth"] == 6


def test_ignoring_identical_ids_retrieves_one_more_so_the_deepest_k_stays_full(own_document):
    report = evaluate(own_document, ks=KS, retrievers=["vector"], params={"ignore_identical_ids": True}, per_question=True)
    assert report.params["depth"] == 6
    (row,) = [r for r in report.per_question if r.question == "seval_question:password_reset" and r.k == 5]
    assert len(row.ranked) == 5


def test_cli_scoring_options_are_recorded(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert runner.invoke(app, ["--url", url, "init", "--demo"]).exit_code == 0
    done = runner.invoke(app, ["--url", url, "evaluate", "--k", "3", "--relevance-level", "2", "--ignore-identical-ids", "--json"])
    assert done.exit_code == 0, done.output
    assert '"relevance_level": 2' in done.stdout and '"ignore_identical_ids": true' in done.stdout
    bad = runner.invoke(app, ["--url", url, "evaluate", "--k", "3", "--relevance-level", "0"])
    assert bad.exit_code == 2 and "relevance level" in bad.stderr and "--relevance-level" in bad.stderr
    assert runner.invoke(app, ["--url", url, "watch", "set", "--k", "3", "--relevance-level", "3"]).exit_code == 0


# ---------------------------------------------------------------------------------------------
# Real data: CISI with graded labels, and its overlapping question and document ids
# ---------------------------------------------------------------------------------------------


def graded_cisi(tmp_path):
    """CISI with each label given a grade 1 to 3 by a seeded draw (CISI itself has only grade 1)."""
    folder = tmp_path / "cisi"
    shutil.copytree(cisi(), folder)
    qrels = folder / "qrels" / "test.tsv"
    lines = qrels.read_text(encoding="utf-8").splitlines()
    rng = random.Random(14)
    graded = [lines[0]] + ["\t".join([*line.split("\t")[:2], str(rng.choice([1, 2, 3]))]) for line in lines[1:]]
    qrels.write_text("\n".join(graded) + "\n", encoding="utf-8")
    return folder


def parsed(db, run):
    ranked: dict[str, list[str]] = defaultdict(list)
    for line in export_run_trec(db, run):
        qid, _, doc, _, _, _ = line.split()
        ranked[qid].append(doc)
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in export_qrels_trec(db, run=run):
        qid, _, doc, grade = line.split()
        qrels[qid][doc] = int(float(grade))
    return ranked, qrels


@pytest.mark.slow
def test_cisi_with_graded_labels_equals_pytrec_eval_at_level_2_and_beir_ignoring_identical_ids(tmp_path):
    from surreal_eval.golden.files import load_beir

    db = connect(Settings(url=f"surrealkv://{tmp_path / 'store'}"))  # not mem://: CISI takes GBs there
    try:
        load_beir(db, graded_cisi(tmp_path), create_harness=True)
        assert db.value("SELECT VALUE grades FROM seval_question").count([1]) < 76  # the grades took
        ks = [5, 10, 50]
        report = evaluate(db, ks=ks, retrievers=["vector"], params={"relevance_level": 2, "ignore_identical_ids": True},
                          per_question=True)
        kept = evaluate(db, ks=ks, retrievers=["vector"], params={"depth": 51}, per_question=True)
        ranked, qrels = parsed(db, report.run)
        before, _ = parsed(db, kept.run)
        checked = shared = 0
        for qid, docs in ranked.items():
            assert qid not in docs and docs == [d for d in before[qid] if d != qid]  # BEIR: ids equal to the query's dropped
            shared += len(before[qid]) != len(docs)
        assert shared > 0  # CISI's question ids are also document ids: some questions retrieve "themselves"
        for row in report.per_question:
            qid = row.question.split(":", 1)[1]
            expected = trec(qrels[qid], ranked[qid], row.k, 2)
            assert {m: getattr(row, m) for m in expected} == pytest.approx(expected, abs=1e-9), (qid, row.k)
            checked += 1
        assert checked == 76 * len(ks)
    finally:
        db.close()
