"""A store written by surreal-eval 0.1 (unprefixed names: eval_run, question, article, ...) is refused by
every command but `migrate`, which moves it to the seval_ names keeping runs, rankings, splits, history,
retrievers and accounts, drops the caches, removes only 0.1's own definitions, and is all or nothing.

The stores are SurrealQL exports of stores 0.1 made (tests/data/release_0_1.surql: the demo, an attached
table kb, runs, an evaluator; tests/data/release_0_1_chunks.surql: a chunk table, an attached table with
0.1's own indexes, 0.1's analyzer under a user's index, a run by an evaluator, the watch on)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from surreal_eval import (ConfigError, HarnessConfig, MigrationReport, Settings, compare_runs, connect, evaluate, gate, history,
                          import_harness, migrate)
from surreal_eval.present.cli import app
from surreal_eval.store import migrate_rows
from surreal_eval.store import migrate_prefix

from .conftest import fresh_db, snapshot
from .test_prefix import every_name, unprefixed

DATA = Path(__file__).parent / "data"
RELEASE = DATA / "release_0_1.surql"
CHUNKS = DATA / "release_0_1_chunks.surql"
PASSWORD = "secret-ci-pass"  # the evaluator ci's, in both exports
#: the export's runs: the one a watched ingest made (the store as it is), and two made by hand before that ingest
INGESTED, FIRST, SECOND = "2f8xtorglr0n6bw9iz25", "kq7tjfadcog82tazlu89", "hluikxa7isgissrl9op0"
runner = CliRunner()


def load(export: Path = RELEASE, url: str = "mem://"):
    """A connection to a store holding `export` (loaded into an empty one, which connect does not refuse)."""
    db = connect(Settings(url=url))
    db.query(export.read_text(encoding="utf-8"))
    return db


@pytest.fixture
def old():
    db = load()
    yield db
    db.close()


@pytest.fixture
def old_store(tmp_path) -> str:
    """A persistent store holding 0.1's export, closed again (one process holds it at a time)."""
    url = f"surrealkv://{tmp_path / 'store'}"
    load(url=url).close()
    return url


def opened(url: str):
    return connect(Settings(url=url), previous_release=True)


def users_own(db) -> dict:
    """The user's kb as their application made it: definition, indexes, rows, analyzer, function."""
    info = db.value("INFO FOR DB")
    return {"table": info["tables"]["kb"], "info": db.value("INFO FOR TABLE kb"),
            "rows": db.value("RETURN <string> (SELECT * FROM kb ORDER BY id)"),
            "analyzer": info["analyzers"]["kb_words"], "function": info["functions"]["kb_search"]}


def old_runs(db) -> dict:
    return {str(r["id"].id): r for r in db.value("SELECT * FROM eval_run")}


def cli(url: str, *args: str):
    return runner.invoke(app, ["--url", url, *args])


# ------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize("command", [["init"], ["init", "--dimension", "4"], ["evaluate", "--k", "1"], ["runs", "list"], ["retriever", "list"],
                                     ["gate", "--baseline", "previous"], ["access", "remove", "ci"]])
def test_every_command_but_migrate_refuses_a_0_1_store_in_one_line_and_changes_nothing(old_store, command):
    db = opened(old_store)
    before = snapshot(db)
    db.close()
    result = cli(old_store, *command)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and "surreal-eval 0.1" in line and "`surreal-eval migrate`" in line and "eval_run" in line
    db = opened(old_store)
    assert snapshot(db) == before
    db.close()


def test_the_library_refuses_it_too(old, old_store):
    with pytest.raises(ConfigError, match="surreal-eval migrate"):
        connect(Settings(url=old_store))
    before = snapshot(old)  # a connection opened before 0.1's store was loaded into it
    with pytest.raises(ConfigError, match="surreal-eval migrate"):
        import_harness(old, HarnessConfig(dimension=4))
    assert snapshot(old) == before


# ---------------------------------------------------------------------------------------- migrated


def test_migrate_keeps_history_labels_times_means_and_splits(old):
    runs = old_runs(old)
    splits = {str(r["id"].id): r.get("split") for r in old.value("SELECT id, split FROM question")}
    rankings = old.value("RETURN count(SELECT id FROM eval_ranking)")
    report = migrate(old)
    assert isinstance(report, MigrationReport) and report.migrated
    assert (report.runs, report.rankings, report.questions, report.articles) == (4, rankings, 12, 11)
    assert report.splits == {"dev": 6, "test": 6} and report.golden_carried == 4 and report.golden_other == 0
    assert report.retrievers == ["mine"] and report.evaluators == ["ci"] and report.access == "seval_evaluator"
    assert report.attached == ["kb"] and report.analyzer == "seval_english" and report.ingests == 1
    assert report.dropped == {"candidate lists": 48, "engine checks": 4}
    assert "table eval_run" in report.removed and "access evaluator" in report.removed and report.kept == []

    migrated = old
    listed = history(migrated)
    assert sorted(r.run for r in listed) == sorted(f"seval_run:{key}" for key in runs)
    for summary in listed:
        before = runs[summary.run.split(":", 1)[1]]
        assert summary.label == before["label"] and summary.created_at == before["created_at"]
        assert {(m.retriever, m.k): m.scores for m in summary.results} == {
            (m["retriever"], m["k"]): m["metrics"] for m in before["means"] if m.get("retriever") != "floor_sweep"}
    assert {str(r["id"].id): r.get("split") for r in migrated.value("SELECT id, split FROM seval_question")} == splits
    assert migrated.value("RETURN count(SELECT id FROM seval_ranking)") == rankings


def test_compare_of_two_migrated_runs_equals_the_exports_own_rankings(old):
    def scores(run):
        found = {}
        for row in old.value("SELECT question, retriever, results FROM eval_ranking WHERE run = type::record('eval_run', $r)", {"r": run}):
            for at in row["results"]:
                for metric, value in at["metrics"].items():
                    found.setdefault((row["retriever"], f"{metric}@{at['k']}"), {})[str(row["question"].id)] = value
        return found

    a, b = scores(FIRST), scores(SECOND)
    migrate(old)
    comparison = compare_runs(old, f"seval_run:{FIRST}", f"seval_run:{SECOND}")
    assert comparison.same_golden and comparison.shared == 12 and comparison.rows
    for row in comparison.rows:
        x, y = a[(row.retriever, row.metric)], b[(row.retriever, row.metric)]
        assert set(x) == set(y) and row.n == len(x)
        assert row.mean_a == pytest.approx(sum(x.values()) / len(x)) and row.mean_b == pytest.approx(sum(y.values()) / len(y))
        assert {d.question.split(":", 1)[1] for d in row.fixed} == {q for q in x if y[q] > x[q] + 1e-12}
        assert {d.question.split(":", 1)[1] for d in row.broken} == {q for q in x if y[q] < x[q] - 1e-12}


def test_nothing_of_the_users_changes_and_no_name_of_0_1_remains(old):
    before = users_own(old)
    migrate(old)
    assert users_own(old) == before
    assert sorted(unprefixed(every_name(old))) == [
        ("analyzers", "kb_words"), ("functions", "kb_search"), ("indexes", "kb.kb_body"), ("indexes", "kb.kb_vec"), ("tables", "kb")]


def test_a_new_evaluation_gates_against_an_old_run_of_the_same_golden_set(old):
    migrate(old)
    new = evaluate(old, ks=[1, 3], label="after the migration")
    result = gate(old, baseline=f"seval_run:{INGESTED}", candidate=new.run, metric="recall@3")
    assert result.passed and not any("golden" in w.lower() for w in result.warnings)
    assert not [c.field for c in result.changes if c.field.startswith(("golden.", "corpus."))]  # the same golden set and corpus
    # the runs before the ingest measured another corpus, and say so; their golden set is the same
    earlier = compare_runs(old, f"seval_run:{FIRST}", new.run)
    assert earlier.same_golden and "corpus.fingerprint" in {c.field for c in earlier.changes}
    assert old.value("RETURN count(SELECT id FROM seval_run)") == 5


def test_the_watched_ingest_does_not_evaluate_again_and_chunks_and_indexes_move():
    db = load(CHUNKS)
    try:
        before = {str(r["id"].id): r for r in db.value("SELECT * FROM eval_run")}
        report = migrate(db)
        assert report.watch and report.ingests == 2 and report.runs == 4 == len(before)
        assert db.value("RETURN count(SELECT id FROM seval_run)") == 4  # the after-ingest event did not fire
        assert report.chunk_tables == {"seval_chunk_small": 37}
        assert report.indexes == {"harness_notes_body": "seval_notes_body", "harness_notes_vec": "seval_notes_vec"}
        assert report.kept == ["analyzer english_stop (index docs_text of table docs, not the harness's, uses it)",
                               "function fn::strip_stopwords (analyzer english_stop calls it)"]
        assert sorted(db.value("INFO FOR TABLE notes")["indexes"]) == ["seval_notes_body", "seval_notes_vec"]
        assert db.value("SELECT VALUE [bm25_index, vector_index] FROM ONLY seval_corpus:notes") == ["seval_notes_body", "seval_notes_vec"]
        assert db.value("SELECT VALUE created_by FROM seval_run WHERE label = 'by ci'") == [db.value("RETURN seval_evaluator:ci")]
        assert db.value("SELECT VALUE corpus FROM seval_ingest ORDER BY at") == ["seval_chunk_small", "seval_article"]
        assert set(db.value("SELECT VALUE state FROM seval_ingest")) <= {"done", "unwatched"}  # none left to evaluate again
        assert db.value("SELECT VALUE doc FROM ONLY seval_chunk_small:`account_locked#0`") == db.value("RETURN seval_article:account_locked")
        assert db.value("SELECT VALUE passages[0].doc FROM ONLY seval_question:rate_limit") == db.value("RETURN seval_article:api_rate_limits")
        # every run on the store as it is (the chunk table, notes, the ingested article) compares with a new one unchanged
        for label, corpus in (("chunks", "seval_chunk_small"), ("notes", "notes")):
            old_run = db.value("SELECT VALUE id FROM ONLY seval_run WHERE label = $l LIMIT 1", {"l": label})
            new = evaluate(db, ks=[1, 3], params={"corpus": corpus}, retrievers=before[str(old_run.id)]["retrievers"])
            changes = {c.field for c in compare_runs(db, old_run, new.run).changes}
            assert not {f for f in changes if f.startswith(("corpus.", "golden."))}, changes
        assert ("analyzers", "english_stop") in unprefixed(every_name(db)) and ("functions", "strip_stopwords") in unprefixed(every_name(db))
    finally:
        db.close()


def test_the_evaluator_signs_in_through_seval_evaluator_after_the_cli_migrates(old_store):
    result = cli(old_store, "migrate")
    assert result.exit_code == 0, result.output
    for part in ("4 runs", "12 questions (dev 6, test 6)", "retrievers: mine", "--access seval_evaluator",
                 "48 candidate lists, 4 engine checks", "removed 0.1's definitions"):
        assert part in result.stdout
    assert "up to date" in cli(old_store, "init").stdout  # the harness as init would leave it
    ci = connect(Settings(url=old_store, access="seval_evaluator", user="ci", password=PASSWORD))
    try:
        assert len(history(ci)) == 4
        run = evaluate(ci, ks=[1], retrievers=["bm25"]).run
        assert ci.value("SELECT VALUE created_by FROM ONLY type::record($r)", {"r": run}) == ci.value("RETURN seval_evaluator:ci")
    finally:
        ci.close()
    again = cli(old_store, "migrate")
    assert again.exit_code == 0 and "nothing to migrate" in again.stdout


# --------------------------------------------------------------------------------- nothing, or all


def test_nothing_to_migrate_on_a_current_store_or_a_migrated_one(old):
    db = fresh_db()
    before = snapshot(db)
    assert migrate(db).migrated is False and snapshot(db) == before
    db.close()
    assert migrate(old).migrated
    after = snapshot(old)
    assert migrate(old) == MigrationReport(migrated=False) and snapshot(old) == after


def test_a_failure_mid_copy_leaves_the_old_store_as_it_was_and_a_second_migrate_starts_clean(old, monkeypatch):
    before = snapshot(old)
    monkeypatch.setattr(migrate_rows, "BATCH", 50)
    real = migrate_rows.insert_rows
    calls = []

    def failing(db, table, rows, **options):
        if table == "seval_ranking" and len(calls) == 2:
            raise RuntimeError("the disk is full")
        calls.append(table) if table == "seval_ranking" else None
        return real(db, table, rows, **options)

    monkeypatch.setattr(migrate_rows, "insert_rows", failing)
    with pytest.raises(RuntimeError, match="disk is full"):
        migrate(old)
    assert calls == ["seval_ranking", "seval_ranking"]  # 100 rankings had been copied
    assert snapshot(old) == before
    monkeypatch.setattr(migrate_rows, "insert_rows", real)
    assert migrate(old).rankings == 396


def test_an_interrupted_migration_is_refused_then_migrated_again_from_the_start(old, monkeypatch):
    clean = load()
    migrate(clean)
    # (written_at: when each migration wrote the record, not part of what is migrated)
    expected = {t: clean.value(f"SELECT * OMIT written_at FROM {t} ORDER BY id") for t in ("seval_run", "seval_ranking", "seval_question", "seval_article")}
    clean.close()
    monkeypatch.setattr(migrate_prefix, "_remove_partial_copy", lambda db: None)  # as if the process had been killed
    monkeypatch.setattr(migrate_prefix, "_retrievers", lambda db, plan: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        migrate(old)
    assert old.value("RETURN count(SELECT id FROM seval_run)") == 4  # the copy so far is there
    with pytest.raises(ConfigError, match="a migration that did not finish: run `surreal-eval migrate`"):
        import_harness(old, HarnessConfig(dimension=4))
    monkeypatch.undo()
    report = migrate(old)
    assert report.migrated and report.runs == 4
    assert {t: old.value(f"SELECT * OMIT written_at FROM {t} ORDER BY id") for t in expected} == expected


def test_an_unfinished_load_of_0_1_is_refused_in_one_line(old):
    old.query("CREATE ingest_journal:article CONTENT { undo: '_undo_article', existed: true, corpus: true, position: 0, "
              "state: 'moving', started: time::now(), updated: time::now() }")
    before = snapshot(old)
    with pytest.raises(ConfigError, match=r"left a load into article unfinished \(table ingest_journal\).*surreal-eval migrate"):
        migrate(old)
    assert snapshot(old) == before


def test_prefixed_names_no_migration_made_are_refused(old):
    old.query("DEFINE TABLE seval_mine SCHEMALESS")
    before = snapshot(old)
    with pytest.raises(ConfigError, match="table seval_mine"):
        migrate(old)
    assert snapshot(old) == before
