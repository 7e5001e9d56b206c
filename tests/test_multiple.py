"""Many checks at once: Holm-adjusted p-values in compare and gate, and the sides that cannot be told apart.

Holm is checked against statsmodels and against a hand-worked example; compare and gate run on the
demo seed, where the reversed embeddings make the vector retriever fall on six questions
(p = 2/64 alone), which is not significant once adjusted over the gate's other checks.
"""

from __future__ import annotations

import json
import random

import pytest
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from surreal_eval import ConfigError, Settings, connect, evaluate, gate
from surreal_eval.analysis.groups import compare_many_retrievers, compare_many_runs
from surreal_eval.analysis.multiple import holm, inseparable_groups
from surreal_eval.present.cli import app

from .conftest import reverse_embeddings, snapshot

KS = [1, 3, 5]
runner = CliRunner()


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.04 -> 4 x 0.01 = 0.04, 3 x 0.02 = 0.06, 2 x 0.03 = 0.06, 1 x 0.04 = 0.04 -> max so far 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # one p-value stays as it is; a product above 1 is capped at 1; none gives none
    assert holm([0.2]) == [0.2]
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


@pytest.mark.parametrize("seed", range(20))
def test_holm_agrees_with_statsmodels(seed):
    rng = random.Random(seed)
    p = [rng.choice([rng.random(), rng.random() / 50, 1.0, 0.03125]) for _ in range(rng.randint(1, 40))]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)


def test_groups_are_the_maximal_sets_with_no_separable_pair():
    near = {frozenset("ab"), frozenset("bc"), frozenset("de"), frozenset("df"), frozenset("ef")}
    groups = inseparable_groups(list("abcdefg"), lambda x, y: frozenset((x, y)) in near)
    # a~b and b~c but a, c separable: two overlapping groups, never {a, b, c}; g is told apart from all
    assert groups == [["a", "b"], ["b", "c"], ["d", "e", "f"]]
    assert inseparable_groups(list("abc"), lambda x, y: False) == []



def test_gate_decides_on_holm_adjusted_p_values_by_default(regressed):
    db, _, _ = regressed
    adjusted = gate(db, metric="recall@3")
    per_check = gate(db, metric="recall@3", per_check=True)
    (vector,) = [c for c in adjusted.checks if c.retriever == "vector"]
    raw = sorted(c.p_value for c in adjusted.checks)
    assert vector.p_value == pytest.approx(2 / 64) and vector.p_value == raw[0]
    # the smallest p-value is multiplied by the number of checks
    assert vector.p_adjusted == pytest.approx(min(1, len(adjusted.checks) * 2 / 64))
    assert [c.p_adjusted for c in adjusted.checks] == pytest.approx(holm([c.p_value for c in adjusted.checks]))
    assert len(adjusted.checks) >= 2 and adjusted.passed and not adjusted.per_check
    assert "Holm-adjusted over" in vector.reason and "not significant" in vector.reason
    assert not per_check.passed and [c.retriever for c in per_check.failures] == ["vector"]
    assert "Holm" not in per_check.failures[0].reason


def test_gate_on_one_check_is_the_same_either_way(regressed):
    db, _, _ = regressed
    only = gate(db, metric="recall@3", retriever="vector")
    assert only.checks[0].p_adjusted == only.checks[0].p_value and not only.passed


def test_compare_carries_raw_and_adjusted_p_values(regressed):
    db, base, bad = regressed
    from surreal_eval import compare_runs

    comparison = compare_runs(db, base.run, bad.run)
    raw = [r.p_value for r in comparison.rows]
    assert [r.p_adjusted for r in comparison.rows] == pytest.approx(holm(raw))
    assert all(r.p_adjusted >= r.p_value for r in comparison.rows)
    data = json.loads(comparison.model_dump_json())
    assert {"p_value", "p_adjusted"} <= set(data["rows"][0])


def test_three_retrievers_name_the_groups_that_cannot_be_told_apart(seeded):
    run = evaluate(seeded, ks=KS)
    many = compare_many_retrievers(seeded, run.run, ["bm25", "vector", "hybrid"], metrics=["recall@3"])
    assert [(r.a, r.b) for r in many.rows] == [("bm25", "vector"), ("bm25", "hybrid"), ("vector", "hybrid")]
    assert [r.p_adjusted for r in many.rows] == pytest.approx(holm([r.p_value for r in many.rows]))
    # eight questions: no pair reaches Holm-adjusted p < 0.05, so all three form one group, best mean first
    (group,) = many.groups
    assert sorted(group.members) == ["bm25", "hybrid", "vector"]
    assert group.means == sorted(group.means, reverse=True)
    assert many.separable == {"recall@3": []}
    # at alpha = 1 every pair that is not tied is separable: a group then only holds tied sides
    apart = compare_many_retrievers(seeded, run.run, ["bm25", "vector", "hybrid"], metrics=["recall@3"], alpha=1.0)
    tied = {frozenset((r.a, r.b)) for r in apart.rows if r.tied}
    assert all(frozenset(pair) in tied for g in apart.groups for pair in [g.members[:2]])


def test_three_runs_are_compared_pair_by_pair(regressed):
    db, base, bad = regressed
    third = evaluate(db, ks=KS, label="reversed again")
    many = compare_many_runs(db, [base.run, bad.run, third.run], metrics=["recall@3"], retrievers=["vector"])
    assert [(r.a, r.b) for r in many.rows] == [(base.run, bad.run), (base.run, third.run), (bad.run, third.run)]
    # bad and third are the same retrieval: tied, not separable; base is separable from neither after Holm
    (same,) = [r for r in many.rows if (r.a, r.b) == (bad.run, third.run)]
    assert same.tied and same.difference == 0
    (group,) = many.groups
    assert set(group.members) == {base.run, bad.run, third.run} and group.retriever == "vector"
    with pytest.raises(ConfigError, match="runs named twice"):  # latest is the third run
        compare_many_runs(db, [base.run, third.run, "latest"], metrics=["recall@3"])
    per = compare_many_runs(db, [base.run, bad.run, third.run], metrics=["recall@3"], retrievers=["vector"], alpha=0.2)
    # at alpha 0.2: 2/64 x 3 = 0.094 and 2/64 x 2 = 0.0625 separate base from each reversed run
    assert [g.members for g in per.groups] == [[bad.run, third.run]] and per.separable == {"vector recall@3": [base.run]}


def test_many_sides_refuse_fewer_than_three_or_repeats(seeded):
    run = evaluate(seeded, ks=KS)
    before = snapshot(seeded)
    with pytest.raises(ConfigError, match="three or more"):
        compare_many_retrievers(seeded, run.run, ["bm25", "vector"])
    with pytest.raises(ConfigError, match="named twice: bm25"):
        compare_many_retrievers(seeded, run.run, ["bm25", "vector", "bm25"])
    with pytest.raises(ConfigError, match="alpha"):
        compare_many_retrievers(seeded, run.run, ["bm25", "vector", "hybrid"], alpha=0)
    assert snapshot(seeded) == before


def test_cli_compare_three_retrievers_and_gate_per_check(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    cli = lambda *args: runner.invoke(app, ["--url", url, *args])  # noqa: E731
    assert cli("init", "--demo").exit_code == 0
    assert cli("evaluate", "--k", "1,3,5").exit_code == 0
    with connect(Settings(url=url)) as db:
        reverse_embeddings(db)
    assert cli("evaluate", "--k", "1,3,5").exit_code == 0
    shown = cli("compare", "latest", "--retriever", "bm25", "--retriever", "vector", "--retriever", "hybrid",
                "--metric", "recall@3")
    assert shown.exit_code == 0, shown.output
    assert "p Holm" in shown.output and "not separable" in shown.output
    refused = cli("compare", "latest", "--retriever", "bm25")
    assert refused.exit_code == 2 and "two or more --retriever" in refused.output
    assert cli("gate", "--metric", "recall@3").exit_code == 0
    strict = cli("gate", "--metric", "recall@3", "--per-check", "--json")
    assert strict.exit_code == 1 and json.loads(strict.stdout)["per_check"] is True
