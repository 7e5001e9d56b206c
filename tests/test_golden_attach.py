"""A golden set the user keeps in a table of their own, used in place (`golden attach`): never copied,
never written, read through its fields at every run; what the harness keeps of it (splits, computed
embeddings) lives on its side; every command that reads a golden set works with it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import Question, Settings, connect, evaluate
from surreal_eval.errors import InputError, Rejected
from surreal_eval.golden.files import load_golden
from surreal_eval.load.embedders import OpenAIEmbedder
from surreal_eval.golden.attach import attach_golden, detach_golden, golden_sets, list_dangling
from surreal_eval.present.cli import app
from surreal_eval.store.golden import golden_set
from surreal_eval.runs.diagnose import diagnose
from surreal_eval.runs.tune import assign_splits, tune
from surreal_eval.runs.watch import set_watch
from surreal_eval.load.bulk import record_ingest
from surreal_eval.runs.watch import drain_ingests
from surreal_eval.analysis.slices import slices
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.analysis.gate import gate

from .conftest import snapshot
from .test_embedders import endpoint  # noqa: F401 - the local /v1/embeddings fixture

runner = CliRunner()


def question_table(db) -> dict:
    """The user's question table: its definition and every row."""
    return {"info": db.value("INFO FOR TABLE question"), "rows": db.value("SELECT * FROM question ORDER BY id")}


def test_the_users_table_is_read_in_place_never_written_and_an_edited_label_counts_at_the_next_run(lesson):
    before = question_table(lesson)
    first = evaluate(lesson, ks=[3], retrievers=["vector"], per_question=True)
    assert first.params["golden"] == "question" and first.golden["table"] == "question" and first.questions == 8
    assert question_table(lesson) == before  # a run reads it, never writes it
    assert lesson.value("SELECT VALUE id FROM seval_question") == []  # nothing was copied
    # the user relabels one question in their own table: the next run scores the new label
    lesson.query("UPDATE question:where_parcel SET relevant = [article:return_item]")
    second = evaluate(lesson, ks=[3], retrievers=["vector"], per_question=True)
    assert second.golden["fingerprint"] != first.golden["fingerprint"]
    (row,) = [r for r in second.per_question if r.question == "question:where_parcel"]
    assert row.relevant == ["article:return_item"]


@pytest.mark.parametrize(("setup", "args", "says"), [
    ("", ["nowhere", "--text", "text", "--relevant", "relevant"], "table nowhere does not exist"),
    ("", ["seval_question", "--text", "text", "--relevant", "relevant"], "is the harness's own"),
    ("", ["article", "--text", "content", "--relevant", "relevant"], "attached as a corpus"),
    ("", ["question", "--text", "text", "--relevant", "bad-field"], "not a valid identifier"),
    ("", ["question", "--text", "missing", "--relevant", "relevant"], "has no text in field missing (and 7 more)"),
    ("", ["question", "--text", "text", "--relevant", "nothing"], "has no labels in field nothing (and 7 more)"),
    ("UPDATE question:signin SET grades = [1]", ["question", "--text", "text", "--relevant", "relevant", "--grades", "grades"],
     "question:signin of question has grades in field grades that are not one positive number per label"),
    ("DEFINE TABLE faq SCHEMALESS; CREATE faq:a SET q = 'refund', gold = [article:refund_request], vec = [1.0, 0.0]",
     ["faq", "--text", "q", "--relevant", "gold", "--embedding", "vec"], "that is not 4 numbers"),
    ("DEFINE TABLE notes SCHEMALESS; CREATE notes:1 SET body = 'x'; DEFINE TABLE faq SCHEMALESS; "
     "CREATE faq:a SET q = 'refund', gold = [notes:1]", ["faq", "--text", "q", "--relevant", "gold"],
     "faq:a of faq is labelled with notes:1, a record of table notes: the labels name another table than the corpus"),
    ("DEFINE TABLE faq SCHEMALESS; CREATE faq:a SET q = 'refund', gold = ['refund_request']", ["faq", "--text", "q", "--relevant", "gold"],
     "is labelled with refund_request"),
])
def test_golden_attach_refusals_are_one_line_exit_2_and_change_nothing(tmp_path, setup, args, says):
    store = tmp_path / "store"
    url = f"surrealkv://{store}"
    assert runner.invoke(app, ["--url", url, "init", "--demo"]).exit_code == 0
    with connect(Settings(url=url)) as db:
        if setup:
            db.query(setup)
        before = snapshot(db)
    result = runner.invoke(app, ["--url", url, "golden", "attach", *args])
    assert result.exit_code == 2, result.output
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    with connect(Settings(url=url)) as db:
        assert snapshot(db) == before


def test_split_tune_diagnose_slices_compare_gate_and_watch_read_an_attached_golden_set(lesson):
    before = question_table(lesson)
    assert assign_splits(lesson, dev_fraction=0.5, golden="question") == {"dev": 4, "test": 4}
    kept = lesson.value("SELECT VALUE [record::id(id)[0], split] FROM seval_question_extra ORDER BY id")
    assert len(kept) == 8 and {split for _, split in kept} == {"dev", "test"}
    assert question_table(lesson) == before  # the splits live on the harness's side
    tuned = tune(lesson, param="floor", values=[0, 3], metric="recall@3", retriever="hybrid_floor", ks=[3])
    assert tuned.report.params["split"] == "test" and tuned.report.questions == 4 and tuned.report.params["golden"] == "question"
    found = diagnose(lesson, "money_back", k=3)
    assert found.question == "question:money_back" and {lab["id"] for lab in found.labels} == {"article:refund_request",
                                                                                                 "article:cancel_subscription"}
    a = evaluate(lesson, ks=[3], label="a")
    lesson.query("UPDATE article:track_order SET embedding = [0.9, 0.0, 0.0, 0.1]")  # the user's ingest moved a document
    b = evaluate(lesson, ks=[3], label="b")
    by_category = {row.value: row for row in slices(lesson, b.run, metric="recall@3", by="category") if row.retriever == "vector"}
    assert set(by_category) == {"billing", "developer", "orders", "sign-in"}  # read from the user's own field
    comparison = compare_runs(lesson, a.run, b.run, metrics=["recall@3"], retrievers=["vector"])
    assert "question:where_parcel" in [d.question for d in comparison.rows[0].broken]
    verdict = gate(lesson, baseline=a.run, candidate=b.run, metric="recall@3")
    vector = next(c for c in verdict.checks if c.retriever == "vector")  # the moved document costs vector two questions
    assert (vector.n, vector.baseline, vector.drop) == (8, 0.875, pytest.approx(1 / 6))
    assert {d.question for d in vector.broken} == {"question:where_parcel", "question:signin"}
    assert verdict.passed and "with 2 questions differing no drop can reach p < 0.05" in vector.reason  # 8 questions: not significant
    set_watch(lesson, ks=[1, 3])
    record_ingest(lesson, corpus="article", documents=0, source="the user's ingest")
    (done,) = drain_ingests(lesson).evaluated
    run = done.run
    assert run is not None and done.error is None
    assert lesson.value("SELECT VALUE params.golden FROM ONLY type::record($r)", {"r": run}) == "question"
    assert question_table(lesson) == before


def test_without_an_embedding_field_the_embedder_embeds_each_question_and_again_when_its_text_changed(lesson, endpoint):
    lesson.query("DEFINE TABLE faq SCHEMAFULL; DEFINE FIELD ask ON faq TYPE string; DEFINE FIELD gold ON faq TYPE array<record<article>>;"
                 "CREATE faq:refund SET ask = 'money back for my order', gold = [article:refund_request];"
                 "CREATE faq:login SET ask = 'locked out of my account', gold = [article:account_locked];")
    for _ in range(3):
        endpoint.then({"dim": 4})
    with OpenAIEmbedder(endpoint.url, "test-embed", backoff=0.01, timeout=5.0) as embedder:
        report = attach_golden(lesson, "faq", text="ask", relevant="gold", embedder=embedder)
        assert (report.questions, report.embedded, report.unembedded) == (2, 2, 0)
        run = evaluate(lesson, ks=[1], retrievers=["vector", "bm25"], params={"golden": "faq"})
        assert run.questions == 2
        lesson.query("UPDATE faq:refund SET ask = 'I want a refund'")
        with pytest.raises(Rejected, match="question faq:refund of faq has no embedding, which the vector retrievers need: run "
                                           "`surreal-eval golden attach` again"):
            evaluate(lesson, ks=[1], retrievers=["vector"], params={"golden": "faq"})
        assert evaluate(lesson, ks=[1], retrievers=["bm25"], params={"golden": "faq"}).questions == 2  # BM25 needs none
        again = attach_golden(lesson, "faq", text="ask", relevant="gold", embedder=embedder)
        assert (again.again, again.embedded) == (True, 1)  # only the question whose text changed
    assert [s.inputs for s in endpoint.seen] == [["locked out of my account", "money back for my order"], ["I want a refund"]]
    assert evaluate(lesson, ks=[1], retrievers=["vector"], params={"golden": "faq"}).questions == 2
    assert "ask" in lesson.value("INFO FOR TABLE faq")["fields"] and "embedding" not in lesson.value("INFO FOR TABLE faq")["fields"]


def test_with_several_golden_sets_holding_questions_a_run_names_them_and_golden_chooses(lesson):
    load_golden(lesson, [Question(id="mine", text="parcel", embedding=[0.0, 0.1, 0.9, 0.0], relevant=["track_order"])],
                label_table="article")
    with pytest.raises(Rejected, match=r"several golden sets hold questions \(question, seval_question\): choose one with --golden"):
        evaluate(lesson, ks=[1])
    assert evaluate(lesson, ks=[1], params={"golden": "seval_question"}).questions == 1
    assert evaluate(lesson, ks=[1], params={"golden": "question"}).questions == 8
    with pytest.raises(Rejected, match="no golden set nowhere: the golden sets are question, seval_question"):
        evaluate(lesson, ks=[1], params={"golden": "nowhere"})


def test_detach_forgets_the_set_and_what_the_harness_kept_but_not_the_table_or_its_runs(lesson):
    assign_splits(lesson, golden="question")
    run = evaluate(lesson, ks=[1])
    before = question_table(lesson)
    assert detach_golden(lesson, "question") == 8
    assert question_table(lesson) == before
    assert lesson.value("SELECT VALUE id FROM seval_question_extra") == []
    assert [g["name"] for g in golden_sets(lesson)] == ["seval_question"]
    assert lesson.value("RETURN fn::seval::is_finished_run(type::record($r))", {"r": run.run})
    with pytest.raises(InputError, match="question is not an attached golden set"):
        detach_golden(lesson, "question")


def test_golden_list_and_dangling_through_the_cli(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert runner.invoke(app, ["--url", url, "init", "--demo"]).exit_code == 0
    listed = json.loads(runner.invoke(app, ["--url", url, "golden", "list", "--json"]).stdout)
    assert [(g["name"], g["attached"], g["questions"]) for g in listed] == [("seval_question", False, 0), ("question", True, 8)]
    clean = runner.invoke(app, ["--url", url, "golden", "dangling"])
    assert clean.exit_code == 0 and "every label of question names a record that exists" in clean.stdout
    with connect(Settings(url=url)) as db:
        db.query("DELETE question:signin; UPDATE question:two_factor SET relevant = [article:enable_2fa];"
                 "REMOVE FIELD relevant ON question; DEFINE FIELD relevant ON question TYPE array<record<article>>; DELETE article:enable_2fa")
        assert list_dangling(db, golden_set(db, "question")) == [{"question": "question:two_factor", "label": "article:enable_2fa"}]
    found = runner.invoke(app, ["--url", url, "golden", "dangling"])
    assert "question:two_factor -> article:enable_2fa" in found.stdout
    assert "1 labels of 1 questions of question name records that no longer exist" in found.stdout
    refused = runner.invoke(app, ["--url", url, "evaluate", "--k", "1"])
    assert refused.exit_code == 2 and "question:two_factor is labelled with article:enable_2fa, which no longer exists" in refused.stderr
    counted = runner.invoke(app, ["--url", url, "evaluate", "--k", "1", "--dangling-labels", "miss", "--json"])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["golden"]["dangling"] == 1
