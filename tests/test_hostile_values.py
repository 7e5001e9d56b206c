"""Values no store can hold, in files and options: one line naming the file, line and id (or the
option), exit 2, and the store exactly as it was (issue 16: each case here was a traceback or was
accepted without a word)."""

from __future__ import annotations

import json

import pytest

from .test_bad_input import cli, one_line_error, snapshot_of, store  # noqa: F401  (store is a fixture)

GOOD = {"id": "good", "title": "fine", "content": "a parcel", "embedding": [0, 0, 1, 0]}


def row(**fields):
    return json.dumps({"id": "bad", "title": "t", "content": "c", "embedding": [1, 0, 0, 0], **fields})


DEEP_ARRAYS = "[" * 100_000 + "]" * 100_000
DEEP_CELL = "[" * 50_000 + "]" * 50_000  # inside the csv module's 131,072-character field limit
DEEP_OBJECTS = '{"a": ' * 300 + "1" + "}" * 300


@pytest.mark.parametrize(("line", "expected"), [
    (row(metadata={"x": 0}).replace('{"x": 0}', '{"x": ' + DEEP_ARRAYS + "}"), "nested too deeply"),
    (row(metadata={"x": 0}).replace('{"x": 0}', DEEP_OBJECTS), "nested more than 32 levels deep"),
    (row(metadata={"n": 2**64}), "outside the signed 64-bit range"),
    (row(position=99999999999999999999), "outside the signed 64-bit range"),
    (json.dumps({**json.loads(row()), "title": "a\ud800b"}, ensure_ascii=True), "lone UTF-16 surrogate"),
    (json.dumps({**json.loads(row()), "content": "\udfff"}, ensure_ascii=True), "lone UTF-16 surrogate"),
    (row(embedding=[0, 0, 0, 0]), "all zeros"),
    (row(embedding=[1e308, 1e308, 1e308, 1e308]), "too large"),
    (row(embedding=["1", 0, 0, 0]), "numbers only"),
    (row(embedding=[True, False, False, False]), "numbers only"),
])
def test_a_document_row_no_store_can_hold_is_refused_with_its_file_line_and_id(store, tmp_path, line, expected):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    before = snapshot_of(store)
    error = one_line_error(cli(store, "load", "corpus", str(path), "--corpus", "seval_article"), 2)
    assert expected in error and "docs.jsonl:2" in error, error
    assert "'bad'" in error or "surrogate" in error or "deeply" in error, error  # the id, where it could be read
    assert snapshot_of(store) == before


def test_a_csv_embedding_cell_nested_past_the_parser_is_refused_in_one_line(store, tmp_path):
    path = tmp_path / "docs.csv"
    path.write_text(f'id,title,content,embedding\ngood,t,c,"[0,0,1,0]"\nbad,t,c,"{DEEP_CELL}"\n', encoding="utf-8")
    before = snapshot_of(store)
    error = one_line_error(cli(store, "load", "corpus", str(path), "--corpus", "seval_article"), 2)
    assert "docs.csv:3" in error and "embedding: JSON nested too deeply" in error and "'bad'" in error
    assert snapshot_of(store) == before


def test_boolean_grades_are_refused_not_counted_as_one(store, tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text(json.dumps({"id": "q", "text": "t", "embedding": [1, 0, 0, 0], "relevant": ["track_order", "refund_request"],
                                "grades": [True, True]}) + "\n", encoding="utf-8")
    before = snapshot_of(store)
    error = one_line_error(cli(store, "load", "golden", str(path)), 2)
    assert "golden.jsonl:1" in error and "grades must hold numbers only" in error and "'q'" in error
    assert snapshot_of(store) == before


def test_a_sidecar_listing_an_id_twice_is_refused(store, tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "d1", "title": "t", "content": "c"}) + "\n", encoding="utf-8")
    (tmp_path / "embeddings").mkdir()
    (tmp_path / "embeddings" / "docs.jsonl").write_text(
        json.dumps({"_id": "d1", "embedding": [1, 0, 0, 0]}) + "\n" + json.dumps({"_id": "d1", "embedding": [0, 1, 0, 0]}) + "\n")
    before = snapshot_of(store)
    error = one_line_error(cli(store, "load", "corpus", str(path), "--corpus", "seval_article"), 2)
    assert "embeddings/docs.jsonl:2" in error and "'d1' is listed twice (first on line 1)" in error
    assert snapshot_of(store) == before


@pytest.mark.parametrize(("args", "option"), [
    (["evaluate", "--k", "99999999999999999999"], "every k"),
    (["evaluate", "--depth", "99999999999999999999"], "--depth"),
    (["evaluate", "--rrf-k", "99999999999999999999"], "--rrf-k"),
    (["diagnose", "money_back", "--k", "99999999999999999999"], "every k"),
    (["init", "--dimension", "99999999"], "--dimension"),
    (["init", "--knn-depth", "0"], "--knn-depth"),
    (["init", "--knn-ef", "99999999999"], "--knn-ef"),
    (["init", "--dimension", "0"], "--dimension"),
    (["evaluate", "--floor", "nan"], "--floor"),
    (["evaluate", "--weights", "nan,inf"], "--weights"),
    (["watch", "set", "--floor", "nan"], "--floor"),
    (["diagnose", "money_back", "--floor", "inf"], "--floor"),
    (["tune", "--force", "--param", "knn_ef", "--values", "0"], "--values for knn_ef"),
    (["tune", "--force", "--param", "knn_ef", "--values", "100000"], "--values for knn_ef"),
    (["tune", "--force", "--param", "floor", "--values", "1,nan"], "--values for floor"),
    (["runs", "list", "--limit", "99999999999999999999"], "--limit"),
])
def test_a_numeric_option_out_of_range_is_refused_in_one_line_naming_it(store, args, option):
    before = snapshot_of(store)
    error = one_line_error(cli(store, *args), 2)
    assert option in error, error
    assert snapshot_of(store) == before
