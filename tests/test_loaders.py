"""Readers: every format, graded judgments, sidecar embeddings, and bad rows refused with file:line and id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surreal_eval import InputError
from surreal_eval.load.readers import (
    QuestionStream,
    read_articles_jsonl,
    read_beir,
    read_documents,
    read_qrels,
    read_questions,
)


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def beir_folder(root: Path, *, qrels: str | None = None, sidecar: bool = True) -> Path:
    """A small BEIR folder: 3 documents, 4 queries (q4 unjudged, q3 judged only non-relevant)."""
    jsonl(root / "corpus.jsonl", [
        {"_id": "d1", "title": "Parcels", "text": "track a parcel"},
        {"_id": "d2", "title": "Refunds", "text": "money back", "metadata": {"lang": "en"}},
        {"_id": "d3", "title": "Empty", "text": ""},
    ])
    jsonl(root / "queries.jsonl", [
        {"_id": "q1", "text": "where is my parcel"},
        {"_id": "q2", "text": "refund please", "metadata": {}},
        {"_id": "q3", "text": "nothing relevant"},
        {"_id": "q4", "text": "never judged"},
    ])
    write(root / "qrels" / "test.tsv", qrels or "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\nq2\td2\t1\nq2\td1\t0\nq3\td1\t0\n")
    if sidecar:  # deliberately not in the corpus's order
        jsonl(root / "embeddings" / "corpus.jsonl", [
            {"_id": "d3", "embedding": [0, 0, 1, 0]},
            {"_id": "d1", "embedding": [1, 0, 0, 0]},
            {"_id": "d2", "embedding": [0, 1, 0, 0]},
        ])
        jsonl(root / "embeddings" / "queries.jsonl", [
            {"_id": f"q{i}", "embedding": [0, 0, 0, float(i)]} for i in range(1, 5)
        ])
    return root


# ------------------------------------------------------------------------------------ documents


def test_jsonl_documents_take_content_or_text_and_keep_other_keys_as_metadata(tmp_path):
    path = jsonl(tmp_path / "docs.jsonl", [
        {"id": "a", "title": "A", "content": "alpha", "embedding": [1, 0], "metadata": {"x": 1}, "lang": "en"},
        {"_id": 7, "text": "seven"},
        {"id": "empty", "title": "Nothing here", "content": ""},
        "",
    ])
    docs = list(read_documents(path))
    assert [d.id for d in docs] == ["a", "7", "empty"]
    assert docs[0].metadata == {"x": 1, "lang": "en"} and docs[0].embedding == [1.0, 0.0]
    assert docs[1].content == "seven" and docs[1].embedding is None and docs[1].metadata is None
    assert docs[2].content == ""  # an empty document is kept


def test_csv_documents_decode_embeddings_and_keep_extra_columns(tmp_path):
    path = write(tmp_path / "docs.csv",
                 'id,title,text,embedding,source\n'
                 'a,Alpha,"first line\nsecond line","[1, 0]",wiki\n'
                 'b,Beta,,,\n')
    a, b = read_documents(path)
    assert a.content == "first line\nsecond line" and a.embedding == [1.0, 0.0] and a.metadata == {"source": "wiki"}
    assert b.content == "" and b.embedding is None and b.metadata is None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("docs.jsonl", '{"id": "a"}\n{"id": "b", "embedding": "x"}\n', "docs.jsonl:2: embedding: Input should be a valid list (id 'b')"),
        ("docs.jsonl", '{"id": "a"}\n[1, 2]\n', "docs.jsonl:2: each line must be a JSON object"),
        ("docs.jsonl", '{"id": "a"}\n\n{"id": "b", "content": "x", "text": "y"}\n', "docs.jsonl:3: both content and text given (id 'b')"),
        ("docs.jsonl", '{"title": "no id"}\n', "docs.jsonl:1: id: Field required"),
        ("docs.csv", 'id,content,embedding\na,"two\nlines",[1]\nb,x,[1\n', "docs.csv:4: embedding: not valid JSON"),
        ("docs.csv", 'id,content\na,x\nb,x,extra\n', "docs.csv:3: 3 cells for 2 columns"),
        ("docs.csv", 'id,id\na,b\n', "docs.csv:1: bad header: column 'id' appears twice"),
    ],
)
def test_a_bad_document_row_is_refused_with_file_line_and_id(tmp_path, name, text, expected):
    path = write(tmp_path / name, text)
    with pytest.raises(InputError) as caught:
        list(read_documents(path))
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.source == str(path)


def test_a_missing_file_and_an_unknown_suffix_are_refused(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_documents(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_documents(write(tmp_path / "docs.xml", "<x/>"))
    assert [d.id for d in read_documents(write(tmp_path / "docs.txt", '{"id": "a"}\n'), format="jsonl")] == ["a"]


def test_the_earlier_list_reader_still_works(tmp_path):
    path = jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "x", "embedding": [1, 0]}])
    assert [a.id for a in read_articles_jsonl(path)] == ["a"]


def test_a_sidecar_beside_a_jsonl_file_supplies_missing_embeddings(tmp_path):
    path = jsonl(tmp_path / "docs.jsonl", [{"id": "a"}, {"id": "b", "embedding": [9, 9]}, {"id": "c"}])
    jsonl(tmp_path / "embeddings" / "docs.jsonl", [{"_id": "c", "embedding": [3, 3]}, {"_id": "b", "embedding": [2, 2]},
                                                   {"_id": "a", "embedding": [1, 1]}, {"_id": "zz", "embedding": [4, 4]}])
    assert [d.embedding for d in read_documents(path)] == [[1, 1], [9, 9], [3, 3]]  # the data's own wins


# ------------------------------------------------------------------------------------ questions


def test_jsonl_questions_with_a_list_or_a_graded_map(tmp_path):
    path = jsonl(tmp_path / "golden.jsonl", [
        {"id": "q1", "text": "a", "relevant": ["d1", "seval_article:d2"], "category": "how-to", "language": "en",
         "source": "real", "split": "dev", "passages": [{"doc": "d1", "quote": "track a parcel"}]},
        {"id": 2, "text": "b", "relevant": {"d1": 3, "d2": 1, "d3": 0}, "embedding": [0, 1]},
    ])
    q1, q2 = read_questions(path)
    assert q1.relevant == ["d1", "seval_article:d2"] and q1.grades is None and q1.source == "real" and q1.split == "dev"
    assert q1.passages[0].quote == "track a parcel"
    assert q2.id == "2" and q2.relevant == ["d1", "d2"] and q2.grades == [3.0, 1.0] and q2.nonrelevant == ["d3"]  # grade 0


def test_csv_questions_with_semicolons_json_lists_and_maps(tmp_path):
    path = write(tmp_path / "golden.csv",
                 'id,text,relevant,embedding,category,split\n'
                 'q1,where is it,d1; d2,"[0, 1]",,\n'
                 'q2,refund,"[""d2""]",,billing,test\n'
                 'q3,graded,"{""d1"": 2, ""d2"": 1}",,,\n'
                 'q4,no labels,,,,\n')
    q1, q2, q3, q4 = read_questions(path)
    assert q1.relevant == ["d1", "d2"] and q1.embedding == [0.0, 1.0] and q1.category is None
    assert q2.relevant == ["d2"] and q2.category == "billing" and q2.split == "test"
    assert q3.relevant == ["d1", "d2"] and q3.grades == [2.0, 1.0]
    assert q4.relevant == []  # refused at ingest, listed with every other question without labels


def test_split_is_given_to_questions_that_name_none(tmp_path):
    path = jsonl(tmp_path / "g.jsonl", [{"id": "a", "text": "x", "relevant": ["d"]},
                                        {"id": "b", "text": "y", "relevant": ["d"], "split": "dev"}])
    assert [q.split for q in read_questions(path, split="test")] == ["test", "dev"]
    with pytest.raises(InputError, match="split 'train' must be dev or test"):
        read_questions(path, split="train")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("g.jsonl", '{"id": "q1", "text": "t", "relevant": ["a"], "source": "web"}\n',
         "g.jsonl:1: source: Input should be 'real', 'ticket', 'click', 'expert', 'synthetic' or 'production-failure' (id 'q1')"),
        ("g.jsonl", '{"id": "q1", "text": "t", "relevant": {"a": "high"}}\n', "g.jsonl:1: relevant: grade 'high' is not a number (id 'q1')"),
        ("g.jsonl", '{"id": "q1", "text": "t", "relevant": {"a": 1}, "grades": [1]}\n', "g.jsonl:1: grades given twice"),
        ("g.jsonl", '{"id": "q1", "text": "t", "relevant": ["a"], "notes": "x"}\n', "g.jsonl:1: notes: Extra inputs are not permitted (id 'q1')"),
        ("g.csv", 'id,text,relevant\nq1,t,a\nq2,t,"[""a"""\n', "g.csv:3: relevant: not valid JSON"),
    ],
)
def test_a_bad_question_row_is_refused_with_file_line_and_id(tmp_path, name, text, expected):
    path = write(tmp_path / name, text)
    with pytest.raises(InputError) as caught:
        list(read_questions(path))
    assert expected in str(caught.value) and "\n" not in str(caught.value)


# --------------------------------------------------------------------------------- BEIR and TREC


def test_beir_folder_keeps_grades_drops_zero_scores_and_counts_unjudged_queries(tmp_path):
    documents, questions = read_beir(beir_folder(tmp_path / "beir"))
    docs = list(documents)
    assert [d.id for d in docs] == ["d1", "d2", "d3"]
    assert docs[1].metadata == {"lang": "en"} and docs[2].content == ""
    assert [d.embedding for d in docs] == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]  # sidecar in another order
    got = list(questions)
    assert [(q.id, q.relevant, q.grades, q.split) for q in got] == [
        ("q1", ["d1", "d3"], [2.0, 1.0], "test"), ("q2", ["d2"], [1.0], "test")]
    assert got[1].embedding == [0, 0, 0, 2]
    assert questions.skipped == 2 and questions.labels == 3  # q3 (only a 0 judgment) and q4 (none)


def test_beir_judgments_for_unknown_queries_are_refused(tmp_path):
    folder = beir_folder(tmp_path / "b", qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\nq8\td2\t1\n")
    _, questions = read_beir(folder)
    with pytest.raises(InputError, match=r"test.tsv: judgments for queries that queries.jsonl lacks: q8, q9"):
        list(questions)


def test_a_missing_split_names_the_splits_there(tmp_path):
    folder = beir_folder(tmp_path / "b")
    with pytest.raises(InputError, match=r"qrels/dev.tsv is missing \(splits here: test\)"):
        read_beir(folder, split="dev")
    with pytest.raises(InputError, match="not a BEIR folder: corpus.jsonl is missing"):
        read_documents(tmp_path, format="beir")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", "qrels.txt:2: expected 4 columns (query iteration document grade), found 3"),
        ("q1 0 d1 1\nq1 0 d1 2\n", "qrels.txt:2: query q1 judges document d1 twice"),
        ("q1 0 d1 yes\n", "qrels.txt:1: grade 'yes' is not a number (query q1)"),
    ],
)
def test_bad_trec_qrels_lines_are_refused_with_file_and_line(tmp_path, text, expected):
    with pytest.raises(InputError) as caught:
        read_qrels(write(tmp_path / "qrels.txt", text), format="trec")
    assert expected in str(caught.value)


def test_trec_qrels_with_a_queries_file_jsonl_or_tsv(tmp_path):
    qrels = write(tmp_path / "run.qrels", "q1 0 d1 3\nq1 0 d2 0\nq2 Q0 d2 1\n\nq2 0 d3 -1\n")
    parsed = read_qrels(qrels, format="trec")
    assert parsed.judgments == {"q1": {"d1": 3.0}, "q2": {"d2": 1.0}} and parsed.dropped == 2 and parsed.labels == 2
    for queries in (jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "one"}, {"id": "q2", "text": "two"},
                                                       {"_id": "q3", "text": "three"}]),
                    write(tmp_path / "queries.tsv", "q1\tone\nq2\ttwo\nq3\tthree\n")):
        stream = read_questions(qrels, queries=queries, split="test")
        assert isinstance(stream, QuestionStream)
        assert [(q.id, q.text, q.relevant, q.grades) for q in stream] == [
            ("q1", "one", ["d1"], [3.0]), ("q2", "two", ["d2"], [1.0])]
        assert stream.skipped == 1
    with pytest.raises(InputError, match="TREC qrels carry no question text"):
        read_questions(qrels)


@pytest.mark.parametrize(("policy", "vector"), [("first", [1.0, 0.0, 0.0, 0.0]), ("last", [0.0, 0.0, 0.0, 1.0])])
def test_a_beir_folder_whose_corpus_and_embeddings_repeat_an_id_loads_with_on_duplicate(tmp_path, policy, vector):
    """Issue 26, 1: `--on-duplicate` rules the embeddings file's repeated id as it rules the corpus's."""
    from typer.testing import CliRunner

    from surreal_eval import Settings, connect
    from surreal_eval.present.cli import app

    folder = beir_folder(tmp_path / "beir")
    with (folder / "corpus.jsonl").open("a") as corpus:
        corpus.write(json.dumps({"_id": "d1", "title": "Parcels", "text": "track a parcel, again"}) + "\n")
    with (folder / "embeddings" / "corpus.jsonl").open("a") as sidecar:
        sidecar.write(json.dumps({"_id": "d1", "embedding": [0, 0, 0, 1]}) + "\n")
    url = f"surrealkv://{tmp_path / 'store'}"
    refused = CliRunner().invoke(app, ["--url", url, "load", "beir", str(folder)])
    assert refused.exit_code == 2 and "is listed twice" in refused.stderr and "--on-duplicate first or last" in refused.stderr
    loaded = CliRunner().invoke(app, ["--url", url, "load", "beir", str(folder), "--on-duplicate", policy])
    assert loaded.exit_code == 0, loaded.output
    with connect(Settings(url=url)) as db:
        assert db.value("SELECT VALUE embedding FROM ONLY seval_article:d1") == vector


def test_a_beir_query_id_may_start_with_a_hash_where_a_trec_line_so_starting_is_a_comment(tmp_path):
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\n#q\td1\t1\nq2\td2\t2\n", encoding="utf-8")
    assert read_qrels(beir, format="beir").judgments == {"#q": {"d1": 1.0}, "q2": {"d2": 2.0}}
    trec = tmp_path / "qrels.txt"
    trec.write_text("# a comment trec_eval skips\nq2 0 d2 2\n", encoding="utf-8")
    assert read_qrels(trec, format="trec").judgments == {"q2": {"d2": 2.0}}


def test_a_corpus_the_harness_loaded_under_another_name_can_be_labelled_and_evaluated(db):
    """`load corpus --corpus seval_x` used to be a dead end: labels could name seval_article or attached tables only."""
    from surreal_eval import Article, Question, evaluate
    from surreal_eval.golden.files import load_golden
    from surreal_eval.load.bulk import load_corpus

    load_corpus(db, [Article(id="d1", content="refund policy", embedding=[1, 0, 0, 0]),
                     Article(id="d2", content="password reset", embedding=[0, 1, 0, 0])], table="seval_x")
    report = load_golden(db, [Question(id="q1", text="refund", embedding=[1, 0, 0, 0], relevant=["d1"])], label_table="seval_x")
    assert report.labels == 1
    assert str(db.value("SELECT VALUE relevant[0] FROM ONLY seval_question:q1")) == "seval_x:d1"
    run = evaluate(db, ks=[1], retrievers=["vector"], params={"corpus": "seval_x"})
    assert [r.scores["recall"] for r in run.results] == [1.0]


def test_labels_for_a_corpus_never_loaded_say_how_to_load_it(db):
    from surreal_eval import Question
    from surreal_eval.errors import ConfigError
    from surreal_eval.golden.files import load_golden

    with pytest.raises(ConfigError, match=r"not seval_y: `surreal-eval load corpus FILE --corpus seval_y` first"):
        load_golden(db, [Question(id="q1", text="refund", embedding=[1, 0, 0, 0], relevant=["d1"])], label_table="seval_y")
