"""A user's own SurrealQL function registered as a retriever (`surreal-eval retriever add`), evaluated
beside the built-in ones, fused with them, and refused in one line when it does not fit."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from surreal_eval import (
    HarnessConfig,
    Settings,
    add_function_retriever,
    add_fused_retriever,
    compare_runs,
    connect,
    evaluate,
    gate,
    history,
    import_harness,
    registry,
    remove_retriever,
    write_report,
)
from surreal_eval.errors import ConfigError, InputError
from surreal_eval.load.bulk import record_ingest
from surreal_eval.runs.watch import drain_ingests
from surreal_eval.present.cli import app
from surreal_eval.runs.diagnose import diagnose
from surreal_eval.runs.watch import set_watch
from surreal_eval.store.registry import resolve_retrievers
from surreal_eval.store.schema import harness_config
from surreal_eval.store.user_retrievers import function_parameters

from .conftest import snapshot, seed_own, lists_reused
from .test_attach import table_state

runner = CliRunner()

#: A user's BM25 over article written by hand ({id, score}, best first), the same function returning
#: bare records, and functions that do not fit.
USER_FUNCTIONS = r"""
DEFINE FUNCTION fn::my_bm25($text: string, $embedding: option<array<number>>, $k: int) -> array {
    LET $words = string::replace($text, <regex> '[^\\p{L}\\p{N}]+', ' ');
    RETURN (SELECT id, search::score(1) AS score FROM seval_article WHERE bm25_text @1,OR@ $words ORDER BY score DESC, id ASC LIMIT $k)[WHERE score > 0];
};
DEFINE FUNCTION fn::my::ids($text: string, $embedding: option<array<number>>, $k: int) -> array<record<seval_article>> {
    RETURN fn::my_bm25($text, $embedding, $k).id;
};
DEFINE FUNCTION fn::two_args($text: string, $k: int) { RETURN [] };
DEFINE FUNCTION fn::needs_vector($text: string, $embedding: array<number>, $k: int) { RETURN [] };
DEFINE FUNCTION fn::text_k($text: string, $embedding: option<array<number>>, $k: string) { RETURN [] };
DEFINE FUNCTION fn::a_number($text: string, $embedding: option<array<number>>, $k: int) { RETURN 3 };
DEFINE FUNCTION fn::strings($text: string, $embedding: option<array<number>>, $k: int) { RETURN ['seval_article:a'] };
DEFINE FUNCTION fn::text_scores($text: string, $embedding: option<array<number>>, $k: int) { RETURN [{ id: seval_article:refund_request, score: 'high' }] };
DEFINE FUNCTION fn::questions($text: string, $embedding: option<array<number>>, $k: int) { RETURN [seval_question:money_back] };
DEFINE FUNCTION fn::fails($text: string, $embedding: option<array<number>>, $k: int) { THROW 'index offline' };
"""


@pytest.fixture
def mine(seeded):
    """The demo with the user's functions defined and fn::my_bm25 registered as `mine`, its bare-records twin
    as `mine_ids`, and `mine_hybrid`: RRF of mine with the built-in vector list."""
    seeded.query(USER_FUNCTIONS)
    add_function_retriever(seeded, "mine", function="fn::my_bm25")
    add_function_retriever(seeded, "mine_ids", function="my::ids")
    add_fused_retriever(seeded, "mine_hybrid", fusion="rrf", lists=["mine,vector"])
    return seeded


def per_question(report, retriever, k):
    return {r.question: r.ranked for r in report.per_question if r.retriever == retriever and r.k == k}


def test_a_function_retriever_ranks_as_its_function_and_fuses_as_the_built_in_lists_do(mine):
    run = evaluate(mine, ks=[1, 3, 5], retrievers=["bm25", "hybrid", "mine", "mine_ids", "mine_hybrid"], per_question=True)
    # fn::my_bm25 is BM25 over article written by hand: the same rankings as the built-in bm25
    assert per_question(run, "mine", 5) == per_question(run, "bm25", 5)
    assert per_question(run, "mine_ids", 5) == per_question(run, "mine", 5)
    # and RRF of it with the vector list is the built-in hybrid, ranking and scores
    assert per_question(run, "mine_hybrid", 5) == per_question(run, "hybrid", 5)
    scores = {row["retriever"]: row["scores"] for row in mine.value(
        "SELECT retriever, scores FROM seval_ranking WHERE run = type::record('seval_run', $r) AND question = seval_question:money_back",
        {"r": run.run.split(":", 1)[1]})}
    assert scores["mine_hybrid"] == pytest.approx(scores["hybrid"])
    assert scores["mine"] == pytest.approx(scores["bm25"])  # its own scores, kept
    assert scores["mine_ids"] == pytest.approx([1 / r for r in range(1, len(scores["mine_ids"]) + 1)])  # bare records: 1 / rank
    direct = mine.value("RETURN fn::my_bm25('refund for a damaged parcel', NONE, 5).id")
    assert mine.value("RETURN fn::seval::retrieve('mine', 'refund for a damaged parcel', [0.0, 0.0, 0.0, 0.0], 5)") == direct


def test_a_function_retriever_is_in_history_compare_gate_diagnose_and_the_report(mine, tmp_path):
    first = evaluate(mine, ks=[1, 3], retrievers=["bm25", "mine", "mine_hybrid"], label="first")
    second = evaluate(mine, ks=[1, 3], retrievers=["mine", "mine_hybrid"], label="second")
    recorded = {r.run: r for r in history(mine)}[first.run]
    assert {"mine", "mine_hybrid"} <= set(recorded.retrievers)
    assert recorded.mean("mine", "recall", 3) == pytest.approx(next(r.recall for r in first.results if r.retriever == "mine" and r.k == 3))
    comparison = compare_runs(mine, first.run, second.run)
    assert {row.retriever for row in comparison.rows} == {"mine", "mine_hybrid"}
    assert all(row.difference == 0 for row in comparison.rows)
    verdict = gate(mine, baseline=first.run, candidate=second.run, metric="recall@3", retriever="mine")
    assert verdict.passed and [c.retriever for c in verdict.checks] == ["mine"]
    seen = diagnose(mine, "money_back", k=3, retrievers=["bm25", "mine"])
    views = {v.retriever: [(h.id, h.score) for h in v.hits] for v in seen.retrievers}
    assert views["mine"] == views["bm25"] and views["mine"]
    page = write_report(mine, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "mine_hybrid" in page


def test_the_after_ingest_evaluation_runs_a_function_retriever(mine):
    set_watch(mine, ks=[1, 3], retrievers=["mine", "mine_hybrid"])
    record_ingest(mine, corpus="seval_article", documents=1)
    (done,) = drain_ingests(mine).evaluated
    run = done.run
    recorded = {r.run: r for r in history(mine)}[run]
    assert recorded.trigger == "ingest" and recorded.retrievers == ["mine", "mine_hybrid"]
    by_hand = evaluate(mine, ks=[1, 3], retrievers=["mine", "mine_hybrid"])
    for row in by_hand.results:
        assert recorded.mean(row.retriever, "recall", row.k) == pytest.approx(row.recall)
        assert recorded.mean(row.retriever, "ndcg", row.k) == pytest.approx(row.ndcg)


def test_user_rows_survive_init_and_remove_takes_them_out_of_the_dispatch(mine):
    config = harness_config(mine)
    import_harness(mine, config)
    assert [r.name for r in registry(mine) if not r.harness] == ["mine", "mine_ids", "mine_hybrid"]
    assert {r.name: r.kind for r in registry(mine)}["mine_hybrid"] == "fused"
    before = evaluate(mine, ks=[3], retrievers=["mine_hybrid"])
    assert before.results[0].recall > 0
    remove_retriever(mine, "mine_hybrid")
    remove_retriever(mine, "mine_ids")
    assert "mine_ids" not in mine.value("INFO FOR DB")["functions"]["seval::function_candidates"]
    assert "'mine'" in mine.value("INFO FOR DB")["functions"]["seval::function_candidates"]
    with pytest.raises(ConfigError, match="unknown retriever mine_ids"):
        evaluate(mine, ks=[3], retrievers=["mine_ids"])
    assert "my::ids" in mine.value("INFO FOR DB")["functions"]  # the user's function stays


def test_a_function_removed_after_registration_is_named_when_a_run_needs_it(mine):
    mine.query("REMOVE FUNCTION fn::my_bm25")
    with pytest.raises(ConfigError) as refused:
        evaluate(mine, ks=[3], retrievers=["mine_hybrid"])
    assert str(refused.value) == ("retriever mine calls fn::my_bm25, which no longer exists: define it again, "
                                  "or `surreal-eval retriever remove mine`")
    assert evaluate(mine, ks=[3], retrievers=["bm25"]).results  # the others still run


def test_a_function_redefined_with_another_signature_names_the_retriever_and_how_to_register_it_again(mine):
    mine.query("DEFINE FUNCTION OVERWRITE fn::my_bm25($k: int, $text: string) { RETURN [] }")  # parameters swapped
    with pytest.raises(ConfigError) as refused:
        evaluate(mine, ks=[3], retrievers=["mine_hybrid"])
    assert str(refused.value) == (
        "retriever mine: fn::my_bm25 was redefined since it was registered: its parameters are now ($k: int, $text: string), "
        "which get k, text, and were registered to get text, embedding, k; register it again: `surreal-eval retriever remove mine` "
        "then `surreal-eval retriever add mine --function fn::my_bm25`")
    mine.query("DEFINE FUNCTION OVERWRITE fn::my_bm25($q: string, $n: int, $lang: string) { RETURN [] }")  # they no longer bind
    with pytest.raises(ConfigError, match=r"^retriever mine: fn::my_bm25 was redefined .* which do not bind \(fn::my_bm25: parameter"):
        evaluate(mine, ks=[3], retrievers=["mine"])
    mine.query("DEFINE FUNCTION OVERWRITE fn::my_bm25($text: string, $embedding: option<array<number>>, $k: int) "
               "{ RETURN [{ id: seval_article:refund_request, score: 1.0 }] }")  # another body, the same signature: it runs
    run = evaluate(mine, ks=[1], retrievers=["mine"], per_question=True)
    assert {r.ranked[0] for r in run.per_question} == {"seval_article:refund_request"}


def test_registration_says_when_a_function_breaks_ties_at_random_and_not_when_it_scores_them(seeded):
    """Bare records in another order at every call (ties broken at random, as search::rrf does) make two runs of the
    same data differ; {id, score} objects with tied scores are ordered by id, the same at every call."""
    seeded.query("DEFINE FUNCTION fn::coin($text: string, $k: int) "
                 "{ RETURN array::slice(array::shuffle((SELECT VALUE id FROM seval_article)), 0, $k) };"
                 "DEFINE FUNCTION fn::tied($text: string, $k: int) "
                 "{ RETURN array::shuffle((SELECT VALUE id FROM seval_article)).map(|$r| { id: $r, score: 1.0 }) };")
    assert add_function_retriever(seeded, "coin", function="fn::coin").repeatable is False  # 10 records: the same order twice 1 in 10!
    tied = add_function_retriever(seeded, "tied", function="fn::tied")
    assert tied.repeatable is True and tied.prefix is True


def test_the_parameters_are_read_from_the_definition_nested_types_and_all():
    ddl = ("DEFINE FUNCTION fn::a::b($text: string, $embedding: none | array<number, 4>, $k: int, $o: option<object>) "
           "-> array<record<doc>> { RETURN [] } PERMISSIONS FULL")
    assert function_parameters(ddl) == [("$text", "string"), ("$embedding", "none | array<number, 4>"), ("$k", "int"),
                                        ("$o", "option<object>")]
    assert function_parameters("DEFINE FUNCTION fn::none() { RETURN [] } PERMISSIONS FULL") == []


# ----------------------------------------------------------------------------- refusals

REFUSED = {
    "missing": (["mine2", "--function", "fn::nope"], "function fn::nope does not exist in this database"),
    "not a function name": (["mine2", "--function", "fn::bad-name"], "is not a function name"),
    "k a string": (["mine2", "--function", "fn::text_k"],
                   "fn::text_k: parameter $k is ambiguous: $text already gets the question's text; give one of them with --arg"),
    "a number": (["mine2", "--function", "fn::a_number"], "returned 3, not an array of records"),
    "strings": (["mine2", "--function", "fn::strings"], "returned seval_article:a, which is neither a record"),
    "text scores": (["mine2", "--function", "fn::text_scores"], "with a numeric score"),
    "another table": (["mine2", "--function", "fn::questions"],
                      "returned seval_question:money_back, a record of table seval_question, not of the corpus table seval_article"),
    "it throws": (["mine2", "--function", "fn::fails"], "fn::fails on seval_question:money_back: index offline"),
    "the harness's": (["mine2", "--function", "fn::seval::bm25_candidates"], "fn::seval::bm25_candidates is the harness's own"),
    "corpus unknown": (["mine2", "--function", "fn::my_bm25", "--corpus", "nowhere"], "--corpus nowhere is not a corpus table"),
    "name not an identifier": (["my-search", "--function", "fn::my_bm25"], "retriever name 'my-search' is not a valid identifier"),
    "name a keyword": (["select", "--function", "fn::my_bm25"], "is a SurrealQL keyword"),
    "name a harness retriever": (["hybrid", "--function", "fn::my_bm25"], "retriever name hybrid is taken"),
    "name a sweep": (["floor_sweep", "--function", "fn::my_bm25"], "retriever name floor_sweep is taken"),
    "name a list": (["vector", "--fuse", "rrf", "--lists", "bm25,mine"], "retriever name vector is taken"),
    "name a user's": (["mine", "--function", "fn::my_bm25"], "retriever name mine is taken"),
    "unknown list": (["f", "--fuse", "rrf", "--lists", "bm25,hybrid"], "--lists hybrid: not a candidate list"),
    "linear of three": (["f", "--fuse", "linear", "--lists", "bm25,vector,mine"], "linear fuses exactly two different lists"),
    "one list": (["f", "--fuse", "rrf", "--lists", "mine"], "rrf fuses two or more different lists"),
    "unknown fusion": (["f", "--fuse", "rrf_floor", "--lists", "bm25,mine"], "--fuse 'rrf_floor' is not a fusion"),
    "neither": (["f"], "give either --function fn::NAME or --fuse rrf|linear with --lists"),
}


def demo_store(path, functions: str, **retrievers: dict):
    """A surrealkv store at `path` with the demo, `functions` defined and each of `retrievers`
    ({name: add_function_retriever's options}) registered, closed again; returns `path`."""
    db = connect(Settings(url=f"surrealkv://{path}"))
    import_harness(db, HarnessConfig(dimension=4))
    seed_own(db)
    db.query(functions)
    for name, options in retrievers.items():
        add_function_retriever(db, name, **options)
    db.close()
    return path


@pytest.fixture
def store(tmp_path):
    """A surrealkv store with the demo, the user's functions and `mine` registered."""
    return demo_store(tmp_path / "store", USER_FUNCTIONS, mine={"function": "fn::my_bm25"})


def cli(store, *args):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


def assert_refused(store, cases: dict[str, tuple[list[str], str]]) -> None:
    """Each command of `cases` ({case: (arguments, message)}) fails in one line `error: ...` containing its
    message, exit 2, and the store is left as it was."""
    db = connect(Settings(url=f"surrealkv://{store}"))
    before = snapshot(db)
    db.close()
    for case, (args, message) in cases.items():
        result = cli(store, *args)
        assert result.exit_code == 2, (case, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (case, lines)
    db = connect(Settings(url=f"surrealkv://{store}"))
    assert snapshot(db) == before
    db.close()


def assert_rows_refused(db, rows: list[str]) -> None:
    """Each registry row of `rows` (CONTENT text) is refused by the table's asserts, and the database is left as it was."""
    from surreal_eval.errors import Rejected

    before = snapshot(db)
    for row in rows:
        with pytest.raises(Rejected):
            db.query("CREATE seval_retriever:x CONTENT " + row)
    assert snapshot(db) == before


def test_each_refusal_is_one_line_exit_2_and_changes_nothing(store):
    assert_refused(store, {**{case: (["retriever", "add", *args], message) for case, (args, message) in REFUSED.items()},
                           "remove bm25": (["retriever", "remove", "bm25"], "retriever bm25 is the harness's own"),
                           "remove nobody": (["retriever", "remove", "nobody"], "no retriever nobody")})


def test_remove_refuses_a_list_another_retriever_fuses_or_the_watch_runs(mine):
    before = snapshot(mine)
    with pytest.raises(InputError, match="retriever mine_hybrid fuses mine: remove it first"):
        remove_retriever(mine, "mine")
    remove_retriever(mine, "mine_hybrid")
    set_watch(mine, ks=[3], retrievers=["mine"])
    watched = snapshot(mine)
    with pytest.raises(InputError, match="the after-ingest evaluation runs mine"):
        remove_retriever(mine, "mine")
    assert snapshot(mine) == watched and before != watched


def test_registration_without_questions_needs_a_text(db):
    db.query(USER_FUNCTIONS)
    before = snapshot(db)
    with pytest.raises(InputError, match="the golden set is empty: give --text"):
        add_function_retriever(db, "mine", function="fn::my_bm25")
    assert snapshot(db) == before
    added = add_function_retriever(db, "mine", function="fn::my_bm25", text="refund")
    assert added.probed_question is None and added.probed_hits == 0


def test_retriever_add_and_the_listing_through_the_cli(store):
    added = cli(store, "retriever", "add", "mine_hybrid", "--fuse", "linear", "--lists", "mine,vector", "--no-default")
    assert added.exit_code == 0 and "registered retriever mine_hybrid: linear of mine + vector" in added.stdout, added.output
    listed = json.loads(cli(store, "retriever", "list", "--json").stdout)
    kinds = {r["name"]: (r["kind"], r["function_name"], r["corpus"], r["by_default"]) for r in listed}
    assert kinds["mine"] == ("function", "fn::my_bm25", "seval_article", True)  # registered means evaluated
    assert kinds["mine_hybrid"] == ("fused", None, None, False) and kinds["bm25"][0] == "list"
    ran = cli(store, "evaluate", "--k", "1,3", "--json")
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["retrievers"] == ["bm25", "vector", "hybrid", "hybrid_floor", "mine"]
    named = cli(store, "evaluate", "--k", "1,3", "--retriever", "mine_hybrid", "--json")  # off by default: run when named
    assert named.exit_code == 0 and json.loads(named.stdout)["retrievers"] == ["mine_hybrid"], named.output
    table = cli(store, "retriever", "list")
    assert "fn::my_bm25 on seval_article" in table.stdout
    assert cli(store, "retriever", "remove", "mine_hybrid").exit_code == 0


# ----------------------------------------------------------------------------- the issue's flow

#: A user's own knowledge base: their field names, analyzer, FULLTEXT and HNSW indexes, and the
#: retrieval function their application runs (English records only, BM25 on body).
USER_KB = r"""
DEFINE TABLE kb SCHEMAFULL PERMISSIONS FULL;
DEFINE FIELD body ON kb TYPE string;
DEFINE FIELD heading ON kb TYPE string;
DEFINE FIELD vec ON kb TYPE array<float>;
DEFINE FIELD lang ON kb TYPE string;
DEFINE ANALYZER kb_words TOKENIZERS blank, class FILTERS lowercase, snowball(english);
DEFINE INDEX kb_body ON kb FIELDS body FULLTEXT ANALYZER kb_words BM25;
DEFINE INDEX kb_vec ON kb FIELDS vec HNSW DIMENSION 4 DIST COSINE;
DEFINE FUNCTION fn::kb_search($text: string, $embedding: option<array<number>>, $k: int) -> array {
    RETURN SELECT id, search::score(1) AS score FROM kb WHERE lang = 'en' AND body @1,OR@ $text ORDER BY score DESC, id LIMIT $k;
};
"""
#: Besides the English records, translations in German that repeat the questions' words.
KB_EXTRA = {
    "refund_de": ("Refund refund parcel damaged Erstattung", [0.2, 0.2, 0.3, 0.3]),
    "courier_de": ("Courier order courier Kurier Bestellung", [0.3, 0.2, 0.2, 0.3]),
}


def user_kb(path):
    from .test_attach import DOCS

    db = connect(Settings(url=f"surrealkv://{path}"))
    db.query(USER_KB)
    for key, (text, vector) in {**DOCS, **KB_EXTRA}.items():
        db.query("CREATE type::record('kb', $k) CONTENT { body: $t, heading: $k, vec: $v, lang: $l }",
                 {"k": key, "t": text, "v": vector, "l": "de" if key.endswith("_de") else "en"})
    return db


def users_own(db) -> dict:
    info = db.value("INFO FOR DB")
    return {"kb": table_state(db, "kb"), "function": info["functions"]["kb_search"], "analyzer": info["analyzers"]["kb_words"]}


def test_the_issues_flow_a_users_table_and_function_attached_registered_evaluated_and_left_as_they_were(tmp_path):
    from .test_attach import QUESTIONS

    store = tmp_path / "store"
    db = user_kb(store)
    before = users_own(db)
    db.close()

    def ok(*args):
        result = cli(store, *args)
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    ok("init", "--dimension", "4")
    ok("attach", "kb", "--content", "body", "--embedding", "vec", "--title", "heading")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    ok("load", "golden", str(golden), "--corpus", "kb")
    assert "fn::kb_search on corpus kb" in ok("retriever", "add", "mine", "--function", "fn::kb_search", "--corpus", "kb")
    ok("retriever", "add", "mine_hybrid", "--fuse", "rrf", "--lists", "mine,vector")
    everything = "bm25,vector,hybrid,mine,mine_hybrid"
    first = json.loads(ok("evaluate", "--corpus", "kb", "--k", "1,3", "--retriever", everything, "--per-question", "--json"))
    second = json.loads(ok("evaluate", "--corpus", "kb", "--k", "1,3", "--retriever", everything, "--json"))

    db = connect(Settings(url=f"surrealkv://{store}"))
    ranked = {(r["question"], r["retriever"]): r["ranked"] for r in first["per_question"] if r["k"] == 3}
    for q in QUESTIONS:  # the user's function, as a run scored it, is what their application gets
        theirs = db.value("RETURN fn::kb_search($t, $v, 3).id", {"t": q["text"], "v": q["embedding"]})
        assert ranked[(f"seval_question:{q['id']}", "mine")] == [str(r) for r in theirs]
    assert not any(r.endswith("_de") for (_, name), ids in ranked.items() if name == "mine" for r in ids)
    at_1 = {r["retriever"]: r["hit_rate"] for r in first["results"] if r["k"] == 1}
    assert at_1["mine"] == 1.0 > at_1["bm25"]  # the German repeats outrank the answers for plain BM25 only
    db.close()

    compared = json.loads(ok("compare", first["run"], second["run"], "--json"))
    assert {"mine", "mine_hybrid"} <= {row["retriever"] for row in compared["rows"]}
    assert "mine" in ok("gate", "--baseline", first["run"], "--candidate", second["run"], "--metric", "recall@3",
                        "--retriever", "mine")
    assert "mine: top 3" in ok("diagnose", "money", "--corpus", "kb", "--k", "3", "--retriever", "mine,bm25")
    ok("report", "--html", str(tmp_path / "report.html"))
    assert "mine_hybrid" in (tmp_path / "report.html").read_text(encoding="utf-8")

    db = connect(Settings(url=f"surrealkv://{store}"))
    assert users_own(db) == before
    db.close()


def test_the_registry_table_refuses_a_function_row_that_does_not_fit(mine):
    assert_rows_refused(mine, ["{ position: 900, lists: ['x'], fusion: 'none', function_name: 'fn::f(); REMOVE TABLE seval_question' }",
                               "{ position: 900, lists: ['mine'], fusion: 'none', function_name: 'fn::my_bm25' }",
                               "{ position: 900, lists: ['x'], fusion: 'rrf', function_name: 'fn::my_bm25' }",
                               "{ position: 900, lists: ['bm25'], fusion: 'none', corpus: 'seval_article' }"])


def test_a_function_retrievers_list_is_never_read_from_an_earlier_run(mine):
    names = ["mine", "mine_hybrid"]
    evaluate(mine, ks=[3], retrievers=names)
    again = evaluate(mine, ks=[3], retrievers=names, per_question=True)
    assert lists_reused(again) == {"lists": 16, "reused": 8}  # the vector lists only, never mine's
    assert mine.value("SELECT VALUE list FROM seval_candidate_cache GROUP BY list") == ["vector"]
    # the function answers otherwise now: the next run shows it, nothing stale
    mine.query("DEFINE FUNCTION OVERWRITE fn::my_bm25($text: string, $embedding: option<array<number>>, $k: int) -> array "
               "{ RETURN [{ id: seval_article:contact_support, score: 1.0 }] }")
    changed = evaluate(mine, ks=[3], retrievers=names, per_question=True)
    assert set(map(tuple, per_question(changed, "mine", 3).values())) == {("seval_article:contact_support",)}


def test_a_run_that_names_no_retriever_runs_the_registered_ones_of_its_corpus(mine):
    remove_retriever(mine, "mine_hybrid")
    add_fused_retriever(mine, "mine_hybrid", fusion="rrf", lists=["mine,vector"], by_default=False)
    built_in = ["bm25", "vector", "hybrid", "hybrid_floor"]
    assert resolve_retrievers(mine, None) == [*built_in, "mine", "mine_ids"]  # the default corpus, seval_article
    assert resolve_retrievers(mine, None, "seval_article") == [*built_in, "mine", "mine_ids"]
    assert resolve_retrievers(mine, None, "seval_kb") == built_in  # their functions return seval_article's records
    assert resolve_retrievers(mine, ["mine_hybrid"]) == ["mine_hybrid"]  # off by default: run when named
    assert evaluate(mine, ks=[3], intervals=False).retrievers == [*built_in, "mine", "mine_ids"]
    # the same list in SurrealQL, which the Python reads: one source
    assert mine.value("RETURN fn::seval::default_retrievers('seval_kb')") == built_in
    assert mine.value("RETURN fn::seval::default_retrievers()") == [*built_in, "mine", "mine_ids"]
    means = mine.value("RETURN fn::seval::evaluate(3, NONE, NONE)")["means"]
    assert {"mine", "mine_ids"} <= {m["retriever"] for m in means} and "mine_hybrid" not in {m["retriever"] for m in means}
