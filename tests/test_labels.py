"""Labels found while looking (`golden label`), their provenance, the history of a golden set, stale
labels, and questions with no judgment (ranked, left out of every mean)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import Question, Settings, connect, evaluate
from surreal_eval.analysis.compare import compare_runs
from surreal_eval.errors import InputError, PermissionDenied, Rejected
from surreal_eval.golden.files import load_golden
from surreal_eval.golden.labels import add_label, golden_history, stale_labels
from surreal_eval.present.cli import app
from surreal_eval.store.record_ids import record_str, to_record

from .conftest import as_evaluator, assert_cli_refuses_the_evaluator, demo_tables, evaluator_store, peak_memory_mb, snapshot

runner = CliRunner()


def provenance(db, question: str, doc: str) -> dict:
    return db.value("SELECT source, by, note, grade, origin, digest, added_at FROM ONLY type::record('seval_label', [type::record($q), type::record($d)])",
                    {"q": question, "d": doc})


def test_a_load_keeps_where_each_label_came_from_and_the_digest_of_its_document(seeded):
    kept = seeded.value("SELECT VALUE [source, origin, digest != NONE] FROM seval_label")
    assert len(kept) == 11 and set(map(tuple, kept)) == {("file", "set", True)}
    assert {c["action"] for c in seeded.value("SELECT action FROM seval_golden_change")} == {"label-seen"}


def test_a_label_added_to_the_harnesss_own_set_goes_into_its_row_and_the_next_run_scores_it(seeded):
    before = evaluate(seeded, ks=[3], retrievers=["vector"], per_question=True)
    done = add_label(seeded, "money_back", "update_payment", note="it does answer it", by="ana")
    assert (done.question, done.doc, done.action) == ("seval_question:money_back", "seval_article:update_payment", "label-added")
    assert seeded.value("SELECT VALUE relevant FROM ONLY seval_question:money_back")[-1].id == "update_payment"
    kept = provenance(seeded, "seval_question:money_back", "seval_article:update_payment")
    assert (kept["source"], kept["by"], kept["note"], kept["origin"]) == ("human", "ana", "it does answer it", "set")
    after = evaluate(seeded, ks=[3], retrievers=["vector"], per_question=True)
    assert after.golden["fingerprint"] != before.golden["fingerprint"]
    (row,) = [r for r in after.per_question if r.question == "seval_question:money_back"]
    assert "seval_article:update_payment" in row.relevant and row.precision == pytest.approx(1.0)
    # compare names the label added between the two runs: why the fingerprint changed
    changes = compare_runs(seeded, before.run, after.run).label_changes
    assert [(c.action, c.question, c.doc, c.by, c.note) for c in changes] == [
        ("label-added", "seval_question:money_back", "seval_article:update_payment", "ana", "it does answer it")]
    add_label(seeded, "money_back", "track_order", relevant=False, note="about parcels", by="ana")
    assert "seval_article:track_order" in [str(r.table_name) + ":" + str(r.id) for r in seeded.value(
        "SELECT VALUE nonrelevant FROM ONLY seval_question:money_back")]
    assert [c.action for c in golden_history(seeded)[1]][-2:] == ["label-added", "judged-not-relevant"]


def test_a_label_graded_again_takes_the_new_grade_and_a_new_time(seeded):
    """The provenance row is replaced whole on a regrade: it used to lose added_at and be refused ("Couldn't coerce")."""
    add_label(seeded, "money_back", "update_payment", grade=2, by="ana")
    first = provenance(seeded, "seval_question:money_back", "seval_article:update_payment")
    done = add_label(seeded, "money_back", "update_payment", grade=1, by="bo")
    assert done.action == "grade-changed"
    row = seeded.value("SELECT relevant, grades FROM ONLY seval_question:money_back")
    assert row["grades"][[str(r.id) for r in row["relevant"]].index("update_payment")] == 1.0
    again = provenance(seeded, "seval_question:money_back", "seval_article:update_payment")
    assert again["by"] == "bo" and again["added_at"] >= first["added_at"]


def test_a_label_added_to_an_attached_set_is_kept_on_the_harnesss_side_and_merged_at_every_run(lesson):
    table = lesson.value("SELECT * FROM question ORDER BY id")
    add_label(lesson, "money_back", "update_payment", grade=2)
    assert lesson.value("SELECT * FROM question ORDER BY id") == table  # the user's table is never written
    kept = provenance(lesson, "question:money_back", "article:update_payment")
    assert (kept["origin"], kept["grade"]) == ("harness", 2)
    run = evaluate(lesson, ks=[3], retrievers=["vector"], per_question=True)
    (row,) = [r for r in run.per_question if r.question == "question:money_back"]
    assert row.relevant[-1] == "article:update_payment"
    # the run that first saw the set's own labels kept them as seen in the table, not the added one twice
    assert lesson.value("SELECT VALUE origin FROM seval_label WHERE question = question:money_back ORDER BY doc") == [
        "set", "set", "harness"]


@pytest.mark.parametrize(("question", "doc", "options", "says"), [
    ("nowhere", "track_order", {}, "no question seval_question:nowhere in the golden set seval_question"),
    ("money_back", "gone", {}, "no record seval_article:gone"),
    ("money_back", "refund_request", {"grade": 2}, "already labelled with seval_article:refund_request at grade 2"),
    ("money_back", "track_order", {"grade": 0}, "--grade must be a number above 0"),
    ("money_back", "track_order", {"golden": "nowhere"}, "no golden set nowhere"),
])
def test_golden_label_refusals_are_one_line_and_change_nothing(seeded, question, doc, options, says):
    before = snapshot(seeded)
    with pytest.raises((InputError, Rejected), match=says):
        add_label(seeded, question, doc, **options)
    assert snapshot(seeded) == before


def test_an_evaluator_may_not_label_and_the_cli_exits_5_changing_nothing(tmp_path):
    url = evaluator_store(tmp_path / "store")
    assert_cli_refuses_the_evaluator(url, ["golden", "label", "money_back", "track_order"])
    with pytest.raises(PermissionDenied):
        with as_evaluator(url) as ci:
            add_label(ci, "money_back", "track_order")


def test_a_document_rewritten_since_it_was_labelled_is_stale_and_the_run_counts_it(seeded, tmp_path):
    evaluate(seeded, ks=[1])
    assert stale_labels(seeded)[1] == []
    seeded.query("UPDATE seval_article:refund_request SET content = 'Store credit is issued within a week.'")
    run = evaluate(seeded, ks=[1])
    assert run.golden["stale"] == 1
    (stale,) = stale_labels(seeded)[1]
    assert (stale.question, stale.doc, stale.source) == ("seval_question:money_back", "seval_article:refund_request", "file")
    assert stale.changed_seen_at is not None and stale.changed_seen_at >= stale.labelled_at


def test_a_run_finds_stale_and_dangling_labels_from_the_corpus_rows_it_read_as_reading_each_document_finds_them(seeded):
    # a run reads every corpus record's digest once; the labels' checks take theirs from those rows rather than read
    # each labelled document again (which reads all of it, its embedding too)
    evaluate(seeded, ks=[1])
    ids = seeded.value("SELECT VALUE id FROM seval_question")
    then = seeded.value("RETURN fn::seval::corpus_rows('seval_article')")
    seeded.query("UPDATE seval_article:refund_request SET content = 'Store credit is issued within a week.'")
    read = seeded.value("RETURN fn::seval::stale_labels('seval_question', $ids)", {"ids": ids})
    given = seeded.value("RETURN fn::seval::stale_labels('seval_question', $ids, fn::seval::corpus_rows('seval_article'))", {"ids": ids})
    assert [r["doc"] for r in read] == [to_record("refund_request", "seval_article")] and given == read
    # the digests are the rows': by the rows read before the rewrite, nothing is stale
    assert seeded.value("RETURN fn::seval::stale_labels('seval_question', $ids, $rows)", {"ids": ids, "rows": then}) == []
    rows = seeded.value("RETURN fn::seval::golden_rows(fn::seval::golden_set(NONE), NONE, NONE)")
    seeded.query("DELETE seval_article:refund_request")
    gone = [{"question": to_record("money_back", "seval_question"), "label": to_record("refund_request", "seval_article")}]
    assert seeded.value("RETURN fn::seval::dangling_labels($rows)", {"rows": rows}) == gone
    assert seeded.value("RETURN fn::seval::dangling_labels($rows, fn::seval::corpus_rows('seval_article').map(|$r| $r[0]))",
                        {"rows": rows}) == gone
    # a record among those given is taken to exist, unread
    assert seeded.value("RETURN fn::seval::dangling_labels($rows, $present)", {"rows": rows, "present": [r[0] for r in then]}) == []


@pytest.mark.parametrize("judgments", ["human", "human+model"])
@pytest.mark.parametrize("fixture", ["seeded", "lesson"])
def test_a_runs_checks_read_each_question_without_its_embedding_as_reading_it_whole_then_leaving_it_out(fixture, judgments, request):
    # the run's checks need only whether a question has an embedding: the harness's own set is read without them
    # (500 questions: 0.03 against 0.15 s), any other (attached, or with a model's judgments merged) read whole first
    db = request.getfixturevalue(fixture)
    corpus, golden = demo_tables(db)
    db.query("CREATE seval_model_judgment CONTENT { golden: $g, question: type::record($g, 'money_back'), "
             "doc: type::record($c, 'update_payment'), grade: 3, model: 'm', prompt: 'p' }", {"g": golden, "c": corpus})
    g = {**db.value("RETURN fn::seval::golden_set($g)", {"g": golden}), "judgments": judgments}
    whole = db.value("RETURN fn::seval::golden_rows($g, NONE, NONE)", {"g": g})
    bare = db.value("RETURN fn::seval::golden_rows_unembedded($g)", {"g": g})
    assert bare == [{**{k: v for k, v in r.items() if k != "embedding"}, "embedded": r.get("embedding") is not None} for r in whole]
    assert all(r["embedded"] for r in bare) and len(bare) == 8
    merged = [r for r in bare if str(r["id"].id) == "money_back"][0]
    assert (to_record("update_payment", corpus) in merged["relevant"]) == (judgments == "human+model")


def test_seeing_thousands_of_labels_on_mem_takes_memory_in_proportion_to_them():
    # the first run of a golden set keeps a provenance row for each of its judgments; on mem:// an UPSERT that creates a
    # row costs memory in proportion to the rows written before it: 3,000 judgments (CISI has 3,114) peaked at 2.2 GB,
    # created one by one at about 160 MB. Measured in a process of its own: its peak is the labels' alone
    assert peak_memory_mb(
        "from tests.conftest import fresh_db\n"
        "db = fresh_db()\n"
        "db.query(\"FOR $i IN $ids { CREATE type::record('seval_article', 'a' + $i) CONTENT { title: 't', content: 'c', "
        "embedding: [1.0, 0.0, 0.0, 0.0] } RETURN NONE; CREATE type::record('seval_question', $i) CONTENT { text: 'q', "
        "embedding: [1.0, 0.0, 0.0, 0.0], relevant: [type::record('seval_article', 'a' + $i)] } RETURN NONE; }\", "
        "{'ids': [str(i) for i in range(3000)]})\n"
        "g = db.value(\"RETURN fn::seval::golden_set('seval_question')\")\n"
        "seen = db.value(\"RETURN fn::seval::see_labels($g, fn::seval::golden_rows($g, NONE, NONE), 'file', NONE)\", {'g': g})\n"
        "assert seen == {'seen': 3000, 'gone': 0}, seen\n"
        "db.close()\n"
    ) < 500


def test_the_cli_labels_lists_stale_labels_and_the_history(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert runner.invoke(app, ["--url", url, "init", "--demo"]).exit_code == 0
    labelled = runner.invoke(app, ["--url", url, "golden", "label", "money_back", "update_payment", "--note", "answers it",
                                   "--by", "ana"])
    assert labelled.exit_code == 0, labelled.output
    assert "question:money_back of question: article:update_payment labelled (grade 1) (label-added)" in labelled.stdout
    with connect(Settings(url=url)) as db:
        db.query("UPDATE article:track_order SET content = 'We now ship by drone.'")
    assert runner.invoke(app, ["--url", url, "evaluate", "--k", "1"]).exit_code == 0
    stale = runner.invoke(app, ["--url", url, "golden", "stale"])
    assert "question:where_parcel -> article:track_order" in stale.stdout and "1 labels of question are stale" in stale.stdout
    history = runner.invoke(app, ["--url", url, "golden", "history"])
    assert "label-added question:money_back article:update_payment (grade 1) [human, ana]: answers it" in history.stdout


def test_a_question_with_no_judgment_is_ranked_and_left_out_of_every_mean(seeded):
    labelled = evaluate(seeded, ks=[3], retrievers=["bm25", "vector"])
    load_golden(seeded, [Question(id="asked", text="when does my parcel come", embedding=[0.0, 0.1, 0.95, 0.0], relevant=[],
                                  source="click")], allow_unlabelled=True)
    run = evaluate(seeded, ks=[3], retrievers=["bm25", "vector"], per_question=True)
    assert run.questions == 9 and run.golden["unlabelled"] == 1
    assert [(r.retriever, r.recall) for r in run.results] == [(r.retriever, r.recall) for r in labelled.results]
    (row,) = [r for r in run.per_question if r.question == "seval_question:asked" and r.retriever == "vector"]
    assert not row.labelled and row.ranked[0] == "seval_article:track_order"


def test_golden_label_from_a_file_adds_every_judgment_of_jsonl_or_tsv_in_one_go(seeded, tmp_path):
    from surreal_eval.golden.labels import add_labels

    jsonl = tmp_path / "graded.jsonl"
    jsonl.write_text('{"question": "money_back", "doc": "update_payment", "grade": 2, "note": "it does", "text": "ignored"}\n'
                     '\n# a comment\n'
                     '{"question": "seval_question:money_back", "doc": "seval_article:track_order", "grade": 0}\n'
                     '{"question": "where_parcel", "doc": "return_item", "grade": null}\n')
    done = add_labels(seeded, jsonl, by="ana")
    assert (done.actions, done.unchanged, done.ungraded) == ({"label-added": 1, "judged-not-relevant": 1}, 0, 1)
    row = seeded.value("SELECT relevant, grades, nonrelevant FROM ONLY seval_question:money_back")
    assert row["relevant"][-1].id == "update_payment" and row["grades"][-1] == 2.0
    assert [d.id for d in row["nonrelevant"]] == ["track_order"]
    kept = provenance(seeded, "seval_question:money_back", "seval_article:update_payment")
    assert (kept["source"], kept["by"], kept["note"]) == ("human", "ana", "it does")
    # the same file again changes nothing: every judgment is already so
    again = add_labels(seeded, jsonl)
    assert (again.actions, again.unchanged) == ({}, 2)
    tsv = tmp_path / "graded.tsv"
    tsv.write_text("question\tdoc\tgrade\tnote\nnew_card\tcontact_support\t3\tit helps\nwhere_parcel\treturn_item\t\t\n"
                   "money_back\tupdate_payment\t2\n")
    more = add_labels(seeded, tsv)
    assert (more.actions, more.unchanged, more.ungraded) == ({"label-added": 1}, 1, 1)
    row = seeded.value("SELECT relevant, grades FROM ONLY seval_question:new_card")
    assert row["relevant"][-1].id == "contact_support" and row["grades"][-1] == 3.0


@pytest.mark.parametrize(("name", "text", "says"), [
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": 1}\n{"question": "money_back", "doc"\n',
     "a.jsonl:2: not JSON"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": -1}\n', "a.jsonl:1: grade -1"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": "high"}\n', "a.jsonl:1: grade 'high' is no number"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment"}\n', "a.jsonl:1: no grade"),
    ("a.jsonl", '[1, 2]\n', "a.jsonl:1: each line must be a JSON object"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": 1}\n{"question": "nowhere", "doc": "track_order", "grade": 1}\n',
     "a.jsonl:2: no question seval_question:nowhere in the golden set seval_question"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": 1}\n{"question": "money_back", "doc": "gone", "grade": 1}\n',
     "a.jsonl:2: no record seval_article:gone"),
    ("a.jsonl", '{"question": "money_back", "doc": "update_payment", "grade": 1}\n'
                '{"question": "seval_question:money_back", "doc": "seval_article:update_payment", "grade": 0}\n',
     "a.jsonl:2: seval_question:money_back seval_article:update_payment is judged twice (line 1 too)"),
    ("a.tsv", "money_back\tupdate_payment\n", "a.tsv:1: expected question, doc, grade"),
])
def test_golden_label_from_a_file_refuses_a_bad_line_naming_file_and_line_and_writes_nothing(seeded, tmp_path, name, text, says):
    from surreal_eval.golden.labels import add_labels

    path = tmp_path / name
    path.write_text(text)
    before = snapshot(seeded)
    with pytest.raises(InputError) as refused:
        add_labels(seeded, path)
    assert str(refused.value).startswith(f"{path.parent}/") and says in str(refused.value)
    assert snapshot(seeded) == before


def test_golden_label_from_a_file_refused_by_the_database_names_the_line_and_writes_nothing(lesson, tmp_path):
    """A rule only the database checks (a record of a table labels may not name) is named with its line; the rows
    before it are not written either."""
    from surreal_eval.golden.labels import add_labels

    path = tmp_path / "a.jsonl"
    path.write_text('{"question": "money_back", "doc": "article:update_payment", "grade": 1}\n'
                    '{"question": "money_back", "doc": "question:where_parcel", "grade": 1}\n')
    before = snapshot(lesson)
    with pytest.raises(InputError, match=r"a\.jsonl:2: question:where_parcel is"):
        add_labels(lesson, path)
    assert snapshot(lesson) == before


def test_the_cli_labels_from_a_file_and_refuses_in_one_line(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    assert runner.invoke(app, ["--url", url, "init", "--demo"]).exit_code == 0
    path = tmp_path / "graded.jsonl"
    path.write_text('{"question": "money_back", "doc": "update_payment", "grade": 1}\n{"question": "money_back", "doc": "track_order", "grade": 0}\n')
    done = runner.invoke(app, ["--url", url, "golden", "label", "--from-file", str(path), "--by", "ana"])
    assert done.exit_code == 0, done.output
    assert "1 judged-not-relevant, 1 label-added; 0 already so" in done.stdout
    for args, says in (([str(path)], "1:"), (["money_back", "--from-file", str(path)], "give no QUESTION, DOC or --not"),
                       (["money_back"], "needs QUESTION and DOC")):
        if args == [str(path)]:
            path.write_text('{"question": "money_back", "doc": "update_payment", "grade": "x"}\n')
            args = ["--from-file", str(path)]
        refused = runner.invoke(app, ["--url", url, "golden", "label", *args])
        assert refused.exit_code == 2 and says in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.output


def test_a_run_keeps_each_questions_labels_once_and_a_run_that_kept_them_in_every_ranking_reads_alike(seeded):
    report = evaluate(seeded, ks=[1, 3], intervals=False, per_question=True)
    run = to_record(report.run, "seval_run")
    questions = seeded.value("SELECT VALUE id FROM seval_question ORDER BY id")
    kept = seeded.value("SELECT question, relevant, grades FROM seval_run_label WHERE run = $r ORDER BY question", {"r": run})
    # one row per question, what it was scored against: the golden set's labels then; none in the ranking rows
    assert [k["question"] for k in kept] == questions
    golden = {q["id"]: (q["relevant"], q["grades"]) for q in seeded.value("SELECT id, relevant, grades FROM seval_question")}
    assert all((k["relevant"], k["grades"]) == golden[k["question"]] for k in kept)
    assert seeded.value("SELECT VALUE relevant FROM seval_ranking WHERE run = $r AND relevant != NONE", {"r": run}) == []
    labels = seeded.value("RETURN fn::seval::run_labels($r)", {"r": run})
    results = seeded.value("RETURN fn::seval::run_results($r, NONE, false)", {"r": run})
    counts = seeded.value("RETURN fn::seval::run_label_counts($r, 'bm25')", {"r": run})
    relevant = seeded.value("RETURN fn::seval::run_relevant($r, $q)", {"r": run, "q": questions[:2]})
    # the same run as a run made before kept it: its labels in every ranking row, none apart
    seeded.query("UPDATE seval_ranking SET relevant = type::record('seval_run_label', [run, question]).relevant, "
                 "grades = type::record('seval_run_label', [run, question]).grades WHERE run = $r; "
                 "DELETE seval_run_label WHERE run = $r; UPDATE $r SET labels_apart = NONE", {"r": run})
    assert seeded.value("RETURN fn::seval::run_labels($r)", {"r": run}) == labels
    assert seeded.value("RETURN fn::seval::run_results($r, NONE, false)", {"r": run}) == results
    assert seeded.value("RETURN fn::seval::run_label_counts($r, 'bm25')", {"r": run}) == counts
    assert seeded.value("RETURN fn::seval::run_relevant($r, $q)", {"r": run, "q": questions[:2]}) == relevant
    assert [len(k["relevant"]) for k in kept if k["relevant"]] == [c for c in counts]
    # and the run after it, judged alike, copies its rankings as from any run that follows
    after = evaluate(seeded, ks=[1, 3], intervals=False, per_question=True)
    assert after.retrieval.get("copied") == len(questions)
    assert [r.scores for r in after.per_question] == [r.scores for r in report.per_question]


def test_the_judgments_digests_are_read_once_kept_and_dropped_by_any_change_to_the_judgments(seeded, tmp_path):
    def kept():
        return seeded.value("SELECT VALUE pairs FROM ONLY seval_label_pairs:seval_question")

    def pairs():  # read from every judgment, as a run read them before they were kept
        made = seeded.value("SELECT doc, digest FROM seval_label WHERE golden = 'seval_question' AND digest != NONE")
        return sorted({(record_str(m["doc"]), m["digest"]) for m in made})

    assert kept() is None
    evaluate(seeded, ks=[1])
    assert sorted((record_str(d), g) for d, g in kept()) == pairs()
    # a rewritten document is found stale through the kept pairs, as through every judgment
    seeded.query("UPDATE seval_article:refund_request SET content = 'Store credit is issued within a week.'")
    assert evaluate(seeded, ks=[1]).golden["stale"] == 1
    # any change to the judgments drops them; the next run keeps them again, the new judgment's with them
    add_label(seeded, "money_back", "update_payment", note="it does answer it", by="ana")
    assert kept() is None
    evaluate(seeded, ks=[1])
    assert sorted((record_str(d), g) for d, g in kept()) == pairs()
    assert "seval_article:update_payment" in {record_str(d) for d, _ in kept()}
    # an evaluator's run reads them without keeping them (it may write nothing but its runs)
    url = evaluator_store(tmp_path / "store")
    with as_evaluator(url) as db:
        assert evaluate(db, ks=[1]).golden["stale"] == 0
        assert db.value("SELECT VALUE id FROM seval_label_pairs") == []


def test_a_label_that_is_no_record_or_names_a_table_labels_may_not_name_is_found_and_none_else(db):
    def misplaced(relevant):
        rows = [{"id": to_record("seval_question:a", "seval_question"), "relevant": relevant}]
        return [(record_str(r["question"]), r["label"] if isinstance(r["label"], str) else record_str(r["label"]))
                for r in db.value("RETURN fn::seval::misplaced_labels($rows)", {"rows": rows})]

    article = to_record("seval_article:x", "seval_article")
    assert misplaced([article]) == []
    assert misplaced(["x", article]) == [("seval_question:a", "x")]
    assert misplaced([article, to_record("notes:1", "notes")]) == [("seval_question:a", "notes:1")]
