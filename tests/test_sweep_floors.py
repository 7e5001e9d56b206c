"""The floor sweep's floors come from the data, as tune's grid does (issue 35): 0 and the 10th, 25th, 50th, 75th and
90th percentiles of the BM25 scores of the run's candidate lists, rounded down to two decimals (fn::seval::keep_floors,
fn::seval::floor_grid). A run after an ingest keeps the floors of the run it follows (it stays incremental, and the two
sweeps compare floor by floor); `--fresh` takes them anew; floors given are used as given."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from surreal_eval import Article, run_demo
from surreal_eval.load.bulk import load_corpus
from surreal_eval.present.cli import app
from surreal_eval.present.run_tables import golden_notes
from surreal_eval.runs.demo import DEMO_FLOORS
from surreal_eval.runs.evaluate import evaluate
from surreal_eval.runs.watch import drain_ingests, set_watch
from surreal_eval.store.record_ids import to_record

runner = CliRunner()

#: an eleventh article: every BM25 score moves (the document count and the average length change)
GIFT = Article(id="gift_cards", title="Gift cards", content="Gift cards never expire and can pay for any order", embedding=[0.2, 0.2, 0.2, 0.2])


def bm25_scores(db, run: str) -> list[float]:
    """The scores of the BM25 candidate lists of run `run` (its bm25 rankings: on seval_article, the lists as fetched)."""
    rows = db.value("SELECT VALUE scores FROM seval_ranking WHERE run = $r AND retriever = 'bm25'", {"r": to_record(run, "seval_run")})
    return sorted(s for row in rows for s in row)


def grid(scores: list[float]) -> list[float]:
    """0 and the percentiles, by linear interpolation between closest ranks, rounded down to two decimals."""

    def percentile(q: float) -> float:
        at = q / 100 * (len(scores) - 1)
        low = math.floor(at)
        return scores[low] + (scores[min(low + 1, len(scores) - 1)] - scores[low]) * (at - low)

    return sorted({0, *(math.floor(percentile(q) * 100) / 100 for q in (10, 25, 50, 75, 90))})


def floors_note(report) -> str:
    (note,) = [n for n in golden_notes(report) if n.startswith("the floor sweep")]
    return note


def test_a_runs_default_floors_are_0_and_the_percentiles_of_its_bm25_candidate_scores(seeded):
    report = evaluate(seeded, ks=[1, 3, 5])
    scores = bm25_scores(seeded, report.run)
    # worked by hand: the eight questions' top-5 BM25 lists hold 21 scores; the 10th to 90th percentiles fall on the
    # 3rd, 6th, 11th, 16th and 19th smallest (ranks 2, 5, 10, 15 and 18 of 0 to 20), no interpolation needed
    assert len(scores) == 21
    assert [round(scores[i], 4) for i in (2, 5, 10, 15, 18)] == [0.7747, 1.1639, 1.3767, 2.0765, 4.4391]
    assert report.params["floors"] == [0, 0.77, 1.16, 1.37, 2.07, 4.43] == grid(scores)
    assert sorted({row.floor for row in report.sweep}) == report.params["floors"]
    assert report.params["floors_from"] == "data" and report.params["floors_fingerprint"] == report.corpus["fingerprint"]
    assert floors_note(report).startswith("the floor sweep's floors come from the data: 0 and the 10th")
    # whatever --floor says: the floor is the floored hybrid's, the sweep's floors the data's
    assert evaluate(seeded, ks=[1, 3, 5], params={"floor": 10.0}).params["floors"] == report.params["floors"]


def test_the_one_statement_run_takes_the_same_floors_as_the_batched_one(seeded):
    batched = evaluate(seeded, ks=[1, 3, 5], retrievers=["bm25", "hybrid_floor"])
    # fn::seval::run_evaluation reads the lists itself, before it ranks (another set of retrievers: it follows no run)
    floors = seeded.value("RETURN fn::seval::run_evaluation([1, 3, 5], ['hybrid_floor'], {}, NONE).params.floors")
    assert floors == batched.params["floors"] == [0, 0.77, 1.16, 1.37, 2.07, 4.43]


def test_a_run_with_no_sweep_takes_no_floors(seeded):
    report = evaluate(seeded, ks=[3], retrievers=["bm25", "vector"])
    assert report.params["floors_from"] == "data" and "floors" not in report.params and report.sweep == []


def test_a_run_after_an_ingest_keeps_the_floors_of_the_run_it_follows_and_is_incremental(seeded):
    first = evaluate(seeded, ks=[1, 3])
    load_corpus(seeded, [GIFT])
    after = evaluate(seeded, ks=[1, 3])
    assert after.incremental and after.since["base"] == first.run and after.since["added"] == 1
    assert after.retrieval["merged"] > 0 and after.retrieval["copied"] > 0
    assert after.params == first.params  # the floors and the fingerprint they were taken at included
    assert after.params["floors_fingerprint"] == first.corpus["fingerprint"] != after.corpus["fingerprint"]
    assert sorted({row.floor for row in after.sweep}) == first.params["floors"]
    assert floors_note(after).startswith("the floor sweep's floors are those of the run this one follows")
    # the data moved the percentiles: taken anew, the floors would not be the kept ones
    assert grid(bm25_scores(seeded, after.run)) != first.params["floors"]


def test_a_fresh_run_takes_its_floors_from_the_data_anew(seeded):
    first = evaluate(seeded, ks=[1, 3])
    load_corpus(seeded, [GIFT])
    fresh = evaluate(seeded, ks=[1, 3], fresh=True)
    assert fresh.since is None and fresh.retrieval["reused"] == 0
    assert fresh.params["floors"] == grid(bm25_scores(seeded, fresh.run)) != first.params["floors"]
    assert fresh.params["floors_fingerprint"] == fresh.corpus["fingerprint"]
    assert floors_note(fresh).startswith("the floor sweep's floors come from the data")
    # and the next run keeps those
    assert evaluate(seeded, ks=[1, 3]).params["floors"] == fresh.params["floors"]


def test_an_after_ingest_run_that_retrieves_anew_keeps_the_chains_floors(seeded):
    set_watch(seeded, ks=[1, 3], full=True)  # every run after an ingest retrieves every list anew
    first = evaluate(seeded, ks=[1, 3])
    load_corpus(seeded, [GIFT])
    (full,) = drain_ingests(seeded).evaluated
    assert full.fresh and full.error is None
    kept = seeded.value("SELECT VALUE params FROM ONLY $r", {"r": to_record(full.run, "seval_run")})
    assert kept["floors"] == first.params["floors"] and kept["floors_fingerprint"] == first.corpus["fingerprint"]


def test_floors_given_are_used_as_given_and_a_run_after_an_ingest_stays_incremental(seeded):
    given = evaluate(seeded, ks=[1, 3], params={"floors": [0, 2.5]})
    assert given.params["floors"] == [0, 2.5] and given.params["floors_from"] == "given"
    assert "floors_fingerprint" not in given.params
    assert sorted({row.floor for row in given.sweep}) == [0, 2.5]
    assert floors_note(given) == "the floor sweep tries the floors the run was given (params.floors), not floors from the data"
    load_corpus(seeded, [GIFT])
    after = evaluate(seeded, ks=[1, 3], params={"floors": [0, 2.5]})
    assert after.incremental and after.since["base"] == given.run and after.params["floors"] == [0, 2.5]
    # floors given do not stand for floors from the data: a run without them follows neither
    assert evaluate(seeded, ks=[1, 3]).params["floors"] != [0, 2.5]


@pytest.mark.parametrize("floors_from", ["data", "given"])
def test_floors_from_in_params_cannot_pass_for_where_the_floors_came_from(seeded, floors_from):
    report = evaluate(seeded, ks=[3], params={"floors_from": floors_from, "floors_fingerprint": "x"})
    assert report.params["floors_from"] == "data" and report.params["floors_fingerprint"] == report.corpus["fingerprint"]


def test_the_demo_sweeps_its_whole_floors_as_given():
    report = run_demo()
    assert report.params["floors"] == DEMO_FLOORS and report.params["floors_from"] == "given"


def test_evaluate_says_where_the_floors_came_from_in_text_and_json(tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["--url", f"surrealkv://{store}", "init", "--demo"]).exit_code == 0
    text = runner.invoke(app, ["--url", f"surrealkv://{store}", "evaluate", "--k", "1,3"])
    assert text.exit_code == 0, text.output
    assert "floor sweep's floors come from the data" in " ".join(text.stdout.split())
    data = json.loads(runner.invoke(app, ["--url", f"surrealkv://{store}", "evaluate", "--k", "1,3", "--json"]).stdout)
    assert data["params"]["floors_from"] == "data" and data["params"]["floors_fingerprint"] == data["corpus"]["fingerprint"]
    assert [n for n in data["notes"] if n.startswith("the floor sweep's floors come from the data")]
    assert sorted({row["floor"] for row in data["sweep"]}) == data["params"]["floors"]


def test_the_lists_the_floors_come_from_are_read_once_and_not_kept_past_the_run(seeded):
    evaluate(seeded, ks=[3])
    # a fresh verifying run reads no kept list, keeps none, and compares each kept list with the one it fetches: once
    # per question and list (8 BM25 and 8 vector lists, read first as the sweep fuses them, then ranked from), not twice
    verified = evaluate(seeded, ks=[3], fresh=True, verify=True, keep_lists=False)
    assert verified.params["floors_fingerprint"] == verified.corpus["fingerprint"]
    assert verified.verification["lists"] == 16 and verified.verification["agreed"] == 16
    unrecorded = evaluate(seeded, ks=[3], fresh=True, record=False)
    assert unrecorded.params["floors"] == verified.params["floors"]
    assert seeded.value("RETURN count(SELECT id FROM seval_floor_list)") == 0  # held only while a run ranks
