"""Holes a model judges (`golden judge`), against a real local chat server (tests/chat_server.py): model
judgments stored with provenance and kept apart from the human ones, a run on human+model judgments that
differs and says so, the agreement with the humans, all or nothing, the evaluator refused."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.errors import EndpointFailed, InputError, NotFound, PermissionDenied
from surreal_eval.kappa import agreement
from surreal_eval.golden.chat import ChatCache, chat_from_spec
from surreal_eval.golden.labels import add_label
from surreal_eval.present.cli import app
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.golden.judge import agreement_sample, default_judge_prompt, judge_run
from surreal_eval.store.access import grant_evaluator
from surreal_eval.store.connection import record_str, to_record

from .chat_server import chat_server
from .conftest import as_evaluator, assert_cli_refuses_the_evaluator, demo_store_with_run, snapshot
from .docs_pages import blocks

runner = CliRunner()
#: how the server grades a document, by its title; every other judging prompt: grade 2
RULES = {"Title: Track your order": "grade 3", "Title: Request a refund": "grade 1", "Title: Contact support": "unsure",
         "Title: Locked out": "grade 0", "Question: ": "grade 2"}


pytestmark = pytest.mark.usefixtures("chat_env")  # no chat model or key from the environment, a cache of its own


@pytest.fixture
def server():
    with chat_server(dimension=4) as running:
        running.rules = dict(RULES)
        yield running


def model(server, tmp_path, **options):
    return chat_from_spec(f"openai:judge@{server.url}", cache=ChatCache(tmp_path / "chat"), backoff=0, **options)


def expected_holes(db, run, k):
    """The unjudged pairs of `run`'s top k, read independently: its rankings less the labels it scored and the golden set's judgments."""
    rankings = db.value("SELECT question, ranked, type::record('seval_run_label', [run, question]).relevant AS relevant FROM seval_ranking "
                        "WHERE run = $r AND retriever != 'floor_sweep'", {"r": to_record(run, "seval_run")})
    rows = {record_str(q["id"]): q for q in db.value("SELECT id, relevant, nonrelevant FROM seval_question")}
    holes = set()
    for r in rankings:
        q = record_str(r["question"])
        judged = {record_str(d) for d in [*r["relevant"], *rows[q]["relevant"], *(rows[q]["nonrelevant"] or [])]}
        holes |= {(q, record_str(d)) for d in r["ranked"][:k] if record_str(d) not in judged}
    return holes


TITLE_GRADE = {"seval_article:track_order": 3, "seval_article:refund_request": 1, "seval_article:account_locked": 0,
               "seval_article:contact_support": None}


def human_tables(db):
    return {t: db.value("SELECT * FROM type::table($t) ORDER BY id", {"t": t})
            for t in ("seval_question", "seval_label", "seval_golden_change", "seval_golden")}


def test_model_judgments_are_stored_with_provenance_apart_from_the_human_labels_and_unparsable_ones_counted(seeded, server, tmp_path):
    run = evaluate(seeded, ks=[1, 3], retrievers=["bm25", "vector"]).run
    humans = human_tables(seeded)
    chat = model(server, tmp_path)
    report = judge_run(seeded, chat, run=run, k=3, agreement_pairs=0, by="ana")
    holes = expected_holes(seeded, run, 3)
    assert report.holes == len(holes) > 0 and report.requests == len(holes)
    unsure = {h for h in holes if h[1] == "seval_article:contact_support"}
    assert unsure and sorted(map(tuple, report.unparsable)) == sorted(unsure)
    stored = seeded.value("SELECT * FROM seval_model_judgment")
    assert {(record_str(r["question"]), record_str(r["doc"])) for r in stored} == holes - unsure
    assert all(r["grade"] == TITLE_GRADE.get(record_str(r["doc"]), 2) for r in stored)
    assert report.stored == len(stored) and sum(report.grades.values()) == len(stored)
    first = stored[0]
    assert (first["model"], first["prompt"], record_str(first["run"]), first["k"], first["by"], first["golden"]) == (
        chat.name, report.prompt, run, 3, "ana", "seval_question")
    assert first["digest"] and len(report.prompt) == 64
    # never among the human labels: the golden set, its provenance and history as they were
    assert human_tables(seeded) == humans
    # a second judge of the same run asks only about the pairs still unjudged, from the cache
    again = judge_run(seeded, chat, run=run, k=3, agreement_pairs=0)
    assert (again.holes, again.stored, again.requests) == (len(unsure), 0, 0)
    assert server.bad_requests == []


def test_a_run_on_human_and_model_judgments_differs_from_one_on_human_only_and_says_so(seeded, server, tmp_path):
    human = evaluate(seeded, ks=[1, 3], retrievers=["bm25"])
    judge_run(seeded, model(server, tmp_path), run=human.run, k=3, agreement_pairs=0)
    again = evaluate(seeded, ks=[1, 3], retrievers=["bm25"])
    mixed = evaluate(seeded, ks=[1, 3], retrievers=["bm25"], params={"judgments": "human+model"})
    # the default reads the human judgments only: the same fingerprint as before the model judged
    assert (again.params["judgments"], again.golden["fingerprint"]) == ("human", human.golden["fingerprint"])
    assert mixed.params["judgments"] == "human+model" and mixed.golden["judgments"] == "human+model"
    assert mixed.golden["fingerprint"] != human.golden["fingerprint"]
    # each model grade of 2 or 3 a label of grade 1 or 2; 0 and 1 judged not relevant
    stored = seeded.value("SELECT question, doc, grade FROM seval_model_judgment")
    assert mixed.golden["model"] == len(stored)
    scored = {record_str(r["question"]): dict(zip(map(record_str, r["relevant"]), r["grades"])) for r in seeded.value(
        "SELECT question, relevant, grades FROM seval_run_label WHERE run = $r", {"r": to_record(mixed.run, "seval_run")})}
    for s in stored:
        assert scored[record_str(s["question"])].get(record_str(s["doc"])) == (s["grade"] - 1 if s["grade"] >= 2 else None)
    assert any(s["grade"] >= 2 for s in stored) and any(s["grade"] < 2 for s in stored)
    comparison = compare_runs(seeded, human.run, mixed.run)
    assert not comparison.same_golden
    assert any("A scored on human judgments, B on human+model" in w for w in comparison.warnings)
    assert any("different judgments" in w for w in comparison.warnings)
    assert any(c.field == "params.judgments" for c in comparison.changes)


def test_agreement_gives_kappa_and_the_confusion_on_a_hand_checked_sample(seeded, server, tmp_path):
    add_label(seeded, "money_back", "track_order", relevant=False)
    add_label(seeded, "where_parcel", "refund_request", relevant=False)
    run = evaluate(seeded, ks=[1], retrievers=["bm25"]).run
    report = judge_run(seeded, model(server, tmp_path), run=run, k=1, agreement_pairs=13)
    # 11 labels and 2 judged not relevant, all asked; the model: refund_request 1 and account_locked 0 (not relevant),
    # track_order 3, the others 2. Human relevant: 9 model relevant, money_back/refund_request and signin/account_locked
    # not; human not relevant: money_back/track_order model relevant, where_parcel/refund_request not.
    # p_o = 10/13, p_e = ((9+2)(9+1) + (1+1)(2+1))/13^2 = 116/169, kappa = (130 - 116)/(169 - 116) = 14/53
    a = report.agreement
    assert (a.both, a.first_only, a.second_only, a.neither) == (9, 2, 1, 1)
    assert a.kappa.value == pytest.approx(14 / 53) and a.observed == pytest.approx(10 / 13)
    assert a.kappa.low < a.kappa.value < a.kappa.high and a.kappa.resamples > 0
    assert report.agreement_asked == 13 and report.agreement_unparsable == 0
    # the agreement answers are not stored
    assert seeded.value("SELECT VALUE doc FROM seval_model_judgment WHERE question = seval_question:where_parcel "
                        "AND doc = seval_article:refund_request") == []


def test_the_agreement_sample_is_balanced_and_seeded():
    judged = [{"question": f"q{i}", "doc": "d", "grade": 1} for i in range(11)]
    judged += [{"question": f"n{i}", "doc": "d", "grade": 0} for i in range(2)]
    four = agreement_sample(judged, 4, seed=3)
    assert sorted(j["grade"] for j in four) == [0, 0, 1, 1]
    assert four == agreement_sample(list(reversed(judged)), 4, seed=3)
    assert sorted(j["grade"] for j in agreement_sample(judged, 10)) == [0, 0] + [1] * 8
    assert len(agreement_sample(judged, 50)) == 13 and agreement_sample(judged, 0) == []


def test_kappa_by_hand_and_against_statsmodels():
    # 20 pairs: both 8, first only 2, second only 3, neither 7: p_o = 15/20, p_e = (10*11 + 10*9)/400 = 0.5, kappa 0.5
    first = [True] * 10 + [False] * 10
    second = [True] * 8 + [False] * 2 + [True] * 3 + [False] * 7
    found = agreement(first, second)
    assert (found.both, found.first_only, found.second_only, found.neither, found.pairs) == (8, 2, 3, 7, 20)
    assert found.kappa.value == pytest.approx(0.5) and found.observed == pytest.approx(0.75)
    from statsmodels.stats.inter_rater import cohens_kappa

    assert found.kappa.value == pytest.approx(cohens_kappa([[8, 2], [3, 7]]).kappa)
    same = agreement([True, True], [True, True]).kappa  # one answer to every pair: not measurable, never 0
    assert same.value is None and "one class (relevant)" in same.reason
    assert agreement([], []).pairs == 0 and agreement([], []).kappa.value is None


def test_an_endpoint_failure_leaves_every_table_as_it_was(seeded, server, tmp_path):
    run = evaluate(seeded, ks=[3], retrievers=["bm25"]).run
    server.fail_first = 1  # the first request answers 500, the others are answered (and cached)
    before = snapshot(seeded)
    with pytest.raises(EndpointFailed, match="chat endpoint .* failed"):
        judge_run(seeded, model(server, tmp_path, max_retries=0), run=run, k=3, agreement_pairs=5)
    assert snapshot(seeded) == before
    assert judge_run(seeded, model(server, tmp_path), run=run, k=3, agreement_pairs=5).stored > 0


def test_refusals_unknown_run_k_not_measured_retriever_not_in_the_run_bad_prompt(seeded, server, tmp_path):
    run = evaluate(seeded, ks=[1, 3], retrievers=["bm25"]).run
    chat = model(server, tmp_path)
    with pytest.raises(NotFound, match="no finished run"):
        judge_run(seeded, chat, run="seval_run:nope", k=3)
    with pytest.raises(InputError, match="measured k = 1, 3, not 5"):
        judge_run(seeded, chat, run=run, k=5)
    with pytest.raises(InputError, match="no retriever vector"):
        judge_run(seeded, chat, run=run, k=3, retrievers=["vector"])
    with pytest.raises(InputError, match=r"must hold \{question\}"):
        judge_run(seeded, chat, run=run, k=3, prompt="Grade {passage}")
    assert server.requests == 0
    assert "{question}" in default_judge_prompt() and "{passage}" in default_judge_prompt()


@pytest.fixture
def store(tmp_path):
    def before(owner):
        add_label(owner, "money_back", "track_order", relevant=False)
        grant_evaluator(owner, "ci", "correct horse battery")

    return demo_store_with_run(tmp_path / "store", ["bm25"], before=before)


def test_the_cli_judges_prints_the_agreement_and_evaluate_reads_the_model_judgments_only_when_asked(store, server):
    url, run = store
    result = runner.invoke(app, ["--url", url, "golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}",
                                 "--agreement", "4"])
    assert result.exit_code == 0, result.output
    assert "stored " in result.output and "answers held no grade 0-3: those pairs stay unjudged" in result.output
    assert "agreement with the humans on a sample of 4 pairs they judged: Cohen's kappa" in result.output
    assert "Kendall's tau" in result.output and "kappa 0.000" not in result.output
    # the sampled pairs all count as relevant for the model: kappa would be 0 whatever it said, so it is not measurable
    assert "Cohen's kappa not measurable: the model put all 4 pairs in one class (relevant)" in result.output
    assert "human relevant: model relevant" not in result.output
    mixed = runner.invoke(app, ["--url", url, "evaluate", "--k", "3", "--retriever", "bm25", "--judgments", "human+model"])
    assert mixed.exit_code == 0, mixed.output
    assert "scored on human plus model judgments" in mixed.output
    human = runner.invoke(app, ["--url", url, "evaluate", "--k", "3", "--retriever", "bm25"])
    assert human.exit_code == 0 and "model judgments" not in human.output
    bad = runner.invoke(app, ["--url", url, "evaluate", "--k", "3", "--judgments", "model"])
    assert bad.exit_code == 2 and "--judgments must be human or human+model" in bad.stderr


@pytest.mark.parametrize("args, message", [
    (["seval_run:nope", "--k", "3"], "no finished run"),
    (["--k", "5"], "not 5"),
    (["--k", "3", "--no-chat"], "no chat model"),
])
def test_the_cli_refuses_in_one_line_exit_2_nothing_asked(store, server, args, message):
    url, run = store
    chat = [] if "--no-chat" in args else ["--chat", f"openai:judge@{server.url}"]
    args = [a for a in args if a != "--no-chat"]
    result = runner.invoke(app, ["--url", url, "golden", "judge", *([] if args[0].startswith("seval_run:") else [run]), *args, *chat])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert server.requests == 0


def test_the_cli_exits_4_on_a_failing_endpoint_changing_nothing(store, server):
    url, run = store
    with connect(Settings(url=url)) as owner:
        before = snapshot(owner)
    server.status = 503
    result = runner.invoke(app, ["--url", url, "golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}",
                                 "--timeout", "5"])
    assert result.exit_code == 4, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "chat endpoint" in result.stderr
    with connect(Settings(url=url)) as owner:
        assert snapshot(owner) == before


def test_an_evaluator_may_not_judge_exit_5_no_request_nothing_changed(store, server):
    url, run = store
    assert_cli_refuses_the_evaluator(url, ["golden", "judge", run, "--k", "3", "--chat", f"openai:judge@{server.url}"])
    assert server.requests == 0
    with pytest.raises(PermissionDenied):  # the write itself is refused too, whatever the caller checks
        with as_evaluator(url) as ci:
            ci.value("RETURN fn::seval::add_model_judgments('seval_question', [], 'm', 'p', NONE, NONE, NONE)")


def test_the_readme_shows_the_judge_prompt_as_shipped():
    assert blocks("Holes a model judges", "text")[0].strip() == default_judge_prompt().strip()
