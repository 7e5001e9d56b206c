"""Bad input: one clear line, a non-zero exit, and the database exactly as it was."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    InputError,
    Question,
    Rejected,
    Settings,
    add_questions,
    connect,
    delete_article,
    evaluate,
)
from surreal_eval.present.cli import app

from .conftest import snapshot

HOSTILE = [
    "'; REMOVE TABLE seval_article; --",
    '"); DELETE seval_article; RETURN ("',
    "`article` ⟨question⟩ $x {{dimension}} \\u0000 /* */",
    "SELECT * FROM seval_article; DEFINE USER hacker ON ROOT PASSWORD 'x' ROLES OWNER;",
]


def q(qid="q1", text="where is my parcel", embedding=(0.0, 0.1, 0.9, 0.0), relevant=("track_order",), **kw):
    return Question(id=qid, text=text, embedding=list(embedding), relevant=list(relevant), **kw)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (q(relevant=()), "questions with no labels: q1"),
        (q(embedding=(0.1, 0.2, 0.3)), "embedding has 3 values, the index expects 4"),
        (q(relevant=("track_order", "no_such_article")), "labels to unknown documents: q1 -> seval_article:no_such_article"),
        (q(relevant=("track_order", "track_order")), "labelled twice"),
        (q(grades=[1, 2]), "2 grades for 1 labels"),
        (q(text="   "), "text is empty"),
    ],
)
def test_bad_question_is_refused_and_nothing_changes(seeded, question, message):
    before = snapshot(seeded)
    with pytest.raises(InputError, match=message) as caught:
        add_questions(seeded, [q("fine_one"), question])
    assert "q1" in str(caught.value) and "\n" not in str(caught.value)
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    ("statement", "field"),
    [
        ("CREATE seval_question:x CONTENT {text: 'a', embedding: [1,0,0,0], relevant: [seval_article:track_order, seval_article:track_order]}", "relevant"),
        ("CREATE seval_question:x CONTENT {text: 'a', embedding: [1,0,0], relevant: [seval_article:track_order]}", "embedding"),
        ("CREATE seval_question:x CONTENT {text: 'a', embedding: [1,0,0,0], relevant: [seval_article:nope]}", "relevant"),
        ("CREATE seval_question:x CONTENT {text: 'a', embedding: [1,0,0,0], relevant: [seval_question:signin]}", "relevant"),
    ],
)
def test_the_schema_itself_refuses_bad_questions_written_in_surrealql(seeded, statement, field):
    before = snapshot(seeded)
    with pytest.raises(Exception, match=field):
        seeded.query(statement)
    assert snapshot(seeded) == before


def test_delete_article_refuses_a_labelled_article_but_a_plain_delete_is_never_blocked(seeded):
    before = snapshot(seeded)
    with pytest.raises(Rejected, match="seval_article:refund_request is labelled by seval_question:money_back"):
        delete_article(seeded, "refund_request")
    assert snapshot(seeded) == before
    seeded.query("DELETE seval_article:refund_request")  # no REFERENCE: a label never blocks a delete
    with pytest.raises(Rejected, match="seval_question:money_back is labelled with seval_article:refund_request, which no longer exists"):
        evaluate(seeded, ks=[1])
    delete_article(seeded, "contact_support")  # not labelled: allowed
    assert seeded.value("RETURN record::exists(seval_article:contact_support)") is False


@pytest.mark.parametrize("text", HOSTILE)
def test_question_text_full_of_surrealql_is_only_ever_a_value(seeded, text):
    tables = set(seeded.value("INFO FOR DB")["tables"])
    add_questions(seeded, [q("hostile", text=text)])
    assert seeded.value("RETURN seval_question:hostile.text") == text
    report = evaluate(seeded, ks=[3], per_question=True)
    assert report.questions == 9
    assert seeded.value("RETURN count(SELECT * FROM seval_article)") == 10
    assert set(seeded.value("INFO FOR DB")["tables"]) == tables
    assert seeded.value("INFO FOR ROOT")["users"] == {}


def test_ids_with_surrealql_syntax_are_only_ever_values(seeded):
    weird = "x`; REMOVE TABLE seval_article; --⟩"
    add_questions(seeded, [q(weird)])
    assert seeded.value("RETURN type::record('seval_question', $id).text", {"id": weird}) == "where is my parcel"
    assert seeded.value("RETURN count(SELECT * FROM seval_article)") == 10


def test_unreachable_server_is_a_connection_error():
    with pytest.raises(ConnectionFailed, match="cannot reach"):
        connect(Settings(url="ws://127.0.0.1:9/rpc"))


def test_wrong_password_is_an_authentication_error():
    with pytest.raises(AuthenticationFailed, match="refused the credentials") as caught:
        connect(Settings(url="mem://", user="root", password="definitely-wrong"))
    assert "definitely-wrong" not in str(caught.value)


runner = CliRunner()


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


def one_line_error(result, code):
    assert result.exit_code == code, result.output
    # (0.1's spelling `history` says first, in a line of its own, that it is now `runs list`)
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("deprecated: ")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store"
    assert cli(path, "init", "--demo").exit_code == 0
    return path


def snapshot_of(store):
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        return snapshot(db)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"id": "n", "text": "t", "embedding": [1, 0, 0, 0], "relevant": []}, "questions with no labels: n"),
        ({"id": "n", "text": "t", "embedding": [1, 0], "relevant": ["track_order"]}, "'n': embedding has 2 values"),
        ({"id": "n", "text": "t", "embedding": [1, 0, 0, 0], "relevant": ["gone"]}, "labels to unknown documents: n -> article:gone"),
        ({"id": "n", "text": "t", "embedding": [1, 0, 0, 0]}, "questions with no labels: n (--allow-unlabelled loads them"),
        ("{not json", "golden.jsonl:2: not valid JSON"),
    ],
)
def test_cli_load_golden_refuses_bad_rows_with_one_line(store, tmp_path, row, expected):
    path = tmp_path / "golden.jsonl"
    good = {"id": "good", "text": "parcel", "embedding": [0, 0, 1, 0], "relevant": ["track_order"]}
    path.write_text(json.dumps(good) + "\n" + (row if isinstance(row, str) else json.dumps(row)) + "\n")
    before = snapshot_of(store)
    line = one_line_error(cli(store, "load", "golden", str(path)), 2)
    assert expected in line
    assert snapshot_of(store) == before


def test_cli_unreachable_server_exits_3_with_one_line():
    line = one_line_error(runner.invoke(app, ["--url", "ws://127.0.0.1:9", "runs", "list"]), 3)
    assert "cannot reach ws://127.0.0.1:9" in line


def test_cli_wrong_password_exits_3_and_never_prints_it(store):
    result = runner.invoke(app, ["--url", f"surrealkv://{store}", "--user", "root", "runs", "list"],
                           env={"SURREAL_EVAL_PASS": "s3cret-pw"})
    line = one_line_error(result, 3)
    assert "refused the credentials" in line and "s3cret-pw" not in result.output


def test_cli_bad_k_and_unknown_retriever_are_one_line_errors(store):
    assert "every k must be a whole number" in one_line_error(cli(store, "evaluate", "--k", "1,x"), 2)
    assert "unknown retriever" in one_line_error(cli(store, "evaluate", "--retriever", "bm26"), 2)


def test_cli_debug_shows_the_traceback():
    result = runner.invoke(app, ["--url", "ws://127.0.0.1:9", "--debug", "runs", "list"])
    assert result.exit_code != 0 and isinstance(result.exception, ConnectionFailed)


@pytest.fixture(scope="module")
def harnessless(tmp_path_factory):
    """A store that exists (opened once by the library) and holds no harness."""
    path = tmp_path_factory.mktemp("harnessless") / "store"
    connect(Settings(url=f"surrealkv://{path}")).close()
    return path


@pytest.mark.parametrize("args", [["runs", "list"], ["evaluate"], ["golden", "export", "--format", "qrels"], ["slices"]])
def test_commands_on_a_database_without_the_harness_say_run_init(harnessless, args):
    line = one_line_error(runner.invoke(app, ["--url", f"surrealkv://{harnessless}", *args]), 2)
    assert "has no surreal-eval harness" in line and "surreal-eval init" in line



def test_a_harness_function_of_an_older_release_taking_other_arguments_says_run_init(db):
    # as a store whose harness predates fn::seval::run_rankings's third argument (the questions) had it
    from surreal_eval.analysis.overlap import rankings

    db.query("DEFINE FUNCTION OVERWRITE fn::seval::run_rankings($run: record<seval_run>, $names: option<array<string>>) -> array<object> "
             "{ RETURN []; }")
    with pytest.raises(ConfigError) as raised:
        rankings(db, "seval_run:x", ["bm25"], ["seval_question:q"])
    message = str(raised.value)
    assert "older than this surreal-eval (fn::seval::run_rankings takes other arguments there)" in message
    assert "run `surreal-eval init`" in message and "\n" not in message

#: Commands that only use a store (issue 35, 4): none of them may make one.
USING = [["history"], ["runs", "list"], ["compare", "latest", "previous"], ["report", "--html", "{dir}/report.html"],
         ["gate"], ["slices"], ["diagnose", "q1"], ["golden", "dangling"], ["tag", "list"], ["retriever", "list"],
         ["evaluate"],
         ["golden", "export", "{dir}/golden.jsonl"], ["split"], ["watch", "drain"]]


@pytest.mark.parametrize("args", USING, ids=[" ".join(a[:2]) for a in USING])
def test_a_command_that_uses_a_store_refuses_a_path_that_does_not_exist_and_makes_nothing(tmp_path, args):
    args = [a.replace("{dir}", str(tmp_path)) for a in args]
    url = f"surrealkv://{tmp_path / 'nonexist_dir' / 'sub' / 'x.db'}"
    line = one_line_error(runner.invoke(app, ["--url", url, *args]), 2)
    assert f"no store at {tmp_path / 'nonexist_dir' / 'sub' / 'x.db'}" in line
    assert f"({tmp_path / 'nonexist_dir'}, the folder it would be in, does not exist)" in line
    assert "surreal-eval init" in line
    assert list(tmp_path.iterdir()) == []  # not the store, not its parent folders, not an output file


def test_a_command_that_uses_a_store_refuses_an_empty_folder_and_leaves_it_empty(tmp_path):
    (tmp_path / "empty").mkdir()
    line = one_line_error(runner.invoke(app, ["--url", f"surrealkv://{tmp_path / 'empty'}", "runs", "list"]), 2)
    assert f"no store at {tmp_path / 'empty'} (an empty folder)" in line
    assert list((tmp_path / "empty").iterdir()) == []


def test_init_and_a_load_still_make_a_new_store_parent_folders_included(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "d1", "title": "t", "content": "parcel", "embedding": [0, 0, 1, 0]}) + "\n")
    for store, args in ((tmp_path / "a" / "b" / "init.db", ["init", "--dimension", "4"]),
                        (tmp_path / "c" / "load.db", ["load", "corpus", str(docs)])):
        done = cli(store, *args)
        assert done.exit_code == 0, done.output
        assert (store / "manifest").is_dir()
    assert cli(tmp_path / "c" / "load.db", "retriever", "list").exit_code == 0  # and then every command opens it


@pytest.mark.parametrize("content", [None, '{"id": "a", "text": '])
def test_a_refused_load_into_a_new_store_leaves_nothing_behind(tmp_path, content):
    data = tmp_path / "data"
    data.mkdir()
    path = data / "golden.jsonl"
    if content is not None:
        path.write_text(content + "\n")
    line = one_line_error(cli(tmp_path / "new" / "store", "load", "golden", str(path)), 2)
    assert str(path) in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


@pytest.mark.parametrize("ks", ["1,,3", "1,3,", ",5", " , "])
def test_a_cutoff_list_with_an_empty_place_is_refused_and_nothing_is_recorded(store, ks):
    before = snapshot_of(store)
    for command in (["evaluate", "--k", ks], ["diagnose", "money_back", "--k", ks]):
        line = one_line_error(cli(store, *command), 2)
        assert f"--k {ks!r} has an empty cutoff" in line or "no cutoff given" in line
    assert snapshot_of(store) == before


def test_gate_suggests_a_metric_that_exists_and_checks_it_before_the_baseline(store):
    assert cli(store, "evaluate", "--k", "1,5").exit_code == 0  # one run: `previous`, the baseline, is missing
    before = snapshot_of(store)
    line = one_line_error(cli(store, "gate", "--metric", "recall5"), 2)
    assert "'recall5'" in line and "did you mean recall@5?" in line and "recall5@5" not in line
    line = one_line_error(cli(store, "gate", "--metric", "recal@5"), 2)
    assert "unknown metric 'recal@5' (did you mean recall@5?)" in line and "no run before" not in line
    line = one_line_error(cli(store, "gate", "--metric", "ndgc@10"), 2)
    assert "did you mean ndcg@10?" in line
    # a good metric: now the missing baseline is what is refused
    assert "no run before" in one_line_error(cli(store, "gate", "--metric", "recall@5"), 2)
    assert snapshot_of(store) == before


@pytest.mark.parametrize(("line", "said"), [
    ('{"id": "b", "text": ', "not valid JSON at column 21 (the end of the line): Expecting value"),
    ('{"id": "b" "text": "t"}', "not valid JSON at column 12: Expecting ',' delimiter"),
])
def test_a_json_syntax_error_names_file_line_column_and_the_parsers_message(store, tmp_path, line, said):
    path = tmp_path / "golden.jsonl"
    good = {"id": "good", "text": "parcel", "embedding": [0, 0, 1, 0], "relevant": ["track_order"]}
    path.write_text(json.dumps(good) + "\n" + line + "\n")
    before = snapshot_of(store)
    assert one_line_error(cli(store, "load", "golden", str(path)), 2) == f"error: {path}:2: {said}"
    assert snapshot_of(store) == before


BOM = "\ufeff"


def test_files_starting_with_a_byte_order_mark_load(store, tmp_path):
    question = {"id": "bom_json", "text": "parcel", "embedding": [0, 0, 1, 0], "relevant": ["track_order"]}
    (tmp_path / "golden.jsonl").write_text(BOM + json.dumps(question) + "\n", encoding="utf-8")
    csv_rows = 'id,text,relevant,embedding\nbom_csv,parcel,track_order,"[0, 0, 1, 0]"\n'
    (tmp_path / "golden.csv").write_text(BOM + csv_rows, encoding="utf-8")
    (tmp_path / "queries.tsv").write_text(BOM + "bom_trec\tparcel\n", encoding="utf-8")
    (tmp_path / "embeddings").mkdir()
    vectors = json.dumps({"_id": "bom_trec", "embedding": [0, 0, 1, 0]})
    (tmp_path / "embeddings" / "queries.jsonl").write_text(BOM + vectors + "\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text(BOM + "bom_trec 0 track_order 1\n", encoding="utf-8")
    document = json.dumps({"id": "bom_doc", "title": "t", "content": "c", "embedding": [1, 0, 0, 0]})
    (tmp_path / "docs.jsonl").write_text(BOM + document + "\n", encoding="utf-8")
    for args in (["load", "golden", str(tmp_path / "golden.jsonl")], ["load", "golden", str(tmp_path / "golden.csv")],
                 ["load", "golden", str(tmp_path / "qrels.txt"), "--queries", str(tmp_path / "queries.tsv")],
                 ["load", "corpus", str(tmp_path / "docs.jsonl")]):
        done = cli(store, *args)
        assert done.exit_code == 0, (args, done.output)
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        loaded = db.value("SELECT VALUE record::id(id) FROM seval_question "
                          "WHERE string::starts_with(record::id(id), 'bom_') ORDER BY id")
        assert loaded == ["bom_csv", "bom_json", "bom_trec"]
        assert db.value("RETURN record::exists(seval_article:bom_doc)") is True
    finally:
        db.close()


def test_a_missing_path_a_folder_and_a_file_where_a_folder_was_expected_read_differently(store, tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.jsonl").write_text("{}\n")
    before = snapshot_of(store)
    commands = {
        "missing folder": ["load", "beir", str(tmp_path / "nosuch")],
        "file for a folder": ["load", "beir", str(tmp_path / "file.jsonl")],
        "missing file": ["load", "golden", str(tmp_path / "nosuch.jsonl")],
        "folder for a file": ["load", "golden", "--format", "jsonl", str(tmp_path / "folder")],
    }
    said = {what: one_line_error(cli(store, *args), 2) for what, args in commands.items()}
    assert said["missing folder"] == f"error: {tmp_path / 'nosuch'}: no such folder"
    assert said["file for a folder"].startswith(f"error: {tmp_path / 'file.jsonl'}: a file, not a folder")
    assert said["missing file"] == f"error: {tmp_path / 'nosuch.jsonl'}: no such file or folder"
    assert said["folder for a file"].startswith(f"error: {tmp_path / 'folder'}: a folder, not a file")
    assert snapshot_of(store) == before


def _files(tmp_path, kind: str, key: str) -> tuple[list[str], str]:
    """The command that loads a file of kind `kind` whose second record's id is `key` (with no space in TREC's
    whitespace-separated qrels), and the file:line it is on."""
    doc = {"id": "fine_doc", "title": "t", "content": "parcel", "embedding": [0, 0, 1, 0]}
    good = {"id": "good", "text": "parcel", "embedding": [0, 0, 1, 0], "relevant": ["track_order"]}
    if kind == "corpus jsonl":
        path = tmp_path / "docs.jsonl"
        path.write_text(json.dumps(doc) + "\n" + json.dumps({**doc, "id": key}) + "\n")
        return ["load", "corpus", str(path)], f"{path}:2"
    if kind == "golden jsonl":
        path = tmp_path / "golden.jsonl"
        path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": key}) + "\n")
        return ["load", "golden", str(path)], f"{path}:2"
    if kind == "golden csv":
        path = tmp_path / "golden.csv"
        path.write_text("id,text,relevant,embedding\n" + "".join(
            f"{i},parcel,track_order,\"[0, 0, 1, 0]\"\n" for i in ("good", key)))
        return ["load", "golden", str(path)], f"{path}:3"
    if kind == "golden trec":
        (tmp_path / "queries.tsv").write_text(f"good\tparcel\n{key}\twhere\n")
        (tmp_path / "embeddings").mkdir()
        (tmp_path / "embeddings" / "queries.jsonl").write_text(
            "".join(json.dumps({"_id": i, "embedding": [0, 0, 1, 0]}) + "\n" for i in ("good", key)))
        (tmp_path / "qrels.txt").write_text(f"good 0 track_order 1\n{key} 0 track_order 1\n")
        return ["load", "golden", str(tmp_path / "qrels.txt"), "--queries", str(tmp_path / "queries.tsv")], f"{tmp_path / 'queries.tsv'}:2"
    if kind == "beir":
        folder = tmp_path / "beir"
        (folder / "qrels").mkdir(parents=True)
        (folder / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "t", "text": "parcel", "embedding": [0, 0, 1, 0]}) + "\n")
        (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": "parcel", "embedding": [0, 0, 1, 0]}) + "\n"
                                                      for i in ("good", key)))
        (folder / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\ngood\td1\t1\n{key}\td1\t1\n")
        return ["load", "beir", str(folder)], f"{folder / 'queries.jsonl'}:2"
    path = tmp_path / "failures.jsonl"  # golden promote: a production failure named by its own id
    path.write_text(json.dumps({"query": "parcel", "answer": "track_order", "id": key}) + "\n")
    return ["golden", "promote", str(path)], f"{path}:1"


@pytest.mark.parametrize("key", ["⟨x⟩", "`x y`", "``"])
@pytest.mark.parametrize("kind", ["corpus jsonl", "golden jsonl", "golden csv", "golden trec", "beir", "promote"])
def test_an_id_written_whole_in_surrealdb_quoting_is_refused_naming_file_line_and_id(store, tmp_path, kind, key):
    """`⟨x⟩` or a backticked key would load, but every command reads it as the key inside (store/record_ids.py),
    so the record could never be named: the load refuses it, one line naming file:line and the id."""
    key = key.replace(" ", "") if kind == "golden trec" else key
    args, where = _files(tmp_path, kind, key)
    before = snapshot_of(store)
    line = one_line_error(cli(store, *args), 2)
    assert line.startswith(f"error: {where}: ") and f"(id {key!r})" in line
    assert "written whole in SurrealDB's quoting" in line
    assert snapshot_of(store) == before


def test_quoting_inside_an_id_is_an_ordinary_id(seeded):
    from surreal_eval import diagnose

    add_questions(seeded, [q("a⟨x⟩"), q("`b` c"), q("seval_question:⟨y⟩")])
    for key in ("a⟨x⟩", "`b` c"):
        assert diagnose(seeded, f"seval_question:{key}", k=1).question == f"seval_question:{key}"
