"""Evaluate after every ingest: an ingest marker triggers a run inside the database."""

from __future__ import annotations

import pytest

from surreal_eval import history
from surreal_eval.load.bulk import record_ingest
from surreal_eval.runs.watch import clear_watch, get_watch, set_watch


def test_an_ingest_records_a_run_when_watched(seeded):
    set_watch(seeded, ks=[1, 3], retrievers=["bm25", "hybrid_floor"], params={"floor": 2.0})
    run = record_ingest(seeded, corpus="seval_article", documents=3)
    runs = history(seeded)
    assert [r.run for r in runs] == [run]
    assert runs[0].trigger == "ingest" and runs[0].retrievers == ["bm25", "hybrid_floor"]
    assert runs[0].params["floor"] == 2.0 and runs[0].label == "after ingest of 3 into seval_article"


def test_one_ingest_of_many_rows_is_one_run(seeded):
    set_watch(seeded, ks=[3])
    seeded.query("UPDATE seval_article SET title = title + '' RETURN NONE")  # row writes alone never evaluate
    assert history(seeded) == []
    record_ingest(seeded, corpus="seval_article", documents=10)
    assert len(history(seeded)) == 1


def test_nothing_is_evaluated_when_not_watched(seeded):
    set_watch(seeded, ks=[3])
    clear_watch(seeded)
    assert get_watch(seeded) is None
    assert record_ingest(seeded, corpus="seval_article", documents=10) is None
    assert history(seeded) == []


def test_watching_bad_settings_is_refused(seeded):
    with pytest.raises(Exception, match="at least 1"):
        set_watch(seeded, ks=[0])
    assert get_watch(seeded) is None


def test_a_drop_appears_next_to_the_ingest_that_caused_it(seeded):
    set_watch(seeded, ks=[1])
    first = record_ingest(seeded, corpus="seval_article", documents=10)
    # an ingest that replaces the rate-limit article with text that no longer matches "429"
    seeded.query("UPDATE seval_article:api_rate_limits SET content = 'Limits apply to the public interface.'")
    seeded.query("DEFINE INDEX OVERWRITE seval_article_content ON seval_article FIELDS content FULLTEXT ANALYZER seval_english BM25")
    second = record_ingest(seeded, corpus="seval_article", documents=1)
    runs = {r.run: r for r in history(seeded)}
    assert runs[second].mean("bm25", "recall", 1) < runs[first].mean("bm25", "recall", 1)


def test_load_corpus_records_the_ingest_and_its_run(seeded):
    from surreal_eval.load.bulk import load_corpus
    from surreal_eval.models import Article

    set_watch(seeded, ks=[1, 3])
    report = load_corpus(seeded, [Article(id="gift_cards", title="Gift cards", content="Gift cards never expire.",
                                          embedding=[0.1, 0.6, 0.1, 0.1])], source="new.jsonl")
    assert report.run is not None and report.evaluation_error is None
    (ingest,) = seeded.value("SELECT * FROM seval_ingest")
    assert ingest["documents"] == 1 and ingest["source"] == "new.jsonl"
    assert [r.run for r in history(seeded)] == [report.run]
    assert history(seeded)[0].corpus["documents"] == 11


def test_cli_load_after_watch_records_a_run(tmp_path):
    import json

    from typer.testing import CliRunner

    from surreal_eval.present.cli import app

    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "watch", "--k", "1,3"]).exit_code == 0
    docs = tmp_path / "more.jsonl"
    docs.write_text(json.dumps({"id": "gift_cards", "title": "Gift cards", "content": "Gift cards never expire.",
                                "embedding": [0.1, 0.6, 0.1, 0.1]}) + "\n")
    loaded = runner.invoke(app, [*url, "load", "corpus", str(docs)])
    assert loaded.exit_code == 0, loaded.output
    assert "the ingest recorded run seval_run:" in loaded.stdout
    runs = json.loads(runner.invoke(app, [*url, "history", "--json"]).stdout)
    assert runs[-1]["trigger"] == "ingest"
