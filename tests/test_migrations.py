"""History written by an earlier harness version is carried over by `init`: a run whose metrics sat in
table eval_result (a row per ranking and k) reads back the same once they are moved onto its rankings."""

from __future__ import annotations

from surreal_eval import HarnessConfig, evaluate, import_harness
from surreal_eval.runs.record import load_run


def _as_an_earlier_version_kept_it(db, run) -> None:
    """Rewrite run `run` as the harness kept it before: its metrics in eval_result, none on the rankings."""
    db.query("""
        DEFINE TABLE eval_result SCHEMAFULL;
        DEFINE FIELD run ON eval_result TYPE record<seval_run>;
        DEFINE FIELD question ON eval_result TYPE record<seval_question>;
        DEFINE FIELD retriever ON eval_result TYPE string;
        DEFINE FIELD floor ON eval_result TYPE option<number>;
        DEFINE FIELD k ON eval_result TYPE int;
        DEFINE FIELD ranking ON eval_result TYPE record<seval_ranking>;
        DEFINE FIELD metrics ON eval_result TYPE object FLEXIBLE;
        DEFINE INDEX eval_result_run ON eval_result FIELDS run, retriever, k;
        UPSERT seval_object:⟨table:eval_result⟩ CONTENT { kind: 'table', name: 'eval_result' };
        FOR $r IN (SELECT * FROM seval_ranking WHERE run = $run) {
            FOR $m IN array::reverse($r.results) {
                CREATE eval_result CONTENT { run: $r.run, question: $r.question, retriever: $r.retriever, floor: $r.floor,
                    k: $m.k, ranking: $r.id, metrics: $m.metrics };
            };
        };
        REMOVE FIELD results ON seval_ranking;
        UPDATE seval_ranking UNSET results WHERE run = $run;
    """, {"run": run})


def test_results_kept_by_an_earlier_version_are_moved_onto_the_rankings(seeded):
    report = evaluate(seeded, ks=[1, 3, 5], per_question=True)
    run = seeded.value("SELECT VALUE id FROM ONLY seval_run LIMIT 1")
    rankings = seeded.value("SELECT id, results FROM seval_ranking ORDER BY id")
    _as_an_earlier_version_kept_it(seeded, run)
    assert seeded.value("RETURN count(SELECT id FROM seval_ranking WHERE results != NONE)") == 0
    assert seeded.value("RETURN count(SELECT id FROM eval_result)") == 3 * len(rankings)

    import_harness(seeded, HarnessConfig(dimension=4))
    assert seeded.value("SELECT id, results FROM seval_ranking ORDER BY id") == rankings
    assert "eval_result" not in seeded.value("INFO FOR DB")["tables"]
    assert seeded.value("SELECT VALUE name FROM seval_object WHERE string::starts_with(name, 'eval_result')") == []
    again = load_run(seeded, report.run, per_question=True)
    assert again.results == report.results and again.per_question == report.per_question


def test_a_table_named_eval_result_the_harness_did_not_make_is_left_alone(db):
    db.query("DEFINE TABLE eval_result SCHEMALESS; CREATE eval_result:mine SET note = $n", {"n": "the user's"})
    import_harness(db, HarnessConfig(dimension=4))
    assert db.value("SELECT * FROM eval_result") == [{"id": db.value("RETURN eval_result:mine"), "note": "the user's"}]
