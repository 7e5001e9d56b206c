"""Provenance beside every number (means per question source, real first with the gap to real, in slices,
compare, evaluate and the report; stale labels in the report) and the round trip of `golden export`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import evaluate, export_golden, import_seed, write_report
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.analysis.sources import run_source_means, source_means
from surreal_eval.errors import InputError, Rejected
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_golden
from surreal_eval.golden.labels import add_label
from surreal_eval.load.readers import read_questions
from surreal_eval.present.cli import app

from .conftest import fresh_db, lesson_rows

runner = CliRunner()

#: Question -> source on the seed's eight questions: two synthetic, two click, the rest real (one not set).
SOURCES = {"money_back": "real", "new_card": "synthetic", "rate_limit": "click", "send_back": "real",
           "signin": "synthetic", "stop_plan": "click", "two_factor": None, "where_parcel": "real"}


@pytest.fixture
def mixed(seeded):
    for question, source in SOURCES.items():
        seeded.query("UPDATE type::record('seval_question', $q) SET source = $s", {"q": question, "s": source})
    return seeded


def recall(run, retriever: str, k: int) -> dict[str, float]:
    return {r.question.split(":", 1)[1]: r.recall for r in run.per_question if r.retriever == retriever and r.k == k}


def test_source_means_put_real_first_and_the_gap_beside_each_other_source():
    rows = [{"retriever": "bm25", "source": s, "metrics": {"recall": v}}
            for s, v in [("synthetic", 1.0), ("synthetic", 0.0), (None, 1.0), ("real", 0.5), ("click", 0.0)]]
    found = source_means(rows, "recall")
    assert [(m.source, m.questions, m.mean) for m in found] == [("real", 2, 0.75), ("click", 1, 0.0), ("synthetic", 2, 0.5)]
    assert [m.gap for m in found] == [None, pytest.approx(-0.75), pytest.approx(-0.25)]
    assert found[1].low == found[1].high == 0.0 and found[2].low == 0.0 and found[2].high == 1.0
    assert source_means([r for r in rows if r["source"] in ("real", None)], "recall") == []  # one source: nothing


def test_a_runs_means_per_source_match_the_per_question_scores(mixed):
    run = evaluate(mixed, ks=[3], retrievers=["vector", "bm25"], per_question=True)
    found = run_source_means(mixed, run.run, "recall@3")
    for retriever in ("vector", "bm25"):
        scores = recall(run, retriever, 3)
        mine = {m.source: m for m in found if m.retriever == retriever}
        assert list(mine) == ["real", "click", "synthetic"]
        for source, m in mine.items():
            values = [v for q, v in scores.items() if (SOURCES[q] or "real") == source]
            assert m.questions == len(values) and m.mean == pytest.approx(sum(values) / len(values))
            assert m.low <= m.mean <= m.high
        assert mine["click"].gap == pytest.approx(mine["click"].mean - mine["real"].mean)


def test_unlabelled_questions_are_in_no_source_mean(mixed):
    mixed.query("UPDATE seval_question:send_back SET relevant = [], grades = []")
    run = evaluate(mixed, ks=[3], retrievers=["bm25"])
    (real,) = [m for m in run_source_means(mixed, run.run, "recall@3") if m.source == "real"]
    assert real.questions == 3  # money_back, two_factor (not set), where_parcel


def test_compare_gives_b_minus_a_per_source(mixed):
    before = evaluate(mixed, ks=[3], retrievers=["vector"], per_question=True)
    mixed.query("UPDATE seval_question:rate_limit SET embedding = [0.0, 0.0, 0.0, 1.0]")
    after = evaluate(mixed, ks=[3], retrievers=["vector"], per_question=True)
    c = compare_runs(mixed, before.run, after.run, metrics=["recall@3"])
    by = {d.source: d for d in c.by_source}
    assert list(by) == ["real", "click", "synthetic"]
    a, b = recall(before, "vector", 3), recall(after, "vector", 3)
    for source, d in by.items():
        mine = [q for q in a if (SOURCES[q] or "real") == source]
        assert d.questions == len(mine)
        assert d.difference == pytest.approx(sum(b[q] - a[q] for q in mine) / len(mine))
        assert (d.mean_a, d.mean_b) == (pytest.approx(sum(a[q] for q in mine) / len(mine)), pytest.approx(sum(b[q] for q in mine) / len(mine)))
    shown = runner_compare(mixed, before.run, after.run)
    assert "recall@3 by question source" in shown


def runner_compare(db, a: str, b: str) -> str:
    from io import StringIO

    from rich.console import Console

    from surreal_eval.present.analysis_tables import show_comparison

    buffer = StringIO()
    show_comparison(Console(file=buffer, width=300), compare_runs(db, a, b, metrics=["recall@3"]))
    return buffer.getvalue()


def test_the_report_shows_every_source_side_by_side_and_marks_stale_labels(mixed, tmp_path):
    evaluate(mixed, ks=[3], retrievers=["vector"])
    mixed.query("UPDATE seval_article:refund_request SET content = 'something else entirely'")
    evaluate(mixed, ks=[3], retrievers=["vector"])
    page = write_report(mixed, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "by question source, side by side" in page and "gap" in page
    assert page.index("<th class=\"\">real</th>") < page.index("<th class=\"\">click</th>") < page.index("<th class=\"\">synthetic</th>")
    assert "Stale labels" in page and "1 label is stale" in page
    assert "seval_question:money_back</td><td class=\"name\">seval_article:refund_request" in page


def test_one_source_shows_no_source_table(seeded, tmp_path):
    run = evaluate(seeded, ks=[3], retrievers=["vector"])
    assert run_source_means(seeded, run.run, "recall@3") == []
    page = write_report(seeded, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "by question source" not in page and "Stale labels" not in page


# ------------------------------------------------------------------------------------------- golden export


def fingerprint(db, golden: str | None = None) -> str:
    return db.value("RETURN fn::seval::golden_fingerprint(fn::seval::golden_set($g), NONE).fingerprint", {"g": golden})


def corpus_only() -> object:
    db = fresh_db()
    load_corpus(db, lesson_rows()[0])
    return db


def label_of(db, question: str, doc: str) -> dict:
    return db.value("SELECT source, by, note, grade, added_at FROM ONLY type::record('seval_label', [type::record($q), type::record($d)])",
                    {"q": question, "d": doc})


def test_an_exported_set_loads_back_to_the_same_fingerprint_and_provenance(seeded, tmp_path):
    add_label(seeded, "money_back", "update_payment", grade=2, note="it does answer it", by="ana")
    add_label(seeded, "where_parcel", "refund_request", relevant=False, by="bo")
    seeded.query("UPDATE seval_question:signin SET source = 'click', frequency = 7, split = 'dev'")
    path = tmp_path / "golden.jsonl"
    report = export_golden(seeded, path, embeddings=True)
    assert (report.questions, report.judgments, report.label_table) == (8, 13, "seval_article")
    other = corpus_only()
    try:
        load_golden(other, read_questions(path))
        assert fingerprint(other) == fingerprint(seeded)
        for question, doc in [("money_back", "update_payment"), ("where_parcel", "refund_request"), ("money_back", "refund_request")]:
            q, d = f"seval_question:{question}", f"seval_article:{doc}"
            assert label_of(other, q, d) == label_of(seeded, q, d)
        assert other.value("SELECT source, frequency, split FROM ONLY seval_question:signin") == {
            "source": "click", "frequency": 7, "split": "dev"}
    finally:
        other.close()


class Ones:
    """An embedder of four numbers for every text: the round trip without embeddings in the file."""

    name = "ones"
    dimension = 4

    def embed(self, texts, *, progress=None):
        return [[1.0, 0.5, 0.25, 0.125] for _ in texts]


def test_without_embeddings_the_load_needs_an_embedder_and_the_fingerprint_is_the_same(seeded, tmp_path):
    path = tmp_path / "golden.jsonl"
    export_golden(seeded, path)
    assert "embedding" not in path.read_text(encoding="utf-8")
    other = corpus_only()
    try:
        with pytest.raises(InputError, match="without an embedding"):
            load_golden(other, read_questions(path))
        load_golden(other, read_questions(path), embedder=Ones())
        assert fingerprint(other) == fingerprint(seeded)  # the fingerprint reads no embedding
    finally:
        other.close()


def test_an_attached_set_exports_with_the_labels_added_here_marked_harness(lesson, tmp_path):
    add_label(lesson, "money_back", "update_payment", grade=2, by="cy", note="found while diagnosing")
    path = tmp_path / "faq.jsonl"
    report = export_golden(lesson, path)
    assert (report.golden, report.harness_labels, report.label_table) == ("question", 1, "article")
    (line,) = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if '"money_back"' in x]
    assert line["relevant"]["update_payment"] == 2
    assert line["provenance"]["update_payment"] == {**line["provenance"]["update_payment"],
                                                    "source": "human", "by": "cy", "origin": "harness"}
    # loaded into the harness's own set of a database with the same corpus: the same questions and labels
    other = fresh_db()
    try:
        import_seed(other)
        other.query("DELETE seval_golden:question")  # the corpus only: the questions come from the export
        load_golden(other, read_questions(path), label_table="article", embedder=Ones())
        mine = {str(r["id"].id): r for r in lesson.value("RETURN fn::seval::golden_rows(fn::seval::golden_set('question'), NONE, NONE)")}
        loaded = {str(r["id"].id): r for r in other.value("RETURN fn::seval::golden_rows(fn::seval::golden_set('seval_question'), NONE, NONE)")}
        assert mine.keys() == loaded.keys()
        for key, row in mine.items():
            assert [str(d) for d in row["relevant"]] == [str(d) for d in loaded[key]["relevant"]]
            assert row["grades"] == loaded[key]["grades"] and row["text"] == loaded[key]["text"]
        kept = label_of(other, "seval_question:money_back", "article:update_payment")
        assert (kept["source"], kept["by"], kept["note"]) == ("human", "cy", "found while diagnosing")
    finally:
        other.close()


def test_export_refusals_are_one_line_and_write_nothing(seeded, tmp_path):
    path = tmp_path / "there.jsonl"
    path.write_text("kept\n", encoding="utf-8")
    with pytest.raises(InputError, match="the file exists: pass --force"):
        export_golden(seeded, path)
    assert path.read_text(encoding="utf-8") == "kept\n"
    with pytest.raises(Rejected, match="no golden set nowhere"):
        export_golden(seeded, tmp_path / "new.jsonl", golden="nowhere")
    assert not (tmp_path / "new.jsonl").exists()
    export_golden(seeded, path, force=True)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 8
    assert [p.name for p in tmp_path.iterdir()] == ["there.jsonl"]  # no temporary file left


def test_cli_golden_export_and_its_refusals(tmp_path):
    url = ["--url", f"surrealkv://{tmp_path / 'store'}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    path = tmp_path / "golden.jsonl"
    done = runner.invoke(app, [*url, "golden", "export", str(path), "--embeddings"])
    assert done.exit_code == 0, done.output
    assert f"to {path} with embeddings" in done.stdout and f"load golden {path} --corpus article" in done.stdout
    again = runner.invoke(app, [*url, "golden", "export", str(path)])
    assert again.exit_code == 2 and len(again.stderr.strip().splitlines()) == 1 and "--force" in again.stderr
    unknown = runner.invoke(app, [*url, "golden", "export", str(tmp_path / "x.jsonl"), "--golden", "nowhere"])
    assert unknown.exit_code == 2 and len(unknown.stderr.strip().splitlines()) == 1 and "no golden set nowhere" in unknown.stderr


def test_cli_evaluate_and_slices_print_the_means_per_source_real_first(tmp_path):
    from surreal_eval import HarnessConfig, Settings, connect, import_harness

    from .conftest import seed_own

    store = f"surrealkv://{tmp_path / 'store'}"
    db = connect(Settings(url=store))
    try:
        import_harness(db, HarnessConfig(dimension=4))
        seed_own(db)
        db.query("UPDATE seval_question SET source = IF record::id(id) IN ['signin', 'new_card'] { 'synthetic' } ELSE { 'real' }")
    finally:
        db.close()
    done = runner.invoke(app, ["--url", store, "evaluate", "--k", "1,5"])
    assert done.exit_code == 0, done.output
    shown = done.stdout[done.stdout.index("recall@5 by question source"):]
    assert "gap" in shown and shown.index("real") < shown.index("synthetic")
    sliced = runner.invoke(app, ["--url", store, "slices", "latest", "--metric", "recall@5"])
    assert sliced.exit_code == 0 and "recall@5 by question source" in sliced.stdout
