"""What BM25 searches (issue 35): the built-in corpus's title and content together (BEIR's convention), an attached
table's --bm25-fields, the match mode any (OR) or all (AND); the run records both and the candidate cache is keyed
by them; `init` over a store an older version wrote gives its corpus tables the searched text."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from surreal_eval import evaluate
from surreal_eval.golden.files import load_golden
from surreal_eval.load.attach import attach_table
from surreal_eval.load.bulk import load_corpus
from surreal_eval.load.chunking import chunk_corpus
from surreal_eval.models import Article, Question
from surreal_eval.present.cli import app
from surreal_eval.store.connection import to_record
from surreal_eval.store.schema import HarnessConfig, import_harness

runner = CliRunner()

#: six documents; two have a title and no text. Terms (after stemming): flutter/wing only in d_flutter's title,
#: heat only in d_heat, flow in d_heat and d_layer.
DOCS = [
    ("d_flutter", "Aerodynamic flutter of wings", ""),
    ("d_layer", "", "boundary layer transition in supersonic flow"),
    ("d_heat", "Heat transfer", "heat transfer in hypersonic flow over cones"),
    ("d_shells", "", "stress analysis of thin shells"),
    ("d_buckling", "", "buckling of cylinders under pressure"),
    ("d_plates", "Plates", ""),
]


def vector(i: int) -> list[float]:
    return [1.0 if j == i % 4 else 0.1 for j in range(4)]


@pytest.fixture
def corpus(db):
    load_corpus(db, [Article(id=key, title=title, content=content, embedding=vector(i)) for i, (key, title, content) in enumerate(DOCS)])
    return db


def bm25(db, text: str, match: str | None = None, corpus: str = "seval_article") -> list[tuple[str, float]]:
    hits = db.value("RETURN fn::seval::bm25_candidates($c, $t, 10, $m)", {"c": corpus, "t": text, "m": match})
    return [(h["id"].id, h["score"]) for h in hits]


def idf(n_docs: int, n: int) -> float:
    return max(0.0, math.log((n_docs - n + 0.5) / (n + 0.5)))


def test_a_title_only_document_is_found_by_its_title(corpus):
    # d_flutter has no text: before titles were searched, BM25 could never return it
    assert [d for d, _ in bm25(corpus, "flutter of wings")] == ["d_flutter"]
    assert [d for d, _ in bm25(corpus, "plates")] == ["d_plates"]


def test_the_indexed_text_is_title_then_content(corpus):
    texts = dict(corpus.value("SELECT VALUE [record::id(id), bm25_text] FROM seval_article"))
    assert texts["d_heat"] == "Heat transfer heat transfer in hypersonic flow over cones"
    assert texts["d_flutter"] == "Aerodynamic flutter of wings"
    assert texts["d_layer"] == "boundary layer transition in supersonic flow"


def test_match_all_keeps_only_records_holding_every_word(corpus):
    # "heat flow": heat is in d_heat alone, flow in d_heat and d_layer
    anyword = bm25(corpus, "heat flow", "any")
    assert [d for d, _ in anyword] == ["d_heat", "d_layer"]
    assert bm25(corpus, "heat flow") == anyword  # any is the default
    allwords = bm25(corpus, "heat flow", "all")
    assert [d for d, _ in allwords] == ["d_heat"]
    assert allwords[0][1] == pytest.approx(anyword[0][1])  # the mode filters; it does not change a score
    # d_layer's score by hand: flow (n = 2 of N = 6) once in 6 tokens (boundary layer transition supersonic flow,
    # "in" a stopword), avglen over the six texts as the analyzer tokenises them
    lengths = corpus.value("SELECT VALUE array::len(search::analyze('seval_english_stop', bm25_text)) FROM seval_article")
    avg = sum(lengths) / len(lengths)
    expected = idf(6, 2) * 2.2 * 1 / (1 + 1.2 * (1 - 0.75 + 0.75 * 5 / avg))
    assert anyword[1][1] == pytest.approx(expected, rel=1e-5)
    # a word no record holds: any ignores it, all matches nothing
    assert [d for d, _ in bm25(corpus, "flutter zqxwv", "any")] == ["d_flutter"]
    assert bm25(corpus, "flutter zqxwv", "all") == []


def test_an_unknown_match_mode_is_refused(corpus):
    with pytest.raises(Exception, match="bm25_match must be 'any' or 'all'"):
        bm25(corpus, "heat", "some")


def golden(db) -> None:
    load_golden(db, [Question(id="q_flutter", text="wing flutter", embedding=vector(3), relevant=["seval_article:d_flutter"]),
                     Question(id="q_heat", text="heat flow over cones", embedding=vector(1), relevant=["seval_article:d_heat"])])


def test_the_run_records_the_fields_searched_and_the_match_mode(corpus):
    golden(corpus)
    report = evaluate(corpus, ks=[1], retrievers=["bm25"])
    assert report.params["bm25_fields"] == ["title", "content"]
    assert report.params["bm25_match"] == "any"
    recall = {r.k: r.scores for r in report.results if r.retriever == "bm25"}[1]
    assert recall["recall"] == 1.0  # both found, the title-only one by its title
    stored = corpus.value("SELECT VALUE params FROM ONLY $r", {"r": to_record(report.run, "seval_run")})
    assert stored["bm25_fields"] == ["title", "content"]
    strict = evaluate(corpus, ks=[1], retrievers=["bm25"], params={"bm25_match": "all"})
    assert strict.params["bm25_match"] == "all"
    # "heat flow over cones" holds every word only in d_heat; "wing flutter" only in d_flutter: same rankings here
    assert strict.retrieval["reused"] == 0  # another match mode: no list kept under 'any' is read


def cache_key(db, corpus: str, match: str = "any") -> str:
    return db.value("RETURN fn::seval::cache_inputs(fn::seval::run_params([3], { corpus: $c, bm25_match: $m }), "
                    "fn::seval::corpus_fingerprint($c), false).bm25", {"c": corpus, "m": match})


def notes_table(db) -> None:
    db.query("DEFINE ANALYZER notes_words TOKENIZERS blank, punct FILTERS lowercase, snowball(english);"
             "DEFINE TABLE notes SCHEMALESS; DEFINE INDEX notes_body ON notes FIELDS body FULLTEXT ANALYZER notes_words BM25;")
    for i, (key, title, content) in enumerate(DOCS):
        db.query("CREATE type::record('notes', $k) CONTENT { heading: $t, body: $c, vec: $v }",
                 {"k": key, "t": title, "c": content, "v": vector(i)})


def test_the_cache_key_changes_with_the_fields_and_the_match_mode(db):
    notes_table(db)
    attach_table(db, "notes", content="body", title="heading", bm25_fields=["body"])
    body_only = cache_key(db, "notes")
    assert cache_key(db, "notes", "all") != body_only
    attach_table(db, "notes", content="body", title="heading", bm25_fields=["heading", "body"], index=True)
    assert cache_key(db, "notes") != body_only


def test_an_attached_table_searches_the_fields_named(db):
    notes_table(db)
    before = db.value("INFO FOR TABLE notes")
    rows = db.value("SELECT * FROM notes ORDER BY id")
    report = attach_table(db, "notes", content="body", title="heading", bm25_fields=["heading", "body"], index=True)
    assert report.bm25_fields == ["heading", "body"]
    assert report.bm25_indexes == ["seval_notes_heading", "notes_body"]
    # the user's table: one harness-owned index more, nothing else of it changed
    after = db.value("INFO FOR TABLE notes")
    assert set(after["indexes"]) - set(before["indexes"]) == {"seval_notes_heading"}
    assert after["fields"] == before["fields"] and db.value("SELECT * FROM notes ORDER BY id") == rows
    assert [d for d, _ in bm25(db, "flutter wings", corpus="notes")] == ["d_flutter"]
    # two fields: the sum of their BM25 scores; "heat" is in d_heat's heading and body
    heading = db.value("SELECT VALUE search::score(1) FROM notes WHERE heading @1,OR@ 'heat'")[0]
    body = db.value("SELECT VALUE search::score(1) FROM notes WHERE body @1,OR@ 'heat'")[0]
    assert bm25(db, "heat", corpus="notes")[0] == ("d_heat", pytest.approx(heading + body, rel=1e-6))
    assert db.value("RETURN fn::seval::run_params([1], { corpus: 'notes' }).bm25_fields") == ["heading", "body"]


def test_attach_by_default_searches_the_title_only_where_it_has_an_index(db):
    notes_table(db)
    report = attach_table(db, "notes", content="body", title="heading")
    assert report.bm25_fields == ["body"] and "heading has no FULLTEXT index" in report.bm25_note
    assert bm25(db, "flutter", corpus="notes") == []  # its title is not searched
    report = attach_table(db, "notes", content="body", title="heading", index=True)
    assert report.bm25_fields == ["heading", "body"] and report.bm25_note is None
    assert [d for d, _ in bm25(db, "flutter", corpus="notes")] == ["d_flutter"]
    without_title = attach_table(db, "notes", content="body")
    assert without_title.bm25_fields == ["body"] and without_title.bm25_note is None


def test_bm25_fields_without_an_index_are_refused(db):
    notes_table(db)
    with pytest.raises(Exception, match="no FULLTEXT index on heading: give --index"):
        attach_table(db, "notes", content="body", bm25_fields=["heading", "body"])
    with pytest.raises(Exception, match="names a field twice"):
        attach_table(db, "notes", content="body", bm25_fields=["body", "body"])


def test_chunks_are_searched_with_their_documents_title(corpus):
    class Fixed:
        def embed(self, texts):
            return [vector(len(t)) for t in texts]

    chunk_corpus(corpus, target="seval_chunks", size=3, embedder=Fixed())
    texts = dict(corpus.value("SELECT VALUE [record::id(id), bm25_text] FROM seval_chunks"))
    assert texts["d_heat#1"] == "Heat transfer hypersonic flow over"
    # "cones" is only in the last chunk of d_heat, "Heat" in its title: each chunk of d_heat holds the title
    assert [d for d, _ in bm25(corpus, "heat cones", "all", corpus="seval_chunks")] == ["d_heat#2"]


def old_version(db, tables: list[str]) -> None:
    """Make `tables` as a version before bm25_text wrote them: no such field or value, the BM25 index on content,
    and every harness script recorded with another checksum (an upgrade's `init` applies them again)."""
    for t in tables:
        db.query(f"REMOVE INDEX {t}_content ON {t}; REMOVE FIELD bm25_text ON {t}; UPDATE {t} UNSET bm25_text RETURN NONE;"
                 f"DEFINE INDEX {t}_content ON {t} FIELDS content FULLTEXT ANALYZER seval_english BM25;")
    db.query("UPDATE seval_script SET checksum = 'from an older version'")


def test_init_after_an_upgrade_gives_the_corpus_tables_the_searched_text(corpus):
    class Fixed:
        def embed(self, texts):
            return [vector(len(t)) for t in texts]

    chunk_corpus(corpus, target="seval_chunks", size=3, embedder=Fixed())
    old_version(corpus, ["seval_article", "seval_chunks"])
    assert bm25(corpus, "flutter") == []  # as before: the title is not indexed
    import_harness(corpus, HarnessConfig(dimension=4), skip_unchanged=True)  # what `init` does
    for table in ("seval_article", "seval_chunks"):
        info = corpus.value(f"INFO FOR TABLE {table}")
        assert "FIELDS bm25_text FULLTEXT ANALYZER seval_english " in info["indexes"][f"{table}_content"]  # its analyzer kept
        assert corpus.value(f"RETURN count(SELECT id FROM {table} WHERE bm25_text = NONE)") == 0
    assert [d for d, _ in bm25(corpus, "flutter")] == ["d_flutter"]
    assert [d for d, _ in bm25(corpus, "flutter", corpus="seval_chunks")] == ["d_flutter#0"]
    assert corpus.value("RETURN fn::seval::bm25_model('seval_article')") is not None  # the incremental state can be kept


def test_a_load_into_a_table_an_older_version_wrote_upgrades_it_first(corpus):
    old_version(corpus, ["seval_article"])
    load_corpus(corpus, [Article(id="d_new", title="Nozzle design", content="", embedding=vector(2))])
    assert [d for d, _ in bm25(corpus, "flutter")] == ["d_flutter"]
    assert [d for d, _ in bm25(corpus, "nozzle")] == ["d_new"]


def test_evaluate_refuses_another_bm25_match_in_one_line():
    bad = runner.invoke(app, ["--url", "mem://", "evaluate", "--bm25-match", "some"])
    assert bad.exit_code == 2 and "--bm25-match must be any or all, got 'some'" in bad.output


def test_attach_says_which_records_without_content_bm25_still_finds(tmp_path):
    store = tmp_path / "store"
    url = f"surrealkv://{store}"
    assert runner.invoke(app, ["--url", url, "init", "--dimension", "4"]).exit_code == 0
    from surreal_eval import Settings, connect

    db = connect(Settings(url=url))
    notes_table(db)
    db.close()
    searched = runner.invoke(app, ["--url", url, "attach", "notes", "--content", "body", "--title", "heading", "--index"])
    assert searched.exit_code == 0, searched.output
    # d_flutter and d_plates have a heading and no body: found by their heading
    assert "2 without text in body (BM25 finds them by heading)" in searched.output
    alone = runner.invoke(app, ["--url", url, "attach", "notes", "--content", "body", "--bm25-fields", "body"])
    assert "2 without text in body (BM25 never finds them)" in alone.output
    assert "BM25 on body through index notes_body" in alone.output


def bm25_rankings(db, report) -> dict[str, list[str]]:
    rows = db.value("SELECT question, ranked FROM seval_ranking WHERE run = $r AND retriever = 'bm25'",
                    {"r": to_record(report.run, "seval_run")})
    return {str(r["question"].id): [str(x.id) for x in r["ranked"]] for r in rows}


def test_a_kept_all_words_list_merges_in_only_records_holding_every_word(corpus):
    golden(corpus)
    params = {"bm25_match": "all"}
    first = evaluate(corpus, ks=[3], retrievers=["bm25"], params=params)
    assert bm25_rankings(corpus, first)["q_heat"] == ["d_heat"]
    # d_cones holds "cones" alone of "heat flow over cones", d_both every word: only d_both may enter q_heat's list
    load_corpus(corpus, [Article(id="d_cones", title="", content="cones and cylinders", embedding=vector(1)),
                         Article(id="d_both", title="Heat", content="flow over cones", embedding=vector(2))])
    after = evaluate(corpus, ks=[3], retrievers=["bm25"], params=params)
    merged = corpus.value("SELECT VALUE how FROM seval_candidate_cache WHERE list = 'bm25' AND run = $r",
                          {"r": to_record(after.run, "seval_run")})
    assert "merged" in merged  # brought up to date, not fetched again
    fresh = evaluate(corpus, ks=[3], retrievers=["bm25"], params=params, fresh=True)
    assert bm25_rankings(corpus, after) == bm25_rankings(corpus, fresh)
    assert set(bm25_rankings(corpus, after)["q_heat"]) == {"d_heat", "d_both"}


def test_load_beir_then_evaluate_finds_title_only_documents_by_their_titles(tmp_path):
    """Issue 35's "done when", as the README's commands run it: a BEIR corpus with title-only documents."""
    import json

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "embeddings").mkdir()
    docs = [{"_id": key, "title": title, "text": content} for key, title, content in DOCS]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    queries = [{"_id": "q1", "text": "wing flutter"}, {"_id": "q2", "text": "plates"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td_flutter\t1\nq2\td_plates\t1\n", encoding="utf-8")
    (folder / "embeddings" / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d["_id"], "embedding": vector(i)}) + "\n" for i, d in enumerate(docs)), encoding="utf-8")
    (folder / "embeddings" / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q["_id"], "embedding": vector(i)}) + "\n" for i, q in enumerate(queries)), encoding="utf-8")
    url = f"surrealkv://{tmp_path / 'store'}"
    loaded = runner.invoke(app, ["--url", url, "load", "beir", str(folder)])
    assert loaded.exit_code == 0, loaded.output
    run = runner.invoke(app, ["--url", url, "evaluate", "--retriever", "bm25", "--k", "1", "--json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["params"]["bm25_fields"] == ["title", "content"] and report["params"]["bm25_match"] == "any"
    assert [r["recall"] for r in report["results"] if r["retriever"] == "bm25"] == [1.0]
