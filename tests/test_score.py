"""`score FILE`: rankings made elsewhere (TREC run files, JSONL) recorded as runs, scored by the same
SurrealQL as the database's own retrievers, checked against pytrec_eval; every refusal changes nothing."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from surreal_eval.errors import InputError
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.runs.export import export_qrels_trec, export_run_trec
from surreal_eval.runs.history import history
from surreal_eval.runs.score import score_file

from .conftest import snapshot, seed_own

runner = CliRunner()
TOLERANCE = 1e-9


def means(report) -> dict:
    return {(r.retriever, r.k): r.scores for r in report.results}


def test_an_exported_run_scored_back_has_the_same_metrics(seeded, tmp_path):
    run = evaluate(seeded, ks=[1, 3, 5])
    path = tmp_path / "run.trec"
    path.write_text("\n".join(export_run_trec(seeded, run.run)) + "\n")
    back = score_file(seeded, path, ks=[1, 3, 5], label="scored back")
    assert sorted(back.retrievers) == sorted(run.retrievers) and back.params["supplied"]["format"] == "trec"
    original, scored = means(run), means(back)
    assert set(original) == set(scored)
    for key, scores in original.items():
        assert scored[key] == pytest.approx(scores, abs=TOLERANCE), key
    assert [r.label for r in history(seeded)][-1] == "scored back"


def test_a_scored_run_is_compared_and_gated_with_the_run_it_came_from(seeded, tmp_path):
    from surreal_eval.analysis.compare import compare_runs
    from surreal_eval.analysis.gate import gate

    run = evaluate(seeded, ks=[1, 5])
    path = tmp_path / "run.trec"
    path.write_text("\n".join(export_run_trec(seeded, run.run, retrievers=["hybrid"])) + "\n")
    back = score_file(seeded, path, ks=[1, 5])
    comparison = compare_runs(seeded, run.run, back.run)
    assert comparison.shared == 8 and comparison.same_golden and {r.retriever for r in comparison.rows} == {"hybrid"}
    assert all(not r.fixed and not r.broken for r in comparison.rows)
    verdict = gate(seeded, baseline=run.run, candidate=back.run, metric="recall@5")
    assert verdict.passed and [c.retriever for c in verdict.checks] == ["hybrid"]


def test_a_random_trec_run_scores_as_pytrec_eval_over_every_golden_question(seeded, tmp_path):
    import pytrec_eval

    rng = random.Random(7)
    docs = [d.id for d in seeded.value("SELECT VALUE id FROM seval_article")]
    questions = [q.id for q in seeded.value("SELECT VALUE id FROM seval_question ORDER BY id")]
    lines, run = [], {}
    for qid in questions[:-2]:  # the last two are absent from the file: they score 0
        ranked = rng.sample(docs, 6)
        run[qid] = {d: float(rng.choice([1, 2, 2, 3, 5])) for d in ranked}  # ties: trec_eval's order breaks them
        lines += [f"{qid} Q0 {d} {i} {s} mine" for i, (d, s) in enumerate(run[qid].items(), start=1)]
    path = tmp_path / "mine.trec"
    path.write_text("\n".join(lines) + "\n")
    report = score_file(seeded, path, ks=[1, 3, 5], per_question=True)
    qrels = {}
    for line in export_qrels_trec(seeded):
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(float(grade))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P_1", "P_3", "P_5", "recall_3", "recall_5", "ndcg_cut_5",
                                                     "map_cut_5"}).evaluate(run)
    pairs = [("precision", "P", 1), ("precision", "P", 3), ("precision", "P", 5), ("recall", "recall", 3),
             ("recall", "recall", 5), ("ndcg", "ndcg_cut", 5), ("map", "map_cut", 5)]
    rows = {(r.question.split(":", 1)[1], r.k): r for r in report.per_question}
    for qid in questions:
        for ours, measure, k in pairs:
            expected = theirs[qid][f"{measure}_{k}"] if qid in theirs else 0.0
            assert getattr(rows[(qid, k)], ours) == pytest.approx(expected, abs=TOLERANCE), (qid, ours, k)
    assert report.questions == len(questions) and report.params["supplied"]["absent"] == {"mine": 2}


def twin_articles(db) -> None:
    """Two articles with the same text and vector (every retriever scores them alike; the harness ranks a tie by id,
    a_twin first), and a question whose one label is a_twin: trec_eval, which breaks a tie by docid descending,
    would put z_twin first."""
    from surreal_eval import Article
    from surreal_eval.load.bulk import load_corpus

    load_corpus(db, [Article(id=f"{c}_twin", title="Zebra", content="zebra quokka axolotl", embedding=[0.0, 0.0, 0.0, 1.0])
                     for c in "az"])
    db.query("CREATE seval_question:twins CONTENT { text: 'zebra quokka axolotl', embedding: [0.0, 0.0, 0.0, 1.0], "
             "relevant: [seval_article:a_twin] }")


@pytest.mark.parametrize("scores", ["raw", "rank"])
def test_an_exported_run_with_tied_scores_scores_under_trec_eval_as_the_run_did(seeded, scores):
    """Issue 26, 6: every question's every metric of the exported file under pytrec_eval (trec_eval's tie rule)
    equals the run's own, raw scores too."""
    import pytrec_eval

    from surreal_eval.runs.export import trec_run_file

    twin_articles(seeded)
    run = evaluate(seeded, ks=[1, 3, 5], per_question=True)
    exported = trec_run_file(seeded, run.run, scores=scores)
    qrels: dict[str, dict[str, int]] = {}
    for line in export_qrels_trec(seeded, run=run.run):
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(float(grade))
    files: dict[str, dict[str, dict[str, float]]] = {}
    stored = {(r["retriever"], r["question"].id): dict(zip((d.id for d in r["ranked"]), r["scores"], strict=True))
              for r in seeded.value("RETURN fn::seval::run_rankings(type::record($run), NONE)", {"run": run.run})}
    for line in exported.lines:
        qid, _, doc, _, score, tag = line.split()
        files.setdefault(tag, {}).setdefault(qid, {})[doc] = float(score)
        if scores == "raw":  # the retriever's own score, or one a 32-bit float's step or two below it
            assert float(score) == pytest.approx(stored[(tag, qid)][doc], rel=1e-6, abs=1e-30)
    pairs = [("precision", "P"), ("recall", "recall"), ("ndcg", "ndcg_cut"), ("map", "map_cut")]
    measures = {f"{m}_{k}" for _, m in pairs for k in (1, 3, 5)} | {"recip_rank"}
    checked = 0
    for retriever in run.retrievers:
        theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(files[retriever])
        for row in (r for r in run.per_question if r.retriever == retriever):
            got = theirs.get(row.question.split(":", 1)[1], {})  # a question the retriever ranked nothing for: 0
            for ours, measure in pairs:
                assert getattr(row, ours) == pytest.approx(got.get(f"{measure}_{row.k}", 0.0), abs=TOLERANCE), (
                    retriever, row.question, ours, row.k)
                checked += 1
            if row.k == 5:  # recip_rank has no cutoff: the ranking holds the top 5
                assert row.mrr == pytest.approx(got.get("recip_rank", 0.0), abs=TOLERANCE), (retriever, row.question)
    assert checked == len(run.retrievers) * 9 * 3 * len(pairs)
    # the twins tie in every retriever: each raw ranking of twins_question wrote z_twin a step below a_twin
    assert exported.lowered >= (len(run.retrievers) if scores == "raw" else 0) and (scores == "raw") == (exported.lowered > 0)


def test_export_run_says_how_many_raw_scores_it_lowered(tmp_path):
    from surreal_eval import HarnessConfig, Settings, connect, import_harness

    store = tmp_path / "store"
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        import_harness(db, HarnessConfig(dimension=4))
        seed_own(db)
        twin_articles(db)
        evaluate(db, ks=[3], retrievers=["bm25", "vector"])
        from surreal_eval.runs.export import trec_run_file

        lowered = trec_run_file(db, "latest", scores="raw").lowered
    assert lowered >= 2  # z_twin, once per retriever
    raw = runner.invoke(app, ["--url", f"surrealkv://{store}", "runs", "export", "latest", "--scores", "raw", "-o", str(tmp_path / "raw.trec")])
    assert raw.exit_code == 0, raw.output
    assert f"lowered {lowered} tied raw scores to the next 32-bit float below the score above it" in raw.stderr
    assert "breaks a tie by docid descending" in raw.stderr
    rank = runner.invoke(app, ["--url", f"surrealkv://{store}", "runs", "export", "latest", "-o", str(tmp_path / "rank.trec")])
    assert rank.exit_code == 0 and "lowered" not in rank.stderr


def test_raw_scores_are_lowered_only_where_trec_eval_would_rank_otherwise():
    """trec_eval reads a score as a 32-bit float, sorts by it descending, then by docid descending."""
    import numpy as np

    from surreal_eval.runs.export import trec_scores

    def below(x):
        return float(np.nextafter(np.float32(x), np.float32(-np.inf)))

    assert trec_scores(["b", "a"], [2.0, 2.0]) == [None, None]  # docid descending: trec_eval's order already
    assert trec_scores(["a", "b"], [2.0, 2.0]) == [None, below(2.0)]
    assert trec_scores(["a", "b", "c", "x"], [2.0, 2.0, 2.0, 1.0]) == [None, below(2.0), below(below(2.0)), None]
    # a score tied with one just lowered is lowered below it in turn when its docid would put it first
    assert trec_scores(["a", "b", "z"], [2.0, 2.0, below(2.0)]) == [None, below(2.0), below(below(2.0))]
    assert trec_scores(["a", "b", "0"], [2.0, 2.0, below(2.0)]) == [None, below(2.0), None]  # "0" < "b": after it already
    # two doubles one float apart are a tie to trec_eval
    assert trec_scores(["a", "b"], [1.0, 1.0 - 1e-12]) == [None, below(1.0)]
    assert trec_scores(["b", "a"], [1.0, 1.0 - 1e-12]) == [None, None]
    assert trec_scores(["a", "b"], [1.0, 3.0]) == [None, below(1.0)]  # never above the score before it


def test_jsonl_rankings_with_ids_or_with_scores_are_scored_alike(seeded, tmp_path):
    qs = seeded.value("SELECT id, relevant FROM seval_question ORDER BY id")
    bare = [{"question": q["id"].id, "ranked": [r.id for r in q["relevant"]]} for q in qs]
    scored = [{"question": f"seval_question:{q['id'].id}", "retriever": "scored",
               "ranked": [{"id": f"seval_article:{r.id}", "score": 10 - i} for i, r in enumerate(q["relevant"])]} for q in qs]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in bare + scored) + "\n")
    report = score_file(seeded, path, ks=[1, 5], name="bare")
    assert report.retrievers == ["bare", "scored"] and report.params["supplied"]["absent"] == {"bare": 0, "scored": 0}
    got = means(report)
    assert got[("bare", 5)] == pytest.approx(got[("scored", 5)], abs=TOLERANCE)
    assert got[("bare", 5)]["recall"] == 1.0 and got[("bare", 5)]["ndcg"] == pytest.approx(1.0)


REFUSED = [
    ("money_back Q0 refund_request 1 2.0\n", "run.trec", "run.trec:1: a TREC run line has 6 fields"),
    ("money_back Q0 refund_request 1 high mine\n", "run.trec", "run.trec:1: score 'high' is not a finite number"),
    ("money_back Q0 refund_request 1 nan mine\n", "run.trec", "run.trec:1: score 'nan' is not a finite number"),
    ("money_back Q0 refund_request x 1 mine\n", "run.trec", "run.trec:1: rank 'x' is not a whole number"),
    ("money_back Q0 refund_request 1 2 mine\nmoney_back Q0 refund_request 2 1 mine\n", "run.trec",
     "run.trec:2: document 'refund_request' is ranked twice"),
    ("money_back Q0 refund_request 1 2 mine\nnope Q0 refund_request 1 2 mine\n", "run.trec",
     "run.trec:2: question 'nope' is not in the golden set"),
    ("money_back Q0 refund_request 1 2 mine\nmoney_back Q0 gone 2 1 mine\n", "run.trec",
     "run.trec:2: document 'gone' is not a record of seval_article"),
    ("money_back Q0 refund_request 1 2 a\nmoney_back Q0 refund_request 1 2 b\n", "run.trec",
     "--retriever names the rankings of a file with one tag, and this file has 2: a, b"),
    ("money_back Q0 refund_request 1 2 bad$tag\n", "run.trec", "retriever name 'bad$tag'"),
    ("\n\n", "run.trec", "run.trec: the run file is empty"),
    ("money_back Q0 refund_request 1 2 floor_sweep\n", "run.trec", "run.trec:1: retriever name 'floor_sweep' is the name of a floor sweep"),
    ('{"question": "money_back", "ranked": "refund_request"}\n', "r.jsonl", "r.jsonl:1: ranked must be a list"),
    ('{"question": "money_back", "ranked": [{"id": "refund_request"}]}\n', "r.jsonl", "r.jsonl:1: ranked[0] must be {id, score}"),
    ('{"question": "money_back", "ranked": [{"id": "a", "score": 1}, {"id": "b", "score": 2}]}\n', "r.jsonl",
     "r.jsonl:1: the scores of question 'money_back' must not increase"),
    ('{"question": "money_back", "ranked": []}\n{"question": "money_back", "ranked": []}\n', "r.jsonl",
     "r.jsonl:2: question 'money_back' is ranked twice"),
    ('{"question": "money_back", "ranked": [], "rank": 1}\n', "r.jsonl", "r.jsonl:1: unknown field 'rank'"),
    ('{"question": "money_back", "ranked": ["refund_request", "nowhere"]}\n', "r.jsonl",
     "r.jsonl:1: document 'nowhere' is not a record of seval_article"),
    ('{"question": "money_back", "ranked": [\n', "r.jsonl", "r.jsonl:1: not valid JSON"),
]


@pytest.mark.parametrize(("text", "name", "message"), REFUSED, ids=[m for _, _, m in REFUSED])
def test_a_bad_run_file_is_refused_naming_where_and_nothing_changes(seeded, tmp_path, text, name, message):
    path = tmp_path / name
    path.write_text(text)
    before = snapshot(seeded)
    with pytest.raises(InputError) as error:
        score_file(seeded, path, ks=[1, 3], name="renamed" if "--retriever" in message else None)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert snapshot(seeded) == before


def test_scoring_on_a_table_that_is_no_corpus_is_refused(seeded, tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("money_back Q0 refund_request 1 2 mine\n")
    before = snapshot(seeded)
    with pytest.raises(InputError, match="--corpus 'question' is not a corpus table"):
        score_file(seeded, path, ks=[1], corpus="question")
    assert snapshot(seeded) == before


def test_score_command_records_a_run_and_refuses_with_exit_2(tmp_path):
    store = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*store, "init", "--demo"]).exit_code == 0
    good, bad = tmp_path / "good.trec", tmp_path / "bad.trec"
    good.write_text("money_back Q0 refund_request 1 2 prod\n")
    bad.write_text("money_back Q0 refund_request 1 2 prod\nmoney_back Q0 ghost 2 1 prod\n")
    refused = runner.invoke(app, [*store, "score", str(bad), "--tag", "bad"])
    assert refused.exit_code == 2
    assert refused.stderr.strip().splitlines() == [f"error: {bad}:2: document 'ghost' is not a record of article; nothing was recorded"]
    done = runner.invoke(app, [*store, "score", str(good), "--note", "prod log", "--k", "1", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["retrievers"] == ["prod"] and data["label"] == "prod log" and data["params"]["supplied"]["absent"] == {"prod": 7}
    listed = json.loads(runner.invoke(app, [*store, "runs", "list", "--json"]).stdout)
    assert [r["label"] for r in listed] == ["prod log"]
    shown = runner.invoke(app, [*store, "score", str(good), "--k", "1", "--no-record"])  # scored, printed, not recorded
    assert shown.exit_code == 0, shown.output
    header = shown.stdout.splitlines()[0]
    assert header == "run not recorded (--no-record) (scored from good.trec): 8 questions, corpus article, depth 1"  # no RRF, no floor
    assert [r["label"] for r in json.loads(runner.invoke(app, [*store, "runs", "list", "--json"]).stdout)] == ["prod log"]
    evaluated = runner.invoke(app, [*store, "evaluate", "--k", "1", "--no-record"])  # the database's retrievers fuse: both shown
    assert evaluated.stdout.splitlines()[0].endswith("depth 1, RRF constant 60, floor 3.0")


def test_an_evaluator_scores_a_file_but_cannot_register_an_endpoint(tmp_path):
    from surreal_eval import HarnessConfig, Settings, connect, import_harness
    from surreal_eval.errors import PermissionDenied
    from surreal_eval.runs.endpoints import Endpoint, add_endpoint
    from surreal_eval.store.access import grant_evaluator

    url = f"surrealkv://{tmp_path / 'store'}"
    owner = connect(Settings(url=url))
    import_harness(owner, HarnessConfig(dimension=4))
    seed_own(owner)
    grant_evaluator(owner, "ci", "correct horse battery")
    owner.close()
    db = connect(Settings(url=url, access="seval_evaluator", user="ci", password="correct horse battery"))
    try:
        path = tmp_path / "run.trec"
        path.write_text("money_back Q0 refund_request 1 2 prod\n")
        assert score_file(db, path, ks=[1]).retrievers == ["prod"]
        with pytest.raises(PermissionDenied, match="only an owner"):
            add_endpoint(db, Endpoint(name="docs", url="http://h/s?q={text}", ids="hits[*].id"))
        assert db.value("SELECT * FROM seval_endpoint") == []
    finally:
        db.close()


def test_trec_eval_files_with_comments_and_fields_after_the_tag_score_as_without_them(seeded, tmp_path):
    """Issue 26, 9: trec_eval 10 reads `#` comment lines in runs and qrels and ignores run fields after the tag."""
    from surreal_eval.load.collections import read_qrels

    run = evaluate(seeded, ks=[1, 3])
    lines = list(export_run_trec(seeded, run.run))
    plain, noted = tmp_path / "plain.trec", tmp_path / "noted.trec"
    plain.write_text("\n".join(lines) + "\n")
    noted.write_text("# made by a test\n" + "\n".join(f"{line} extra 0.5" for line in lines) + "\n#the end\n")
    assert means(score_file(seeded, noted, ks=[1, 3])) == means(score_file(seeded, plain, ks=[1, 3]))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# qid iter docid grade\nq1 0 d1 1\n  # indented\nq1 0 d2 0\n")
    assert read_qrels(qrels).judgments == {"q1": {"d1": 1.0}}
    beir = tmp_path / "test.tsv"
    beir.write_text("q1 d1 1\n")
    with pytest.raises(InputError, match="found 3; three columns are BEIR's qrels"):
        read_qrels(beir)


def test_score_takes_a_relevance_level_as_evaluate_does(seeded, tmp_path):
    run = evaluate(seeded, ks=[3], params={"relevance_level": 2})
    path = tmp_path / "run.trec"
    path.write_text("\n".join(export_run_trec(seeded, run.run)) + "\n")
    back = score_file(seeded, path, ks=[3], relevance_level=2)
    assert back.params["relevance_level"] == 2
    assert means(back)[("hybrid", 3)] == pytest.approx(means(run)[("hybrid", 3)], abs=TOLERANCE)
    assert "--relevance-level" in runner.invoke(app, ["score", "--help"]).output


def test_a_trec_run_file_is_ordered_as_trec_eval_reads_it_scores_as_32_bit_floats(tmp_path):
    """Scores that differ only past a C float's precision tie in trec_eval, which then ranks the higher docid
    first: `score` reads the file in the same order (hand-worked: 0.1000000002 and 0.1000000001 are one float)."""
    from surreal_eval.load.run_files import read_run_file

    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 0.1000000002 mine\nq1 Q0 b 2 0.1000000001 mine\nq1 Q0 c 3 0.5 mine\n", encoding="utf-8")
    _, rankings = read_run_file(run)
    assert rankings[0].ids == ["c", "b", "a"]
