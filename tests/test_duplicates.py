"""Ids read twice in one load: refused with the file and both lines, or one row of each kept (--on-duplicate)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import InputError
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_beir, load_golden
from surreal_eval.load.readers import read_documents, read_questions
from surreal_eval.present.cli import app

from .conftest import snapshot
from .test_loaders import beir_folder, jsonl


def _repeat_d2(folder):
    """The BEIR folder's corpus with d2 on lines 2 and 4, the second time with other text."""
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    rows.append({**rows[1], "text": "money back, the later line"})
    jsonl(folder / "corpus.jsonl", rows)
    return folder


def test_a_repeated_id_is_refused_naming_the_file_and_both_lines(db, tmp_path):
    folder = _repeat_d2(beir_folder(tmp_path / "beir"))
    before = snapshot(db)
    with pytest.raises(InputError) as caught:
        load_beir(db, folder)
    message = str(caught.value)
    assert f"duplicate ids: d2 ({folder / 'corpus.jsonl'} lines 2 and 4)" in message
    assert "--on-duplicate first or last" in message
    assert snapshot(db) == before


@pytest.mark.parametrize(("policy", "content"), [("first", "money back"), ("last", "money back, the later line")])
def test_on_duplicate_keeps_one_row_and_counts_the_dropped(db, tmp_path, policy, content):
    folder = _repeat_d2(beir_folder(tmp_path / "beir"))
    report = load_beir(db, folder, on_duplicate=policy, batch_size=1)
    assert report.corpus.loaded == 3 and report.corpus.duplicates == 1 and report.golden.duplicates == 0
    assert db.value("SELECT VALUE content FROM ONLY seval_article:d2") == content
    assert db.value("RETURN count(SELECT * FROM seval_article)") == 3


def test_the_last_row_wins_within_one_batch_too(db, tmp_path):
    path = jsonl(tmp_path / "docs.jsonl", [
        {"id": "a", "content": "first", "embedding": [1, 0, 0, 0]},
        {"id": "a", "content": "second", "embedding": [0, 1, 0, 0]},
        {"id": "b", "content": "other", "embedding": [0, 0, 1, 0]},
    ])
    report = load_corpus(db, read_documents(path), on_duplicate="last")
    assert (report.loaded, report.duplicates) == (2, 1)
    assert db.value("SELECT VALUE [content, embedding] FROM ONLY seval_article:a") == ["second", [0, 1, 0, 0]]


def test_a_replaced_question_takes_its_problems_and_labels_with_it(seeded, tmp_path):
    # the first q1 names an unknown article and has no embedding: the later q1 replaces it, so the load is fine
    path = jsonl(tmp_path / "golden.jsonl", [
        {"id": "q1", "text": "where is it", "relevant": ["track_order", "ghost"]},
        {"id": "q2", "text": "refund", "relevant": ["refund_request"], "embedding": [0, 1, 0, 0]},
        {"id": "q1", "text": "where is my parcel", "relevant": ["track_order"], "embedding": [0, 0, 1, 0]},
    ])
    report = load_golden(seeded, read_questions(path), on_duplicate="last", batch_size=1)
    assert (report.loaded, report.labels, report.duplicates) == (2, 2, 1)
    assert seeded.value("SELECT VALUE text FROM ONLY seval_question:q1") == "where is my parcel"
    with pytest.raises(InputError, match=r"duplicate ids: q1 \(.*golden.jsonl lines 1 and 3\)"):
        load_golden(seeded, read_questions(path))


def test_an_unknown_label_of_a_question_still_staged_is_refused_under_last(seeded, tmp_path):
    path = jsonl(tmp_path / "golden.jsonl", [
        {"id": "q1", "text": "a", "relevant": ["ghost"], "embedding": [0, 0, 1, 0]},
        {"id": "q2", "text": "b", "relevant": ["ghost"], "embedding": [0, 0, 1, 0]},
        {"id": "q1", "text": "c", "relevant": ["track_order"], "embedding": [0, 0, 1, 0]},
    ])
    with pytest.raises(InputError, match="labels to unknown documents: q2 -> seval_article:ghost"):
        load_golden(seeded, read_questions(path), on_duplicate="last")


def test_cli_load_beir_on_duplicate_reports_what_it_dropped(tmp_path):
    folder = _repeat_d2(beir_folder(tmp_path / "beir"))
    runner = CliRunner()
    url = ["--url", f"surrealkv://{tmp_path / 's'}"]
    refused = runner.invoke(app, [*url, "load", "beir", str(folder)])
    assert refused.exit_code == 2 and "corpus.jsonl lines 2 and 4" in refused.stderr
    done = runner.invoke(app, [*url, "load", "beir", str(folder), "--on-duplicate", "first"])
    assert done.exit_code == 0, done.output
    assert "loaded 3 articles, 1 row repeating an id dropped" in done.stdout
