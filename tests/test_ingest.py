"""Bulk ingest: bounded batches, indexes built after the load, all or nothing, problems listed together."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import (
    Article,
    ConfigError,
    Database,
    HarnessConfig,
    InputError,
    Question,
    Rejected,
    Settings,
    StoreBusy,
    connect,
    evaluate,
    import_harness,
)
from surreal_eval.load import bulk
from surreal_eval.load import move, staging
from surreal_eval.store import journal as load_journal
from surreal_eval.present.cli import app
from surreal_eval.load.bulk import load_corpus, staging_tables
from surreal_eval.golden.files import load_beir, load_dataset, load_golden

from .datasets import cisi
from .conftest import build_time, fresh_db, snapshot, without_build_times
from .docs_pages import pages
from .test_loaders import beir_folder, write

CISI = cisi()  # shipped in tests/data


def doc(i, *, dim=4, content=None, **kw) -> Article:
    vector = [0.0] * dim
    vector[i % dim] = 1.0
    return Article(id=f"d{i}", title=f"Document {i}", content=content if content is not None else f"word{i} shared text", embedding=vector, **kw)


def question(qid, relevant, *, dim=4, **kw) -> Question:
    return Question(id=qid, text=f"question {qid}", embedding=[0.5] * dim, relevant=list(relevant), **kw)


class Spy:
    """Records the staging INSERTs a load sends: how many, and the rows of each."""

    def __init__(self, monkeypatch):
        self.batches: list[int] = []
        original = Database.query

        def query(db, sql, params=None, **kwargs):
            if sql.startswith("INSERT INTO seval_stage_"):
                self.batches.append(len(params["rows"]))
            return original(db, sql, params, **kwargs)

        monkeypatch.setattr(Database, "query", query)


class FakeEmbedder:
    """Embeds a text as [len, 1, 0, 0]; remembers every call."""

    name = "fake:len"

    def __init__(self, fail_on_call: int | None = None, dim: int = 4):
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call
        self.dim = dim

    def embed(self, texts):
        self.calls.append(list(texts))
        if self.fail_on_call == len(self.calls):
            raise RuntimeError("the model fell over")
        return [[float(len(t)), 1.0] + [0.0] * (self.dim - 2) for t in texts]


def bm25(db, words, table="seval_article"):
    return db.value(
        "SELECT VALUE record::id(id) FROM type::table($t) WHERE bm25_text @1,OR@ $q ORDER BY id", {"t": table, "q": words})


def knn(db, vector, table="seval_article", k=3):
    return db.value(
        f"SELECT VALUE record::id(id) FROM type::table($t) WHERE embedding <|{k},40|> $v", {"t": table, "v": vector})


# ------------------------------------------------------------------------------- bulk loading


def test_bulk_load_in_bounded_batches_then_indexes_answer(db, monkeypatch):
    spy = Spy(monkeypatch)
    docs = [doc(i) for i in range(23)]
    steps = []
    report = load_corpus(db, iter(docs), batch_size=5, progress=lambda step, done, total: steps.append((step, done)))
    assert report.loaded == 23 and report.table == "seval_article" and report.batches == 5
    assert spy.batches == [5, 5, 5, 5, 3]  # never more than batch_size rows per INSERT
    assert ("staging articles", 23) in steps and steps[-3:] == [("moving into seval_article", 23), ("building indexes", 0), ("building indexes", 1)]
    assert db.value("RETURN count(SELECT id FROM seval_article)") == 23
    assert bm25(db, "word7") == ["d7"]
    assert set(knn(db, [0.0, 1.0, 0.0, 0.0], k=3)) <= {f"d{i}" for i in range(1, 23, 4)}
    # the HNSW graph is built in one pass after the load; the BM25 index is kept up to date by the move
    building = db.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]
    assert building["status"] == "ready" and building["initial"] == 23
    assert db.value("INFO FOR INDEX seval_article_content ON seval_article")["building"]["status"] == "ready"
    assert staging_tables(db) == []


def test_loading_into_a_table_with_rows_upserts_by_id_updates_bm25_and_keeps_a_small_load_in_the_hnsw_graph(seeded):
    assert seeded.value("RETURN count(SELECT id FROM seval_article)") == 10
    replaced = Article(id="track_order", title="Where is my parcel", content="zebra crossing", embedding=[0, 0, 1, 0])
    report = load_corpus(seeded, [replaced, doc(1, metadata={"k": "v"})])
    assert report.loaded == 2
    assert seeded.value("RETURN count(SELECT id FROM seval_article)") == 11
    row = seeded.value("SELECT * OMIT id, text_digest, embedding_digest, bm25_text, written_at FROM ONLY seval_article:track_order")
    assert row == {"title": "Where is my parcel", "content": "zebra crossing", "embedding": [0.0, 0.0, 1.0, 0.0]}
    assert bm25(seeded, "zebra") == ["track_order"] and bm25(seeded, "word1") == ["d1"]
    assert "track_order" not in bm25(seeded, "carrier")  # its old text is gone from the BM25 index
    # two rows beside ten: written into the built graph, not a graph built again over every row
    assert seeded.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]["initial"] == 10
    assert knn(seeded, [0.0, 0.0, 1.0, 0.0], k=1) == ["track_order"] and knn(seeded, doc(1).embedding, k=1) == ["d1"]
    assert seeded.value("RETURN count(SELECT id FROM seval_question)") == 8  # the labels still point at it
    built = seeded.value("SELECT VALUE vector_built FROM ONLY seval_corpus:seval_article")
    load_corpus(seeded, [doc(i) for i in range(2, 14)])  # more rows than the table holds: the graph is built again
    assert seeded.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]["initial"] == 23
    assert seeded.value("SELECT VALUE vector_built FROM ONLY seval_corpus:seval_article") > built


def test_a_load_leaves_the_doc_index_it_finds_as_defined_and_defines_one_that_differs_again(seeded, monkeypatch):
    # defined again with OVERWRITE, an index is built again over every record (on CISI 87 ms of a 20-record load, on the
    # 20,000-document Debian set 1.2 s): a move leaves the table's doc index as it is when it is as surql/corpus.surql
    # defines it, and defines it again when it is not
    sent: list[str] = []
    atomic = seeded.atomic
    monkeypatch.setattr(seeded, "atomic", lambda sql, *a, **k: (sent.append(sql), atomic(sql, *a, **k))[1])
    load_corpus(seeded, [doc(1)])
    assert sent and "seval_article_doc" not in sent[-1]
    seeded.query("DEFINE INDEX OVERWRITE seval_article_doc ON seval_article FIELDS doc, position")  # as an older release might
    load_corpus(seeded, [doc(2)])
    assert "DEFINE INDEX OVERWRITE seval_article_doc ON seval_article FIELDS doc;" in sent[-1]
    assert seeded.value("INFO FOR TABLE seval_article")["indexes"]["seval_article_doc"] == "DEFINE INDEX seval_article_doc ON seval_article FIELDS doc"
    assert move._without_held_indexes("DEFINE INDEX OVERWRITE x_doc ON x FIELDS doc;\nDEFINE FIELD OVERWRITE y ON x TYPE int;",
                                      {"x_doc": "DEFINE INDEX x_doc ON x  FIELDS doc"}) == "\nDEFINE FIELD OVERWRITE y ON x TYPE int;"


def test_a_document_with_empty_text_is_kept(db):
    load_corpus(db, [doc(1, content=""), Article(id="blank", embedding=[1, 0, 0, 0])])
    assert db.value("SELECT VALUE [title, content] FROM seval_article ORDER BY id") == [["", ""], ["Document 1", ""]]


def test_any_corpus_table_is_defined_registered_and_indexed(db):
    load_corpus(db, [doc(i, doc="seval_article:x", position=i) for i in range(3)], table="seval_chunk_small")
    assert "seval_chunk_small" in db.value("SELECT VALUE record::id(id) FROM seval_corpus")
    assert bm25(db, "word2", "seval_chunk_small") == ["d2"]
    assert db.value("SELECT VALUE [doc, position] FROM ONLY seval_chunk_small:d2")[1] == 2
    with pytest.raises(ConfigError, match="seval_question exists and is not a corpus table"):
        load_corpus(db, [doc(1)], table="seval_question")
    with pytest.raises(ConfigError, match="not a valid identifier"):
        load_corpus(db, [doc(1)], table="x; REMOVE TABLE seval_article")
    with pytest.raises(ConfigError, match="too long"):
        load_corpus(db, [doc(1)], table="seval_" + "t" * 54)


# ------------------------------------------------------------------------------- all or nothing


def test_a_bad_row_in_a_later_batch_leaves_the_database_exactly_as_it_was(seeded, monkeypatch):
    spy = Spy(monkeypatch)
    before = snapshot(seeded)
    rows = [doc(i) for i in range(9)] + [doc(9, dim=3)]
    with pytest.raises(InputError, match="article 'd9': embedding has 3 values, the index expects 4"):
        load_corpus(seeded, rows, batch_size=3)
    assert spy.batches == [3, 3, 3]  # three batches were staged before the fourth failed
    assert snapshot(seeded) == before


def test_a_row_the_schema_rejects_during_the_move_rolls_everything_back(seeded, monkeypatch):
    """The Python checks skipped: the engine refuses the row inside the transaction, which had
    already removed the indexes and moved other rows; all of that is undone."""
    monkeypatch.setattr(staging.Load, "check_embedding", lambda self, kind, ident, vector: None)
    before = snapshot(seeded)
    with pytest.raises(Rejected, match="field `embedding`"):
        load_corpus(seeded, [doc(i) for i in range(6)] + [doc(6, dim=2)], batch_size=2)
    assert snapshot(seeded) == before
    assert seeded.value("INFO FOR TABLE seval_article")["indexes"].keys() >= {"seval_article_content", "seval_article_embedding"}
    assert bm25(seeded, "refund") != []


def test_a_new_table_is_not_left_behind_by_a_failed_load(db, monkeypatch):
    monkeypatch.setattr(staging.Load, "check_embedding", lambda self, kind, ident, vector: None)
    before = snapshot(db)
    with pytest.raises(Rejected):
        load_corpus(db, [doc(1), doc(2, dim=5)], table="seval_chunk_new")
    assert snapshot(db) == before


def test_an_embedder_failing_mid_load_leaves_nothing_behind(seeded):
    before = snapshot(seeded)
    docs = [Article(id=f"e{i}", content=f"text {i}") for i in range(6)]
    with pytest.raises(RuntimeError, match="fell over"):
        load_corpus(seeded, docs, batch_size=2, embedder=FakeEmbedder(fail_on_call=2))
    assert snapshot(seeded) == before


# --------------------------------------------------------------------------- moves in parts


class Parts:
    """Counts the rows of each move part (fn::seval::move_staged call) a load sends; can die after `die_after`."""

    def __init__(self, monkeypatch, die_after: int | None = None):
        self.sizes: list[int] = []
        original = Database.query

        def query(db, sql, params=None, **kwargs):
            if sql.startswith("RETURN fn::seval::move_staged"):
                if die_after is not None and len(self.sizes) == die_after:
                    raise KeyboardInterrupt("killed between two parts")
                self.sizes.append(len(params["keys"]))
            return original(db, sql, params, **kwargs)

        monkeypatch.setattr(Database, "query", query)


def journal(db) -> list:
    return db.value("SELECT VALUE record::id(id) FROM seval_ingest_journal")


def test_a_move_larger_than_a_part_commits_part_by_part_then_builds_indexes(seeded, monkeypatch):
    monkeypatch.setattr(load_journal, "MOVE_PART", 3)
    parts, steps = Parts(monkeypatch), []
    docs = [doc(i) for i in range(8)] + [Article(id="track_order", content="replaced zeppelin text", embedding=[0, 0, 1, 0])]
    load_dataset(seeded, docs, [question(f"q{i}", ["d1", "track_order"]) for i in range(4)],
                 progress=lambda step, done, total: steps.append((step, done, total)))
    assert parts.sizes == [3, 3, 3, 3, 1]  # nine documents, then four questions
    moving = [s for s in steps if s[0] == "moving into seval_article and seval_question"]
    assert moving == [("moving into seval_article and seval_question", n, 13) for n in (0, 3, 6, 9, 12, 13)]
    assert journal(seeded) == [] and staging_tables(seeded) == []
    assert seeded.value("RETURN seval_article:track_order.content") == "replaced zeppelin text"
    assert seeded.value("RETURN count(SELECT id FROM seval_article)") == 18 and seeded.value("RETURN count(SELECT id FROM seval_question)") == 12
    assert bm25(seeded, "zeppelin") == ["track_order"] and bm25(seeded, "word7") == ["d7"]


def test_what_a_load_is_given_to_do_meanwhile_runs_once_as_its_rows_are_committed_and_failing_fails_nothing(seeded, monkeypatch):
    steps, seen = [], []

    def meanwhile():
        seen.append(steps[-1])
        raise RuntimeError("meanwhile failed")

    report = load_corpus(seeded, [doc(i) for i in range(4)], meanwhile=meanwhile, progress=lambda step, done, total: steps.append((step, done, total)))
    assert report.loaded == 4 and seen == [("moving into seval_article", 0, 4)]  # the commit of one transaction in flight
    assert seeded.value("RETURN count(SELECT id FROM seval_article WHERE id IN [seval_article:d0, seval_article:d3])") == 2
    # in parts: as the transaction closing the move (after the last part) is committed
    monkeypatch.setattr(load_journal, "MOVE_PART", 3)
    steps.clear(), seen.clear()
    load_corpus(seeded, [doc(i) for i in range(10, 17)], meanwhile=meanwhile, progress=lambda step, done, total: steps.append((step, done, total)))
    assert seen == [("moving into seval_article", 7, 7)] and bm25(seeded, "word16") == ["d16"]


def test_a_failure_in_a_later_part_undoes_the_parts_already_committed(seeded, monkeypatch):
    """Parts 1 and 2 (one replacing a stored article) are committed when the engine refuses a row of
    part 3: they are undone, the indexes come back, and nothing of the load is left."""
    monkeypatch.setattr(load_journal, "MOVE_PART", 2)
    monkeypatch.setattr(staging.Load, "check_embedding", lambda self, kind, ident, vector: None)
    before = snapshot(seeded)
    parts = Parts(monkeypatch)
    # moved in key order: [d0, d1], [d2, track_order], [zz]
    docs = [Article(id="track_order", content="replaced", embedding=[0, 0, 1, 0]), *[doc(i) for i in range(3)],
            Article(id="zz", content="two values", embedding=[1, 0])]
    with pytest.raises(Rejected, match="field `embedding`"):
        load_corpus(seeded, docs)
    assert parts.sizes == [2, 2, 1]
    assert without_build_times(snapshot(seeded)) == without_build_times(before)
    assert build_time(seeded) > before["rows"]["seval_corpus"][0]["vector_built"]  # the graph is new: said so
    assert seeded.value("INFO FOR TABLE seval_article")["indexes"].keys() >= {"seval_article_content", "seval_article_embedding"}
    assert bm25(seeded, "refund") != []


def test_a_new_table_whose_move_fails_in_a_later_part_is_removed(db, monkeypatch):
    monkeypatch.setattr(load_journal, "MOVE_PART", 2)
    monkeypatch.setattr(staging.Load, "check_embedding", lambda self, kind, ident, vector: None)
    before = snapshot(db)
    with pytest.raises(Rejected):
        load_corpus(db, [doc(1), doc(2), doc(3), doc(4, dim=5)], table="seval_chunk_new")
    assert snapshot(db) == before


def test_a_move_killed_between_parts_is_undone_when_the_store_opens_again(tmp_path, monkeypatch):
    url = f"surrealkv://{tmp_path / 'store'}"
    db = connect(Settings(url=url))
    import_harness(db, HarnessConfig(dimension=4))
    load_corpus(db, [doc(i) for i in range(4)])
    load_golden(db, [question("q0", ["d0"])])
    before = snapshot(db)
    with monkeypatch.context() as patch:
        patch.setattr(load_journal, "MOVE_PART", 2)
        patch.setattr(bulk, "recover_loads", lambda db, **kw: [])  # a killed process cleans nothing up
        Parts(patch, die_after=3)
        with pytest.raises(KeyboardInterrupt):
            load_dataset(db, [doc(i, content=f"new {i}") for i in range(6)], [question(f"n{i}", ["d5"]) for i in range(3)])
    assert journal(db) == ["seval_article", "seval_question"] and db.value("RETURN seval_article:d1.content") == "new 1"  # left half moved
    db.close()
    db = connect(Settings(url=url))  # an embedded store is put right as it opens
    try:
        assert without_build_times(snapshot(db)) == without_build_times(before)
        assert build_time(db) > before["rows"]["seval_corpus"][0]["vector_built"]  # the graph is new: said so
        assert bm25(db, "word1") == ["d1"] and db.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]["status"] == "ready"
    finally:
        db.close()


def test_a_load_killed_before_its_indexes_were_built_gets_them_when_the_store_opens_again(tmp_path, monkeypatch):
    url = f"surrealkv://{tmp_path / 'store'}"
    db = connect(Settings(url=url))
    import_harness(db, HarnessConfig(dimension=4))
    with monkeypatch.context() as patch:
        patch.setattr(bulk, "recover_loads", lambda db, **kw: [])

        def killed(load, table):
            raise KeyboardInterrupt("killed before the index build")

        patch.setattr(move, "_build_indexes", killed)
        with pytest.raises(KeyboardInterrupt):
            load_corpus(db, [doc(i) for i in range(5)])
    assert journal(db) == ["seval_article"]
    db.close()
    db = connect(Settings(url=url))
    try:
        assert journal(db) == [] and staging_tables(db) == []
        assert db.value("RETURN count(SELECT id FROM seval_article)") == 5 and bm25(db, "word3") == ["d3"]
    finally:
        db.close()


def test_the_tables_an_embedded_store_opens_with_are_kept_for_its_first_statement_only_when_its_open_put_nothing_right(tmp_path):
    url = f"surrealkv://{tmp_path / 'store'}"
    with connect(Settings(url=url)) as db:
        import_harness(db, HarnessConfig(dimension=4))
    with connect(Settings(url=url)) as db:  # the CLI's load takes them instead of reading INFO FOR DB again
        assert sorted(db.opened_tables) == sorted(db.value("INFO FOR DB")["tables"])
        db.query("DEFINE TABLE seval_stage_seval_article SCHEMALESS")  # as a killed load leaves it
    with connect(Settings(url=url)) as db:  # the open removed it: the tables it read are not the tables now
        assert db.opened_tables is None and staging_tables(db) == []
    result = CliRunner().invoke(app, ["--url", url, "load", "corpus", str(write(tmp_path / "d.jsonl", doc(1).model_dump_json() + "\n"))])
    assert result.exit_code == 0, result.output
    with connect(Settings(url=url)) as db:
        assert db.value("SELECT VALUE record::id(id) FROM seval_article") == ["d1"]


def test_a_load_waits_for_a_live_load_on_a_server_and_undoes_a_dead_one(db, monkeypatch):
    """On a server, a journal that moved rows recently belongs to a load still running."""
    load_corpus(db, [doc(i) for i in range(3)])
    db.query("UPSERT seval_ingest_journal:seval_article CONTENT {undo: 'seval_undo_seval_article', existed: true, corpus: true, position: 0, "
             "state: 'moving', started: time::now(), updated: time::now()}; DEFINE TABLE seval_undo_seval_article SCHEMALESS; "
             "CREATE seval_undo_seval_article:d1 SET old = NONE")
    with pytest.raises(StoreBusy, match="a load into seval_article is in progress"):
        bulk.recover_loads(db, stale_after=60)
    with pytest.raises(Exception, match="a load into seval_article is unfinished"):
        evaluate(db, ks=[1])
    db.query("UPDATE seval_ingest_journal:seval_article SET updated = time::now() - 2h")
    assert bulk.recover_loads(db, stale_after=60) == ["seval_article"]
    assert db.value("SELECT VALUE record::id(id) FROM seval_article ORDER BY id") == ["d0", "d2"]  # d1 was new to that load
    assert journal(db) == [] and staging_tables(db) == []


def test_a_staging_table_left_by_a_killed_load_is_removed_by_the_next(db):
    db.query("DEFINE TABLE seval_stage_seval_article SCHEMALESS; CREATE seval_stage_seval_article:junk SET x = 1; "
             "DEFINE TABLE seval_stage_seval_question SCHEMALESS")
    assert staging_tables(db) == ["seval_stage_seval_article", "seval_stage_seval_question"]
    load_corpus(db, [doc(1)])
    assert staging_tables(db) == []
    assert db.value("SELECT VALUE record::id(id) FROM seval_article") == ["d1"]


# ------------------------------------------------------------------------------------ embeddings


def test_missing_embeddings_are_computed_by_the_embedder_batch_by_batch(db):
    embedder = FakeEmbedder()
    docs = [Article(id="a", title="T", content="abc"), Article(id="b", content="", title=""),
            doc(3), Article(id="c", content="xy")]
    report = load_corpus(db, docs, batch_size=2, embedder=embedder)
    assert report.embedded == 3 and report.loaded == 4
    assert embedder.calls == [["T. abc", " "], ["xy"]]  # one call per batch, only the rows lacking one
    assert db.value("SELECT VALUE embedding FROM ONLY seval_article:a") == [6.0, 1.0, 0.0, 0.0]
    report = load_golden(db, [Question(id="q", text="hello", relevant=["a"])], embedder=embedder)
    assert report.embedded == 1 and embedder.calls[-1] == ["hello"]


def test_missing_embeddings_without_an_embedder_are_listed(db):
    before = snapshot(db)
    docs = [Article(id=f"n{i}") for i in range(7)] + [doc(1)]
    with pytest.raises(InputError) as caught:
        load_corpus(db, docs)
    assert str(caught.value) == ("corpus refused: articles without an embedding (give an embedder to compute them): "
                                 "n0, n1, n2, n3, n4 (and 2 more)")
    assert snapshot(db) == before


def test_an_embedder_of_another_dimension_is_refused(db):
    with pytest.raises(Exception, match="makes 8-d vectors, the index expects 4"):
        load_corpus(db, [Article(id="a", content="x")], embedder=FakeEmbedder(dim=8))


# ------------------------------------------------------------------------------------- golden set


def test_golden_problems_are_listed_together_in_one_line(seeded):
    before = snapshot(seeded)
    questions = [
        question("q1", ["track_order"]), question("q1", ["track_order"]),
        question("q3", ["track_order", "seval_article:99"]),
        question("q7", ["refund_request"]), question("q7", ["refund_request"]),
        *[question(f"none{i}", []) for i in range(6)],
    ]
    with pytest.raises(InputError) as caught:
        load_golden(seeded, questions)
    assert str(caught.value) == (
        "golden set refused: duplicate ids: q1, q7; questions with no labels: none0, none1, none2, none3, none4 "
        "(and 1 more) (--allow-unlabelled loads them: ranked, left out of every mean); labels to unknown documents: q3 -> seval_article:99; "
        "to load it as it is, keep one row of each id with --on-duplicate first or last")
    assert snapshot(seeded) == before


def test_golden_set_with_grades_passages_and_fields_is_stored(seeded):
    q = question("graded", ["track_order", "refund_request"], grades=[2, 1], category="c", language="en",
                 source="synthetic", split="dev",
                 passages=[{"doc": "track_order", "quote": "tracking"}])
    report = load_golden(seeded, [q])
    assert report.loaded == 1 and report.labels == 2 and report.table == "seval_question"
    row = seeded.value("SELECT * FROM ONLY seval_question:graded")
    assert row["grades"] == [2, 1] and row["split"] == "dev" and row["source"] == "synthetic"
    assert str(row["passages"][0]["doc"]) == "seval_article:track_order"


def test_a_question_the_schema_rejects_during_the_move_rolls_everything_back(seeded):
    """A rule only the schema holds (an ASSERT added here) refuses a row inside the move: nothing is written."""
    seeded.query("DEFINE FIELD OVERWRITE category ON seval_question TYPE option<string> ASSERT $value != 'forbidden'")
    before = snapshot(seeded)
    bad = question("odd", ["track_order"], category="forbidden")
    with pytest.raises(Rejected, match="seval_question:odd: field `category`"):
        load_golden(seeded, [question(f"fine{i}", ["track_order"]) for i in range(5)] + [bad], batch_size=2)
    assert snapshot(seeded) == before


def test_a_blank_quote_is_refused_before_anything_is_written(seeded):
    before = snapshot(seeded)
    bad = question("blank", ["track_order"], passages=[{"doc": "track_order", "quote": "   "}])
    with pytest.raises(InputError, match="question 'blank': passage of track_order has an empty quote"):
        load_golden(seeded, [question("fine", ["track_order"]), bad])
    assert snapshot(seeded) == before


def test_documents_and_their_golden_set_load_in_one_transaction(db):
    report = load_dataset(db, [doc(i) for i in range(5)], [question("q", ["d1", "d2"], grades=[2, 1])])
    assert (report.corpus.loaded, report.golden.loaded, report.golden.labels) == (5, 1, 2)
    before = snapshot(db)
    with pytest.raises(InputError, match="labels to unknown documents: q2 -> seval_article:d9"):
        load_dataset(db, [doc(7)], [question("q2", ["d7", "d9"])])
    assert snapshot(db) == before  # d7 was not loaded either


@pytest.mark.parametrize("text", ["'; REMOVE TABLE seval_article; --", "{{corpus}} $rows ⟨x⟩ `y`"])
def test_text_and_ids_full_of_surrealql_are_only_ever_values(db, text):
    load_corpus(db, [Article(id=text, title=text, content=text, embedding=[1, 0, 0, 0])])
    load_golden(db, [Question(id=text, text=text, embedding=[1, 0, 0, 0], relevant=[text])])
    assert db.value("RETURN type::record('seval_article', $id).content", {"id": text}) == text
    assert db.value("RETURN type::record('seval_question', $id).text", {"id": text}) == text
    assert db.value("RETURN count(SELECT id FROM seval_article)") == 1


# ---------------------------------------------------------------------------------------- harness


def test_a_missing_harness_is_imported_with_the_data_dimension_unless_refused():
    db = connect(Settings(url="mem://"))
    try:
        with pytest.raises(ConfigError, match="harness is not imported"):
            load_corpus(db, [doc(1, dim=3)], create_harness=False)
        report = load_corpus(db, [doc(1, dim=3), doc(2, dim=3)])  # the default, as `surreal-eval load corpus`
        assert report.harness_imported == 3
        assert db.value("SELECT VALUE dimension FROM ONLY seval_config:current") == 3
        with pytest.raises(InputError, match="'d5': embedding has 4 values, the index expects 3"):
            load_corpus(db, [doc(5, dim=4)], create_harness=True)
    finally:
        db.close()


def test_the_first_embedding_fixes_the_dimension_of_a_load_that_imports_the_harness():
    db = connect(Settings(url="mem://"))
    try:
        before = snapshot(db)
        with pytest.raises(InputError, match="'d2': embedding has 4 values, the first embedding of this load has 3"):
            load_corpus(db, [doc(1, dim=3), doc(2, dim=4)], create_harness=True)
        assert snapshot(db) == before
    finally:
        db.close()


def test_batch_size_must_be_positive(db):
    with pytest.raises(ConfigError, match="batch size"):
        load_corpus(db, [doc(1)], batch_size=0)


# ------------------------------------------------------------------------------------------- BEIR


def test_a_beir_folder_loads_documents_questions_and_grades(tmp_path):
    db = fresh_db()
    try:
        report = load_beir(db, beir_folder(tmp_path / "beir"))
        assert (report.corpus.loaded, report.golden.loaded, report.golden.skipped, report.golden.labels) == (3, 2, 2, 3)
        rows = db.value("SELECT record::id(id) AS id, relevant, grades FROM seval_question ORDER BY id")
        assert [(r["id"], [str(x) for x in r["relevant"]], r["grades"]) for r in rows] == [
            ("q1", ["seval_article:d1", "seval_article:d3"], [2, 1]), ("q2", ["seval_article:d2"], [1])]
        assert db.value("SELECT VALUE content FROM ONLY seval_article:d3") == ""
    finally:
        db.close()


@pytest.mark.slow
def test_the_cisi_collection_loads_whole(tmp_path):
    db = connect(Settings(url=f"surrealkv://{tmp_path / 'store'}"))  # not mem://: CISI takes GBs there
    try:
        report = load_beir(db, CISI, create_harness=True)
        assert report.corpus.loaded == 1460 and report.corpus.harness_imported == 384
        assert (report.golden.loaded, report.golden.skipped, report.golden.labels) == (76, 36, 3114)
        assert db.value("RETURN [count(SELECT id FROM seval_article), count(SELECT id FROM seval_question), "
                        "math::sum(SELECT VALUE array::len(relevant) FROM seval_question)]") == [1460, 76, 3114]
        assert db.value("INFO FOR INDEX seval_article_embedding ON seval_article")["building"]["initial"] == 1460
        vector = db.value("SELECT VALUE embedding FROM ONLY seval_question:⟨1⟩")
        assert len(knn(db, vector, k=10)) == 10 and len(bm25(db, "dewey decimal classification")) > 10
    finally:
        db.close()


# -------------------------------------------------------------------------------------------- CLI


runner = CliRunner()


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


@pytest.mark.parametrize("command", ["corpus", "golden", "beir"])
def test_every_load_command_has_help_and_a_docs_page(command):
    result = runner.invoke(app, ["load", command, "--help"])
    assert result.exit_code == 0 and "--embedder" in result.stdout
    assert f"surreal-eval load {command}" in "".join(pages().values())


def test_cli_loads_csv_corpus_and_golden_set_into_a_fresh_store(tmp_path):
    store = tmp_path / "store"
    corpus = write(tmp_path / "docs.csv", 'id,title,content,embedding,lang\n'
                                          'a,Alpha,alpha beta,"[1, 0]",en\nb,Beta,gamma delta,"[0, 1]",fr\n')
    golden = write(tmp_path / "golden.csv", 'id,text,relevant,embedding\nq,gamma,a;b,"[0, 1]"\n')
    result = cli(store, "load", "corpus", str(corpus))
    assert result.exit_code == 0, result.output
    assert "loaded 2 articles into seval_article" in result.stdout
    assert "imported the harness with dimension 2" in result.stdout
    result = cli(store, "load", "golden", str(golden))
    assert result.exit_code == 0, result.output
    assert "loaded 1 question (2 labels)" in result.stdout


def test_cli_load_beir_prints_counts_and_skipped_queries(tmp_path):
    store = tmp_path / "store"
    assert cli(store, "init", "--dimension", "4").exit_code == 0
    result = cli(store, "load", "beir", str(beir_folder(tmp_path / "beir")))
    assert result.exit_code == 0, result.output
    assert "loaded 3 articles and 2 questions (3 labels)" in result.stdout
    assert "skipped 2 queries of queries.jsonl with no relevant judgment in qrels/test.tsv (not loaded" in result.stdout
    one = cli(store, "load", "corpus", str(tmp_path / "beir" / "corpus.jsonl"), "--on-duplicate", "last")
    assert "loaded 3 articles into" in one.stdout
    assert "--k lists 5 twice" in cli(store, "evaluate", "--k", "5,5").stderr


def test_cli_load_golden_from_trec_qrels_and_a_queries_file(tmp_path):
    store = tmp_path / "store"
    folder = beir_folder(tmp_path / "beir")
    assert cli(store, "load", "corpus", str(folder), "--corpus", "seval_article").exit_code == 0
    qrels = write(tmp_path / "golden.qrels", "q1 0 d1 2\nq2 0 d2 1\n")
    result = cli(store, "load", "golden", str(qrels), "--queries", str(folder / "queries.jsonl"))
    assert result.exit_code == 0, result.output
    assert "loaded 2 questions (2 labels)" in result.stdout and "skipped 2 queries" in result.stdout


def test_cli_refuses_a_bad_row_with_one_line_and_changes_nothing(tmp_path):
    store = tmp_path / "store"
    assert cli(store, "init", "--dimension", "2").exit_code == 0
    db = connect(Settings(url=f"surrealkv://{store}"))
    before = snapshot(db)
    db.close()
    corpus = write(tmp_path / "docs.csv", 'id,content,embedding\na,x,"[1, 0]"\nb,y,"[1, 0"\n')
    result = cli(store, "load", "corpus", str(corpus))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {corpus}:3: embedding: not valid JSON (Expecting ',' delimiter) (id 'b')"
    missing = write(tmp_path / "more.jsonl", '{"id": "c", "content": "z"}\n')
    result = cli(store, "load", "corpus", str(missing))
    assert result.exit_code == 2 and "articles without an embedding" in result.stderr
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        assert snapshot(db) == before
    finally:
        db.close()


def test_cli_embedder_option_computes_missing_embeddings(tmp_path, monkeypatch):
    import surreal_eval.load.embedders

    made = []

    def from_spec(spec, **kw):
        made.append(spec)
        return FakeEmbedder(dim=2)

    monkeypatch.setattr(surreal_eval.load.embedders, "embedder_from_spec", from_spec)
    store = tmp_path / "store"
    assert cli(store, "init", "--dimension", "2").exit_code == 0
    corpus = write(tmp_path / "docs.jsonl", '{"id": "a", "content": "x"}\n{"id": "b", "content": "y", "embedding": [0, 1]}\n')
    result = cli(store, "load", "corpus", str(corpus), "--embedder", "local:some-model")
    assert result.exit_code == 0, result.output
    assert "loaded 2 articles, 1 embedded by the embedder" in result.stdout and made == ["local:some-model"]
