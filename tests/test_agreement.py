"""Agreement you can read (issue 34): kappa on grades with intervals, never 0 for a one-sided sample; pairs the model
judged drawn for a person to label, seeded and stratified; Kendall's tau between the retrievers' orderings under human
and human+model judgments, with a warning when the first one changes. The model is the tests' real local chat server."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.golden.agreement import calibration_draw, label_grade, measure_agreement, retriever_orderings, stratified
from surreal_eval.golden.chat import ChatCache, chat_from_spec
from surreal_eval.golden.judge import judge_run
from surreal_eval.golden.labels import add_label
from surreal_eval.kappa import agreement, graded_agreement, ordering_agreement
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.store.connection import record_str

from .chat_server import chat_server
from .conftest import demo_store_with_run

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("chat_env")

#: how the server grades, by the document's title (the first rule that matches): every other pair 2
RULES = {"Title: Track your order": "grade 3", "Title: Request a refund": "grade 1", "Title: Locked out": "grade 0", "Question: ": "grade 2"}
#: only "Track your order" answers anything; every other pair 0
TRACK_ONLY = {"Title: Track your order": "grade 3", "Question: ": "grade 0"}


@pytest.fixture
def server():
    with chat_server(dimension=4) as running:
        running.rules = dict(RULES)
        yield running


def model(server, tmp_path):
    return chat_from_spec(f"openai:judge@{server.url}", cache=ChatCache(tmp_path / "chat"), backoff=0)


# kappa ---------------------------------------------------------------------------------------------------------------


def test_graded_kappa_and_its_quadratic_weighting_by_hand_and_against_sklearn():
    # rows the human's grade 0, 1, 2; columns the model's: [[1, 1, 0], [0, 2, 0], [1, 0, 1]], n = 6
    # p_o = 4/6, p_e = (2*2 + 2*3 + 2*1)/36 = 1/3, kappa = (2/3 - 1/3)/(2/3) = 1/2
    # weighted: observed sum(w O)/n = (1*1 + 4*1)/6 = 5/6; chance sum r_i c_j w_ij = 1/3 (7/6 + 1/2 + 11/6) = 7/6; 1 - 5/7 = 2/7
    human, model_ = [0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0]
    found = graded_agreement(human, model_)
    assert (found.n, found.grades, found.confusion) == (6, [0.0, 1.0, 2.0], [[1, 1, 0], [0, 2, 0], [1, 0, 1]])
    assert found.observed == pytest.approx(4 / 6)
    assert found.kappa.value == pytest.approx(1 / 2) and found.weighted_kappa.value == pytest.approx(2 / 7)
    sklearn = pytest.importorskip("sklearn.metrics")
    assert found.kappa.value == pytest.approx(sklearn.cohen_kappa_score(human, model_))
    assert found.weighted_kappa.value == pytest.approx(sklearn.cohen_kappa_score(human, model_, weights="quadratic"))
    for kappa in (found.kappa, found.weighted_kappa):
        assert kappa.low <= kappa.value <= kappa.high and kappa.resamples == 10_000
        assert kappa.undefined > 0  # 6 pairs: some resamples draw one grade on a side, left out and counted


def test_kappa_intervals_are_seeded_and_narrow_with_more_pairs():
    human, model_ = [0, 0, 1, 1, 2, 2] * 20, [0, 1, 1, 1, 2, 0] * 20
    a, b = graded_agreement(human, model_, seed=3), graded_agreement(human, model_, seed=3)
    assert a == b and a.kappa.value == pytest.approx(1 / 2) and a.kappa.undefined == 0
    small = graded_agreement(human[:6], model_[:6], seed=3)
    assert a.kappa.high - a.kappa.low < small.kappa.high - small.kappa.low


def test_a_one_sided_sample_is_not_measurable_never_zero():
    # the humans judged all 50 relevant; the model agrees on 49: the formula gives 0 whatever the model says
    humans, model_ = [True] * 50, [True] * 49 + [False]
    found = agreement(humans, model_, names=("the humans", "the model"))
    assert (found.both, found.first_only, found.second_only, found.neither) == (49, 1, 0, 0)
    assert found.kappa.value is None and found.kappa.reason.startswith("the humans put all 50 pairs in one class (relevant)")
    assert "not measurable" in found.kappa.text() and "0.000" not in found.kappa.text()
    graded = graded_agreement([1] * 10, [1] * 8 + [0, 2], names=("the humans", "the model"))
    assert graded.kappa.value is None and graded.weighted_kappa.value is None and "grade 1" in graded.kappa.reason
    assert graded.confusion == [[0, 0, 0], [1, 8, 1], [0, 0, 0]]  # the counts are still given
    other = graded_agreement([0, 1, 2, 1], [2, 2, 2, 2], names=("the humans", "the model"))
    assert other.kappa.value is None and other.kappa.reason.startswith("the model put all 4 pairs")


# Kendall's tau -------------------------------------------------------------------------------------------------------


def test_kendall_tau_on_a_hand_worked_ordering_and_the_first_that_changes():
    # means: human a 0.5, b 0.25, c 1.0 (c > a > b); human+model a 1.0, b 0.25, c 0.75 (a > c > b)
    # pairs (a,b) concordant, (a,c) discordant, (b,c) concordant: tau = (2 - 1)/3 = 1/3; c first, then a first
    human = {"a": [1.0, 0.0], "b": [0.5, 0.0], "c": [1.0, 1.0]}
    mixed = {"a": [1.0, 1.0], "b": [0.5, 0.0], "c": [1.0, 0.5]}
    found = ordering_agreement("recall@10", human, mixed)
    assert found.first == {"a": 0.5, "b": 0.25, "c": 1.0} and found.second == {"a": 1.0, "b": 0.25, "c": 0.75}
    assert found.tau.value == pytest.approx(1 / 3)
    from scipy.stats import kendalltau

    assert found.tau.value == pytest.approx(kendalltau([0.5, 0.25, 1.0], [1.0, 0.25, 0.75]).statistic)
    assert (found.top_first, found.top_second, found.top_changes) == (["c"], ["a"], True)
    assert -1 <= found.tau.low <= found.tau.high <= 1
    same = ordering_agreement("recall@10", human, human)
    assert same.tau.value == pytest.approx(1.0) and not same.top_changes
    one = ordering_agreement("recall@10", {"a": [1.0]}, {"a": [0.0]})
    assert one.tau.value is None and "one system" in one.tau.reason
    tied = ordering_agreement("recall@10", human, {"a": [1.0, 0.0], "b": [1.0, 0.0], "c": [0.0, 1.0]})
    assert tied.tau.value is None and "tie every system" in tied.tau.reason


# calibration ---------------------------------------------------------------------------------------------------------


def pairs_by_grade(counts: dict[int, int]) -> list[dict]:
    return [{"question": f"q{g}_{i}", "doc": "d", "grade": g} for g, n in counts.items() for i in range(n)]


def test_calibration_draws_are_seeded_and_stratified_by_the_models_grade():
    pairs = pairs_by_grade({0: 10, 1: 2, 2: 30, 3: 10})
    eight = stratified(pairs, 8, seed=5)
    assert Counter(p["grade"] for p in eight) == {0: 2, 1: 2, 2: 2, 3: 2}  # an equal share of each grade
    # grade 1 has 2: the other 18 spread over the grades with more
    assert Counter(p["grade"] for p in stratified(pairs, 20, seed=5)) == {0: 6, 1: 2, 2: 6, 3: 6}
    assert Counter(p["grade"] for p in stratified(pairs, 40, seed=5)) == {0: 10, 1: 2, 2: 18, 3: 10}
    assert eight == stratified(list(reversed(pairs)), 8, seed=5)  # seeded, whatever order the pairs come in
    assert {p["question"] for p in eight} != {p["question"] for p in stratified(pairs, 8, seed=6)}
    assert len(stratified(pairs, 100)) == 52 and stratified(pairs, 0) == []


def test_calibrate_draws_pairs_the_model_judged_in_the_top_k_that_no_human_has(seeded, server, tmp_path):
    run = evaluate(seeded, ks=[3], retrievers=["bm25", "vector"]).run
    report = judge_run(seeded, model(server, tmp_path), run=run, k=3, agreement_pairs=0, calibrate=8, seed=1)
    stored = {(record_str(r["question"]), record_str(r["doc"])): r["grade"] for r in seeded.value("SELECT * FROM seval_model_judgment")}
    drawn = report.calibration
    assert len(drawn) == 8 and len({(p.question, p.doc) for p in drawn}) == 8
    assert all(stored[(p.question, p.doc)] == p.model_grade for p in drawn)
    # stratified: every grade the model gave is drawn, the strata with pairs to spare differing by one at most
    population = Counter(stored.values())
    taken = Counter(p.model_grade for p in drawn)
    assert set(taken) == set(population)
    spare = [taken[g] for g in population if population[g] > taken[g]]
    exhausted = [taken[g] for g in population if population[g] == taken[g]]
    assert spare and max(spare) - min(spare) <= 1 and all(n <= min(spare) for n in exhausted)
    assert all(p.text and p.passage for p in drawn)
    # a human judgment of a drawn pair takes it out of the next draw; the same seed draws the same pairs
    assert calibration_draw(seeded, run=run, count=8, seed=1) == drawn
    add_label(seeded, drawn[0].question, drawn[0].doc, relevant=False)
    again = calibration_draw(seeded, run=run, count=100, seed=1)
    assert (drawn[0].question, drawn[0].doc) not in {(p.question, p.doc) for p in again} and len(again) == len(stored) - 1


# the loop: judge, calibrate, label, agreement ------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    return demo_store_with_run(tmp_path / "store", ["bm25", "vector"])


def test_the_calibration_loop_a_person_labels_the_draw_and_agreement_reports_kappa_with_intervals(store, server, tmp_path):
    url, run = store
    path = tmp_path / "calibrate.jsonl"
    judged = runner.invoke(app, ["--url", url, "golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}",
                                 "--agreement", "0", "--calibrate", "6", "--calibrate-file", str(path)])
    assert judged.exit_code == 0, judged.output
    assert f"wrote them to {path}" in judged.stdout
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 6 and all(r["grade"] is None and "model_grade" not in r for r in rows)  # the person is not led
    with connect(Settings(url=url)) as db:
        grades = {(record_str(r["question"]), record_str(r["doc"])): r["grade"] for r in db.value("SELECT * FROM seval_model_judgment")}
    # the person agrees with the model's label grade on the first four, and says 2 where it said not relevant on the last two
    model_side = [label_grade(grades[(r["question"], r["doc"])]) for r in rows]
    human_side = model_side[:4] + [2.0 if g == 0 else 0.0 for g in model_side[4:]]
    for row, grade in zip(rows, human_side):
        row["grade"] = grade
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    labelled = runner.invoke(app, ["--url", url, "golden", "label", "--from-file", str(path), "--by", "ana"])
    assert labelled.exit_code == 0, labelled.output
    measured = runner.invoke(app, ["--url", url, "golden", "agreement", "--json"])
    assert measured.exit_code == 0, measured.output
    report = json.loads(measured.stdout)
    found = report["agreement"]
    assert found["n"] == 6 and sum(map(sum, found["confusion"])) == 6
    expected = graded_agreement(human_side, model_side)
    assert found["confusion"] == expected.confusion
    for key in ("kappa", "weighted_kappa"):
        if expected.model_dump()[key]["value"] is None:
            assert found[key]["value"] is None and found[key]["reason"] and found[key]["advice"]
        else:  # graded_agreement is checked by hand and against sklearn above (sklearn is not a test dependency: CI skips that)
            assert found[key]["value"] == pytest.approx(expected.model_dump()[key]["value"])
            assert found[key]["low"] <= found[key]["value"] <= found[key]["high"]
    assert {tuple(p[:2]) for p in report["pairs"]} == {(r["question"], r["doc"]) for r in rows}
    assert report["orderings"]["retrievers"] == ["bm25", "vector"] and report["orderings"]["metrics"]
    text = runner.invoke(app, ["--url", url, "golden", "agreement"])
    assert text.exit_code == 0 and "Cohen's kappa on grades" in text.stdout and "quadratic-weighted kappa" in text.stdout
    assert "Kendall's tau" in text.stdout


def test_agreement_with_no_pair_labelled_by_both_says_what_to_label(store, server, tmp_path):
    url, run = store
    with connect(Settings(url=url)) as db:
        judge_run(db, model(server, tmp_path), run=run, k=3, agreement_pairs=0)
        report = measure_agreement(db, run=run)
    assert report.agreement.n == 0 and report.model_judgments > 0
    assert report.agreement.kappa.value is None and "golden judge --calibrate" in report.agreement.kappa.advice
    text = runner.invoke(app, ["--url", url, "golden", "agreement"])
    assert text.exit_code == 0 and "Cohen's kappa on grades: not measurable: no pair has a grade from both" in text.stdout


def test_the_orderings_are_those_of_runs_on_human_and_on_human_plus_model_judgments_and_warn_when_the_first_changes(seeded, server, tmp_path):
    server.rules = dict(TRACK_ONLY)
    human = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "vector"])
    report = judge_run(seeded, model(server, tmp_path), run=human.run, k=3, agreement_pairs=0)
    mixed = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "vector"], params={"judgments": "human+model"})
    at_one = retriever_orderings(seeded, run=human.run, k=1)
    # each side's means are those of a run on those judgments: the evaluation itself is the oracle
    for orderings, k in ((report.orderings, 3), (at_one, 1)):
        assert orderings.questions == 8 and orderings.retrievers == ["bm25", "vector"]
        for m in orderings.metrics:
            name = m.metric.split("@")[0]
            for retriever in ("bm25", "vector"):
                (h,) = [r for r in human.results if r.retriever == retriever and r.k == k]
                (x,) = [r for r in mixed.results if r.retriever == retriever and r.k == k]
                assert m.first[retriever] == pytest.approx(h.score(name)), (m.metric, retriever)
                assert m.second[retriever] == pytest.approx(x.score(name)), (m.metric, retriever)
    # by hand at k = 1: bm25 puts track_order first for money_back (judged 3 now): precision@1 6/8 -> 7/8; vector's one
    # unjudged first document (contact_support for rate_limit) is judged 0: 7/8 stays. vector first, then a tie.
    (p1,) = [m for m in at_one.metrics if m.metric == "precision@1"]
    assert (p1.first, p1.second) == ({"bm25": 6 / 8, "vector": 7 / 8}, {"bm25": 7 / 8, "vector": 7 / 8})
    assert p1.tau.value is None and "human+model tie every system" in p1.tau.reason
    assert ("precision@1: the model's judgments change which retriever ranks first: vector on human judgments, "
            "bm25, vector (tied) on human+model") in at_one.warnings
    assert all(w.split(":")[0] in {m.metric for m in at_one.metrics if m.top_changes} for w in at_one.warnings)
    # at k = 3 vector stays first on every metric: tau 1 (two retrievers, same order), no warning
    assert report.warnings == [] and all(m.tau.value == pytest.approx(1.0) for m in report.orderings.metrics)
    assert "judged" not in {m.metric.split("@")[0] for m in report.orderings.metrics}


def test_the_cli_prints_tau_and_the_warning_and_every_figure_is_in_the_json(store, server):
    url, run = store
    server.rules = dict(TRACK_ONLY)
    judged = runner.invoke(app, ["--url", url, "golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}",
                                 "--agreement", "4", "--json"])
    assert judged.exit_code == 0, judged.output
    report = json.loads(judged.stdout)
    assert report["agreement"]["kappa"]["value"] is None and report["agreement"]["kappa"]["reason"]  # null and why, not 0
    assert report["orderings"]["metrics"][0]["tau"]["value"] == pytest.approx(1.0)
    measured = runner.invoke(app, ["--url", url, "golden", "agreement", run, "--k", "1"])
    assert measured.exit_code == 0, measured.output
    assert "precision@1: Kendall's tau not measurable: human+model tie every system (0.875)" in measured.stdout
    assert "warning: precision@1: the model's judgments change which retriever ranks first" in measured.stderr
    as_json = json.loads(runner.invoke(app, ["--url", url, "golden", "agreement", run, "--k", "1", "--json"]).stdout)
    assert any("precision@1" in w for w in as_json["warnings"])
    (p1,) = [m for m in as_json["orderings"]["metrics"] if m["metric"] == "precision@1"]
    assert p1["tau"]["value"] is None and p1["top_changes"] and p1["second"] == {"bm25": 0.875, "vector": 0.875}
    bad = runner.invoke(app, ["--url", url, "golden", "agreement", run, "--k", "5"])
    assert bad.exit_code == 2 and "not 5" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_calibrate_file_refusals_ask_nothing(store, server, tmp_path):
    url, run = store
    taken = tmp_path / "taken.jsonl"
    taken.write_text("")
    for args, says in ((["--calibrate-file", str(taken), "--calibrate", "3"], "exists"),
                       (["--calibrate-file", str(tmp_path / "new.jsonl")], "--calibrate-file goes with --calibrate N")):
        result = runner.invoke(app, ["--url", url, "golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}", *args])
        assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert server.requests == 0
