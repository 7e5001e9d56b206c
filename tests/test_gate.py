"""gate: fail on a drop larger than allowed AND significant; JUnit XML; exit codes through the CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from surreal_eval import ConfigError, NotComparable, NotFound, Settings, connect, evaluate, gate, write_junit
from surreal_eval.present.cli import app

from .conftest import add_question, reverse_embeddings

KS = [1, 3, 5]
VECTOR_BROKEN = {"money_back", "new_card", "send_back", "stop_plan", "where_parcel", "signin"}
runner = CliRunner()




def check(result, retriever, metric="recall@3"):
    (found,) = [c for c in result.checks if c.retriever == retriever and c.metric == metric]
    return found



def test_a_large_significant_drop_fails_and_names_the_broken_questions(regressed):
    db, base, bad = regressed
    result = gate(db, metric="recall@3", per_check=True)  # each check on its own p (test_multiple: the Holm default)
    assert (result.baseline, result.candidate) == (base.run, bad.run)
    assert not result.passed
    assert [(c.retriever, c.metric) for c in result.failures] == [("vector", "recall@3")]
    vector = check(result, "vector")
    assert {d.question.split(":")[1] for d in vector.broken} == VECTOR_BROKEN
    # baseline 7/8 (vector misses rate_limit); candidate keeps rate_limit at 0 and signin at 1/3
    assert vector.baseline == 0.875 and vector.candidate == pytest.approx((1 + 1 / 3) / 8)
    assert vector.drop == pytest.approx(0.875 - (1 + 1 / 3) / 8)
    assert vector.p_value == pytest.approx(2 / 64)  # six falls, none rises: 2 x 1/2**6
    assert "significant" in vector.reason and "p = 0.0312 < 0.05" in vector.reason
    # the floored hybrid fell further than allowed too, but on four questions: p = 2/16 is not significant
    floored = check(result, "hybrid_floor")
    assert {d.question.split(":")[1] for d in floored.broken} == {"money_back", "signin", "stop_plan", "where_parcel"}
    assert floored.passed and floored.drop == pytest.approx((3 + 2 / 3) / 8) and floored.p_value == pytest.approx(2 / 16)
    assert "not significant" in floored.reason and "at least 6 must differ" in floored.reason
    assert check(result, "bm25").passed and check(result, "bm25").drop == 0.0


def test_a_large_drop_on_one_question_is_not_significant_and_passes(seeded):
    evaluate(seeded, ks=KS)
    evaluate(seeded, ks=KS, params={"floor": 0.0})
    result = gate(seeded, metric="recall@3")
    assert result.passed
    floored = check(result, "hybrid_floor")
    assert floored.drop == pytest.approx(0.125) and floored.p_value == 1.0
    assert [d.question for d in floored.broken] == ["seval_question:money_back"]
    assert "not significant" in floored.reason


@pytest.mark.parametrize(
    ("options", "passed"),
    [
        ({}, False),
        ({"max_drop": 0.8}, True),  # the drop of 0.708 is within 0.8
        ({"alpha": 0.01}, True),  # p = 1/32 is not below 0.01
        ({"retriever": "hybrid"}, True),
        ({"retriever": ["vector"]}, False),
        ({"metric": "recall@5"}, True),  # at k = 5 only two questions fell: p = 0.5
        ({"metric": ["recall@5", "mrr@5"]}, False),  # mrr@5: seven falls, p = 2/128
    ],
)
def test_gate_options(regressed, options, passed):
    db, _, _ = regressed
    assert gate(db, **{"metric": "recall@3", "per_check": True, **options}).passed is passed


def test_the_default_baseline_is_previous_the_run_before_the_latest(seeded):
    first, second, third = (evaluate(seeded, ks=[3], label=str(i)) for i in range(3))
    assert (gate(seeded, metric="recall@3").baseline, gate(seeded, metric="recall@3").candidate) == (second.run, third.run)
    explicit = gate(seeded, candidate=second.run, baseline=first.run, metric="recall@3")
    assert (explicit.baseline, explicit.candidate) == (first.run, second.run)
    with pytest.raises(ConfigError, match="same run"):  # previous is the run before the latest, whatever the candidate
        gate(seeded, candidate=second.run, metric="recall@3")
    assert gate(seeded, baseline="previous", metric="recall@3").baseline == second.run
    assert gate(seeded, baseline=first.run, metric="recall@3").baseline == first.run


def test_bad_gates_are_refused(seeded):
    only = evaluate(seeded, ks=[3])
    with pytest.raises(NotFound, match="no run before the latest"):
        gate(seeded, metric="recall@3")
    with pytest.raises(ConfigError, match="same run"):
        gate(seeded, baseline=only.run, metric="recall@3")
    evaluate(seeded, ks=[3])
    with pytest.raises(ConfigError, match="measured k = 3"):
        gate(seeded, metric="recall@5")
    with pytest.raises(ConfigError, match="at a cutoff"):
        gate(seeded, metric="recall")
    with pytest.raises(ConfigError, match="max-drop"):
        gate(seeded, metric="recall@3", max_drop=-1)
    with pytest.raises(ConfigError, match="alpha"):
        gate(seeded, metric="recall@3", alpha=0)
    with pytest.raises(ConfigError, match="hybrid_linear"):
        gate(seeded, metric="recall@3", retriever="hybrid_linear")


def test_different_golden_sets_are_refused_unless_allowed(seeded):
    evaluate(seeded, ks=KS)
    add_question(seeded)
    evaluate(seeded, ks=KS)
    with pytest.raises(NotComparable, match="different golden sets.*--allow-different-golden"):
        gate(seeded, metric="recall@3")
    allowed = gate(seeded, metric="recall@3", allow_different_golden=True)
    assert allowed.passed and all(c.n == 8 for c in allowed.checks)
    assert allowed.warnings[0].startswith("WARNING")


def test_a_retriever_the_baseline_lacks_is_skipped(seeded):
    evaluate(seeded, ks=[3], retrievers=["bm25"])
    evaluate(seeded, ks=[3], retrievers=["bm25", "vector"])
    result = gate(seeded, metric="recall@3")
    assert [c.retriever for c in result.checks] == ["bm25"]
    assert result.skipped == [f"retriever vector is not in the baseline {result.baseline}"]


def test_junit_xml_has_one_testcase_per_retriever_and_metric(regressed, tmp_path):
    db, base, bad = regressed
    result = gate(db, metric=["recall@3", "recall@5"], per_check=True)
    path = write_junit(result, tmp_path / "gate.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "8" and root.get("failures") == "1"
    (suite,) = root.findall("testsuite")
    assert suite.get("tests") == "8" and suite.get("failures") == "1" and suite.get("errors") == "0"
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["baseline"] == base.run and properties["candidate"] == bad.run
    assert properties["baseline_label"] == "good" and properties["max_drop"] == "0.02"
    assert properties["decided_on"] == "per-check p"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    assert set(cases) == {(f"gate.{r}", m) for r in ("bm25", "vector", "hybrid", "hybrid_floor") for m in ("recall@3", "recall@5")}
    (failure,) = [f for c in cases.values() for f in c.findall("failure")]
    assert failure is cases[("gate.vector", "recall@3")].find("failure")
    message = failure.get("message")
    assert "fell from 0.8750 to 0.1667" in message and "p = 0.0312" in message and "n = 8" in message
    assert "Holm-adjusted p = 0.2500" in message  # 2/64 x 8 checks
    assert set(message.split("broken: ")[1].split(", ")) == VECTOR_BROKEN
    assert "seval_question:money_back: 1.0000 -> 0.0000" in failure.text


def test_junit_marks_skipped_retrievers(seeded, tmp_path):
    evaluate(seeded, ks=[3], retrievers=["bm25"])
    evaluate(seeded, ks=[3], retrievers=["bm25", "vector"])
    root = ET.parse(write_junit(gate(seeded, metric="recall@3"), tmp_path / "j.xml")).getroot()
    assert root.get("skipped") == "1" and root.get("tests") == "2"
    (skipped,) = root.iter("skipped")
    assert "vector" in skipped.get("message")


# ---------------------------------------------------------------------------------------------
# The CLI: exit 0 pass, 1 fail, 2 bad input
# ---------------------------------------------------------------------------------------------


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


@pytest.fixture
def store(tmp_path):
    """A persistent store holding a good run and a run after the embeddings were reversed."""
    path = tmp_path / "store"
    assert cli(path, "init", "--demo").exit_code == 0
    assert cli(path, "evaluate", "--k", "1,3,5", "--tag", "good").exit_code == 0
    with connect(Settings(url=f"surrealkv://{path}")) as db:
        reverse_embeddings(db)
    assert cli(path, "evaluate", "--k", "1,3,5", "--tag", "reversed").exit_code == 0
    return path


def test_cli_gate_fails_with_exit_1_and_prints_the_broken_questions(store, tmp_path):
    junit = tmp_path / "out.xml"
    result = cli(store, "gate", "--baseline", "previous", "--metric", "recall@3", "--per-check", "--junit", str(junit))
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.stdout
    assert all(f"question:{q}" in result.stdout for q in VECTOR_BROKEN)
    assert ET.parse(junit).getroot().get("failures") == "1"
    assert f"wrote JUnit XML to {junit}" in result.stderr


def test_cli_gate_passes_with_exit_0(store):
    result = cli(store, "gate", "--metric", "recall@3", "--retriever", "hybrid")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.stdout
    assert cli(store, "gate", "--metric", "recall@3", "--max-drop", "0.8").exit_code == 0


def test_cli_gate_json_keeps_the_exit_code(store):
    result = cli(store, "gate", "--metric", "recall@3", "--per-check", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["passed"] is False
    assert [(c["retriever"], c["passed"]) for c in data["checks"]] == [
        ("bm25", True), ("vector", False), ("hybrid", True), ("hybrid_floor", True)]


def test_cli_gate_bad_input_exits_2(store):
    for args, message in [
        (["--metric", "recall@7"], "measured k = 1, 3, 5"),
        (["--metric", "nope@3"], "unknown metric"),
        (["--baseline", "nope"], "no finished run seval_run:nope"),
        (["--retriever", "hybrid_linear"], "hybrid_linear"),
    ]:
        result = cli(store, "gate", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr


def test_cli_gate_refuses_different_golden_sets(store):
    with connect(Settings(url=f"surrealkv://{store}")) as db:
        add_question(db)
    assert cli(store, "evaluate", "--k", "1,3,5").exit_code == 0
    refused = cli(store, "gate", "--metric", "recall@3")
    assert refused.exit_code == 2 and "different golden sets" in refused.stderr
    allowed = cli(store, "gate", "--metric", "recall@3", "--allow-different-golden")
    assert allowed.exit_code == 0, allowed.output
    assert "WARNING" in allowed.stdout


def test_a_failing_gate_lists_the_worst_ten_broken_questions_and_counts_the_rest_all_with_all_and_json(tmp_path):
    """Twelve questions, each its own document's; every document then takes its neighbour's embedding, so all twelve
    break at k 1: the text lists ten and counts two, --all lists twelve, --json holds twelve."""
    import math

    from surreal_eval import Article, HarnessConfig, Question, import_harness
    from surreal_eval.golden.files import load_golden
    from surreal_eval.load.bulk import load_corpus

    url = f"surrealkv://{tmp_path / 'store'}"
    vectors = [[math.cos(i * math.pi / 12), math.sin(i * math.pi / 12), 0.0, 0.0] for i in range(12)]
    with connect(Settings(url=url)) as db:
        import_harness(db, HarnessConfig(dimension=4))
        load_corpus(db, [Article(id=f"d{i:02}", content=f"document {i}", embedding=v) for i, v in enumerate(vectors)])
        load_golden(db, [Question(id=f"q{i:02}", text=f"question {i}", embedding=v, relevant=[f"d{i:02}"]) for i, v in enumerate(vectors)])
        evaluate(db, ks=[1], retrievers=["vector"], tag="good")
        for i in range(12):
            db.query("UPDATE type::record('seval_article', $id) SET embedding = $v", {"id": f"d{i:02}", "v": vectors[(i + 6) % 12]})
        evaluate(db, ks=[1], retrievers=["vector"])
    args = ["--url", url, "gate", "--baseline", "good", "--metric", "recall@1"]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 1, shown.output
    listed = [line for line in shown.stdout.splitlines() if line.startswith("    seval_question:")]
    assert len(listed) == 10 and "    and 2 more of 12 broken (gate --all lists every one; --json holds them all)" in shown.stdout
    every = runner.invoke(app, [*args, "--all"])
    assert len([line for line in every.stdout.splitlines() if line.startswith("    seval_question:")]) == 12 and "more of" not in every.stdout
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert len(data["checks"][0]["broken"]) == 12 and not data["passed"]
