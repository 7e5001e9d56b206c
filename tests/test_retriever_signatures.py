"""A user's retrieval function of any signature: its parameters bound by type or name, the others given
with --arg; --per-k for a function whose top k is not the first k of a deeper call; and its
{id, score} list ranked by score whatever order it comes back in (the engine's closure-sorting quirk)."""

from __future__ import annotations

import time

import pytest

from surreal_eval import HarnessConfig, add_function_retriever, evaluate, import_harness, registry
from surreal_eval.errors import ConfigError, InputError
from surreal_eval.load.attach import attach_table
from surreal_eval.golden.files import load_golden
from surreal_eval.models import Question
from surreal_eval.store.connection import record_str
from surreal_eval.store.signatures import bind_parameters, parse_args

from .test_user_retrievers import USER_FUNCTIONS, assert_refused, assert_rows_refused, cli, demo_store, per_question

#: The lesson's four retrieval functions (LESSON.md), with their signatures as the lesson writes them;
#: their bodies read the demo's seval_article where the lesson's read its article table.
LESSON_FUNCTIONS = r"""
DEFINE FUNCTION fn::retrieve_bm25($q: string, $k: int) -> array {
    RETURN (SELECT id, search::score(1) AS s FROM seval_article WHERE bm25_text @1,OR@ $q ORDER BY s DESC, id LIMIT $k).id;
};
DEFINE FUNCTION fn::retrieve_vec($qvec: array<float>, $k: int) -> array {
    RETURN (SELECT id, vector::distance::knn() AS d FROM seval_article WHERE embedding <|10, 40|> $qvec ORDER BY d, id LIMIT $k).id;
};
DEFINE FUNCTION fn::retrieve_hybrid($q: string, $qvec: array<float>, $k: int) -> array {
    LET $bm25 = SELECT id, search::score(1) AS s FROM seval_article WHERE bm25_text @1,OR@ $q ORDER BY s DESC LIMIT 10;
    LET $vec = SELECT id, vector::distance::knn() AS d FROM seval_article WHERE embedding <|10, 40|> $qvec ORDER BY d;
    RETURN search::rrf([$bm25, $vec], $k, 60).id;
};
DEFINE FUNCTION fn::retrieve_hybrid_floor($q: string, $qvec: array<float>, $k: int, $floor: float) -> array {
    LET $bm25 = (SELECT id, search::score(1) AS s FROM seval_article WHERE bm25_text @1,OR@ $q ORDER BY s DESC LIMIT 10)[WHERE s >= $floor];
    LET $vec = SELECT id, vector::distance::knn() AS d FROM seval_article WHERE embedding <|10, 40|> $qvec ORDER BY d;
    RETURN search::rrf([$bm25, $vec], $k, 60).id;
};
"""

#: Functions whose parameters bind otherwise: a second string given by --arg, `any` and `number`
#: parameters bound by name, and signatures that do not bind; and fused_top, an RRF of the BM25 and
#: vector top $limit computed by hand (ties by id, so deterministic) whose top 3 is not the first 3
#: of its top 10: both input lists grow with $limit.
OTHER_FUNCTIONS = r"""
DEFINE FUNCTION fn::prefixed($text: string, $prefix: string, $k: int) -> array {
    LET $words = $prefix + ' ' + $text;
    RETURN SELECT id, search::score(1) AS score FROM seval_article WHERE bm25_text @1,OR@ $words ORDER BY score DESC, id LIMIT $k;
};
DEFINE FUNCTION fn::by_name($query: any, $vec: any, $n: number) -> array {
    RETURN (SELECT id, vector::distance::knn() AS d FROM seval_article WHERE embedding <|10, 40|> $vec ORDER BY d, id LIMIT $n).id;
};
DEFINE FUNCTION fn::two_ints($text: string, $k: int, $limit: int) { RETURN [] };
DEFINE FUNCTION fn::two_vectors($a: array<float>, $b: option<array<number>>) { RETURN [] };
DEFINE FUNCTION fn::unnamed_any($text: string, $thing: any) { RETURN [] };
DEFINE FUNCTION fn::needs_object($text: string, $filter: object, $k: int) -> array {
    RETURN SELECT id, search::score(1) AS score FROM seval_article WHERE bm25_text @1,OR@ $text AND id != $filter.skip
        ORDER BY score DESC, id LIMIT $k;
};
DEFINE FUNCTION fn::fused_top($query: string, $vector: array<float>, $limit: int) -> array {
    LET $bm25 = (SELECT id, search::score(1) AS s FROM seval_article WHERE bm25_text @1,OR@ $query ORDER BY s DESC, id LIMIT $limit).id;
    LET $vec = (SELECT id, vector::distance::knn() AS d FROM seval_article WHERE embedding <|10, 40|> $vector ORDER BY d, id LIMIT $limit).id;
    RETURN array::distinct($bm25.concat($vec)).map(|$id| { id: $id, score:
        (IF $id IN $bm25 { 1.0 / (61 + array::find_index($bm25, $id)) } ELSE { 0.0 })
        + (IF $id IN $vec { 1.0 / (61 + array::find_index($vec, $id)) } ELSE { 0.0 }) });
};
"""


@pytest.fixture
def users(seeded):
    """The demo with the lesson's functions and the others above defined (none registered)."""
    seeded.query(LESSON_FUNCTIONS + OTHER_FUNCTIONS + USER_FUNCTIONS)
    return seeded


def generated_dispatch(db) -> str:
    return db.value("INFO FOR DB")["functions"]["seval::function_candidates"]


# ----------------------------------------------------------------------------- binding


def test_the_lessons_four_functions_register_as_they_are_and_rank_as_the_built_in_lists(users):
    added = {name: add_function_retriever(users, name, function=fn, args=args) for name, fn, args in (
        ("lesson_bm25", "fn::retrieve_bm25", None), ("lesson_vec", "fn::retrieve_vec", None),
        ("lesson_hybrid", "fn::retrieve_hybrid", None), ("lesson_floor", "fn::retrieve_hybrid_floor", ["floor=1.5"]),
        ("lesson_floor_high", "fn::retrieve_hybrid_floor", ["floor=1000"]))}
    assert added["lesson_bm25"].binding == ["text", "k"] and added["lesson_vec"].binding == ["embedding", "k"]
    assert added["lesson_hybrid"].binding == ["text", "embedding", "k"]
    assert added["lesson_floor"].binding == ["text", "embedding", "k", "arg:floor"] and added["lesson_floor"].args == {"floor": 1.5}
    assert added["lesson_floor"].call == "fn::retrieve_hybrid_floor($q=text, $qvec=embedding, $k=k, $floor=1.5)"
    rows = {r.name: r for r in registry(users)}
    assert rows["lesson_floor"].args == {"floor": 1.5} and rows["lesson_floor_high"].args == {"floor": 1000}
    # the values travel as data, read from the row at the call: never written into the SurrealQL
    assert "1.5" not in generated_dispatch(users) and "1000" not in generated_dispatch(users)
    run = evaluate(users, ks=[1, 3, 5], retrievers=["bm25", "vector", *added], per_question=True)
    for q in users.value("SELECT id, text, embedding FROM seval_question"):  # what each function returns, as it returns it
        theirs = users.value("RETURN [fn::retrieve_bm25($t, 5), fn::retrieve_vec($v, 5)]", {"t": q["text"], "v": q["embedding"]})
        assert per_question(run, "lesson_bm25", 5)[record_str(q["id"])] == [record_str(r) for r in theirs[0]]
        assert per_question(run, "lesson_vec", 5)[record_str(q["id"])] == [record_str(r) for r in theirs[1]]
    assert per_question(run, "lesson_vec", 5) == per_question(run, "vector", 5)
    # a floor above every BM25 score leaves the vector list alone: the value reached the function
    assert per_question(run, "lesson_floor_high", 5) == per_question(run, "vector", 5)
    assert {r.retriever for r in run.results} >= {"lesson_hybrid", "lesson_floor"}


def test_a_second_string_is_given_with_arg_and_any_or_number_parameters_bind_by_name(users):
    prefixed = add_function_retriever(users, "prefixed", function="fn::prefixed", args=["prefix=refund"])
    assert prefixed.binding == ["text", "arg:prefix", "k"] and prefixed.args == {"prefix": "refund"}
    by_name = add_function_retriever(users, "by_name", function="fn::by_name")
    assert by_name.binding == ["text", "embedding", "k"]
    skip = add_function_retriever(users, "skip", function="fn::needs_object", args=['filter={"skip": "x"}'])
    assert skip.args == {"filter": {"skip": "x"}}
    # the signatures of earlier releases' refusals bind now: two parameters, a required vector
    assert add_function_retriever(users, "two", function="fn::two_args").binding == ["text", "k"]
    assert add_function_retriever(users, "vec", function="fn::needs_vector").binding == ["text", "embedding", "k"]
    run = evaluate(users, ks=[3], retrievers=["prefixed", "by_name", "vector"], per_question=True)
    assert per_question(run, "by_name", 3) == per_question(run, "vector", 3)
    for question in users.value("SELECT id, text FROM seval_question"):
        theirs = users.value("RETURN fn::prefixed($t, 'refund', 3).id", {"t": question["text"]})
        assert per_question(run, "prefixed", 3)[record_str(question["id"])] == [record_str(r) for r in theirs]


def test_an_old_signature_and_a_row_of_an_earlier_release_without_a_binding_call_text_embedding_k(users):
    added = add_function_retriever(users, "mine", function="fn::my_bm25")
    assert added.binding == ["text", "embedding", "k"] and added.call == "fn::my_bm25($text=text, $embedding=embedding, $k=k)"
    before = evaluate(users, ks=[3], retrievers=["mine"], per_question=True)
    users.query("UPDATE seval_retriever:mine UNSET binding")  # as a row written before bindings were kept
    import_harness(users, HarnessConfig(dimension=4))
    assert "fn::my_bm25($q.text, $q.embedding, $p.depth)" in generated_dispatch(users)
    after = evaluate(users, ks=[3], retrievers=["mine"], per_question=True)
    assert per_question(after, "mine", 3) == per_question(before, "mine", 3)


def test_arg_values_are_json_when_they_parse_and_text_otherwise():
    parsed = parse_args(["floor=1.5", "n=2", "on=true", "w=[0.3, 0.7]", 'lang="en"', "word=refund", "x=NaN", "empty=", "$t=a=b"])
    assert parsed == {"floor": 1.5, "n": 2, "on": True, "w": [0.3, 0.7], "lang": "en", "word": "refund", "x": "NaN",
                      "empty": "", "t": "a=b"}
    assert parse_args(None) == {}
    for bad, message in ((["floor"], "write NAME=VALUE"), (["a-b=1"], "write NAME=VALUE"), (["f=1", "f=2"], "--arg f is given twice")):
        with pytest.raises(InputError, match=message):
            parse_args(bad)


def test_each_parameter_binds_by_type_then_by_name_and_arg_overrides_either():
    def bind(params, args=None):
        return bind_parameters("fn::f", [(f"${n}", t) for n, t in params], args or {})

    assert bind([("a", "string"), ("b", "none | array<float>"), ("c", "int")]) == ["text", "embedding", "k"]
    assert bind([("v", "array<number, 384>"), ("o", "option<string>")]) == ["embedding", "text"]
    assert bind([("question", "any"), ("embedding", "array"), ("top_k", "number")]) == ["text", "embedding", "k"]
    assert bind([("text", "string"), ("k", "int")], {"k": 5}) == ["text", "arg:k"]
    with pytest.raises(InputError, match=r"parameter \$size: number is unbound"):
        bind([("text", "string"), ("size", "number")])
    with pytest.raises(InputError, match=r"parameter \$q is ambiguous: \$text already gets the question's text"):
        bind([("text", "string"), ("q", "any")])
    with pytest.raises(ConfigError, match="is a SurrealQL keyword"):
        bind([("value", "float")], {"value": 1.0})  # a name written into the call must be an identifier


# ----------------------------------------------------------------------------- refusals


@pytest.fixture
def store(tmp_path):
    """A surrealkv store with the demo, the functions above and `perk`, fn::fused_top registered with --per-k."""
    return demo_store(tmp_path / "store", LESSON_FUNCTIONS + OTHER_FUNCTIONS + USER_FUNCTIONS,
                      perk={"function": "fn::fused_top", "per_k": True})


REFUSED = {
    "two strings": (["x", "--function", "fn::prefixed"],
                    "fn::prefixed: parameter $prefix is ambiguous: $text already gets the question's text; "
                    "give one of them with --arg (e.g. --arg prefix=VALUE)"),
    "two ints": (["x", "--function", "fn::two_ints"], "fn::two_ints: parameter $limit is ambiguous: $k already gets the depth k"),
    "two vectors": (["x", "--function", "fn::two_vectors"],
                    "fn::two_vectors: parameter $b is ambiguous: $a already gets the question's embedding"),
    "a float without --arg": (["x", "--function", "fn::retrieve_hybrid_floor"],
                              "fn::retrieve_hybrid_floor: parameter $floor: float is unbound: a string gets the question's text, "
                              "an array<float> its embedding, an int the depth k; give it with --arg floor=VALUE"),
    "an any of no known name": (["x", "--function", "fn::unnamed_any"], "parameter $thing: any is unbound"),
    "an object without --arg": (["x", "--function", "fn::needs_object"], "parameter $filter: object is unbound"),
    "an --arg it lacks": (["x", "--function", "fn::retrieve_bm25", "--arg", "floor=1.5"],
                          "--arg floor: fn::retrieve_bm25 has no parameter $floor (its parameters: $q, $k)"),
    "an --arg without =": (["x", "--function", "fn::retrieve_hybrid_floor", "--arg", "floor"], "write NAME=VALUE"),
    "an --arg twice": (["x", "--function", "fn::retrieve_hybrid_floor", "--arg", "floor=1", "--arg", "floor=2"],
                       "--arg floor is given twice"),
    "an --arg of the wrong type": (["x", "--function", "fn::retrieve_hybrid_floor", "--arg", "floor=high"],
                                   "fn::retrieve_hybrid_floor on seval_question:money_back: "),
    "an --arg named as a keyword": (["x", "--function", "fn::retrieve_bm25", "--arg", "select=1"], "--arg select: fn::retrieve_bm25 has no parameter"),
    "a per-k list fused": (["f", "--fuse", "rrf", "--lists", "perk,vector"],
                           "--lists perk: retriever perk is --per-k (its list at k is not the top k of a deeper one), and a fusion "
                           "reads one list per question at the run's depth: register its function again without --per-k to fuse it"),
    "--arg with --fuse": (["f", "--fuse", "rrf", "--lists", "bm25,vector", "--arg", "a=1"], "--arg and --per-k go with --function"),
    "--per-k with --fuse": (["f", "--fuse", "rrf", "--lists", "bm25,vector", "--per-k"], "--arg and --per-k go with --function"),
}


def test_each_binding_refusal_is_one_line_exit_2_naming_the_parameter_and_changes_nothing(store):
    assert_refused(store, {case: (["retriever", "add", *args], message) for case, (args, message) in REFUSED.items()})


def test_the_registry_refuses_a_fusion_of_a_per_k_list_and_a_binding_it_cannot_call(users):
    add_function_retriever(users, "perk", function="fn::fused_top", per_k=True)
    assert_rows_refused(users, ["{ position: 900, lists: ['perk', 'bm25'], fusion: 'rrf' }",
                                "{ position: 900, lists: ['x'], fusion: 'none', function_name: 'fn::my_bm25', binding: ['text', 'arg:a b'] }",
                                "{ position: 900, lists: ['x'], fusion: 'none', function_name: 'fn::my_bm25', binding: ['$q.text'] }",
                                "{ position: 900, lists: ['bm25'], fusion: 'none', per_k: true }",
                                "{ position: 900, lists: ['bm25'], fusion: 'none', args: { a: 1 } }"])


# ----------------------------------------------------------------------------- prefixes and --per-k


def test_registration_says_when_the_top_3_is_not_the_first_3_of_the_top_10_and_names_per_k(store):
    plain = cli(store, "retriever", "add", "fused", "--function", "fn::fused_top")
    assert plain.exit_code == 0, plain.output
    lines = plain.stdout.strip().splitlines()
    assert lines[0] == ("registered retriever fused: fn::fused_top on corpus seval_article (10 records of seval_article for "
                        "seval_question:money_back), called as fn::fused_top($query=text, $vector=embedding, $limit=k)")
    assert lines[1:] == ["note: its top 3 for seval_question:money_back is not the first 3 of its top 10: a run scores every k "
                         "on one call at its deepest k; --per-k calls it once per k"]
    prefix = cli(store, "retriever", "add", "lesson_vec", "--function", "fn::retrieve_vec")
    assert prefix.exit_code == 0 and len(prefix.stdout.strip().splitlines()) == 1, prefix.output
    per_k = cli(store, "retriever", "add", "fused_per_k", "--function", "fn::fused_top", "--per-k", "--json")
    assert per_k.exit_code == 0, per_k.output
    assert '"per_k": true' in per_k.stdout and '"prefix": false' in per_k.stdout
    floored = cli(store, "retriever", "add", "floored", "--function", "fn::retrieve_hybrid_floor", "--arg", "floor=1.5")
    assert floored.stdout.strip().endswith("called as fn::retrieve_hybrid_floor($q=text, $qvec=embedding, $k=k, $floor=1.5)"), floored.output


def test_a_per_k_retriever_scores_each_k_on_its_own_call_and_stores_the_deepest(users):
    deep = add_function_retriever(users, "deep", function="fn::fused_top")
    perk = add_function_retriever(users, "perk", function="fn::fused_top", per_k=True)
    assert not deep.prefix and not perk.prefix and perk.per_k and {r.name: r.per_k for r in registry(users)}["perk"]
    run = evaluate(users, ks=[1, 3, 5], retrievers=["deep", "perk"], per_question=True)
    means = {(r.retriever, r.k): r.scores for r in run.results}
    for k in (1, 3, 5):  # each k as a run at that k alone calls the function: with k
        alone = evaluate(users, ks=[k], retrievers=["deep"], per_question=True)
        assert means[("perk", k)] == pytest.approx(alone.results[0].scores)
        if k == 5:  # the ranking stored is the deepest call's, the one the retriever without --per-k keeps too
            assert per_question(run, "perk", 5) == per_question(alone, "deep", 5) == per_question(run, "deep", 5)
    # one call at k = 5 cut to the top 1 and 3 scores otherwise: that is what --per-k changes
    assert any(means[("perk", k)] != means[("deep", k)] for k in (1, 3))
    direct = users.value("RETURN fn::seval::retrieve('perk', 'refund for a damaged parcel', [0.9, 0.1, 0.0, 0.0], 3)")
    theirs = users.value("RETURN fn::seval::function_hits('x', fn::fused_top('refund for a damaged parcel', [0.9, 0.1, 0.0, 0.0], 3), "
                         "'seval_article', 3).id")
    assert direct == theirs


def test_a_per_k_retriever_drops_the_questions_own_record_at_each_k_and_stays_full(users):
    users.query("CREATE seval_article:money_back CONTENT { title: 'Money back', content: 'refund money back damaged parcel', "
                "embedding: [0.9, 0.1, 0.0, 0.0] }")
    add_function_retriever(users, "perk", function="fn::fused_top", per_k=True)
    kept = per_question(evaluate(users, ks=[1, 3], retrievers=["perk"], per_question=True), "perk", 3)
    assert kept["seval_question:money_back"][0] == "seval_article:money_back"  # the question finds itself first
    run = evaluate(users, ks=[1, 3], retrievers=["perk"], params={"ignore_identical_ids": True}, per_question=True)
    ranked = per_question(run, "perk", 3)
    assert "seval_article:money_back" not in ranked["seval_question:money_back"]
    assert all(len(ids) == 3 for ids in ranked.values())  # each call asked for one more


# ----------------------------------------------------------------------------- order


def test_a_scored_list_is_ranked_by_score_then_id_and_a_bare_list_is_taken_as_given(seeded):
    def hits(value: str) -> list[tuple[str, float]]:
        return [(record_str(h["id"]), h["score"]) for h in seeded.value(f"RETURN fn::seval::function_hits('x', {value}, 'seval_article', 10)")]

    scored = "[{ id: seval_article:c, score: 1 }, { id: seval_article:b, score: 2 }, { id: seval_article:a, score: 1 }, { id: seval_article:c, score: 3 }]"
    assert hits(scored) == [("seval_article:c", 3.0), ("seval_article:b", 2.0), ("seval_article:a", 1.0)]
    assert hits("[seval_article:c, seval_article:a, seval_article:b]") == [
        ("seval_article:c", 1.0), ("seval_article:a", 0.5), ("seval_article:b", pytest.approx(1 / 3))]
    # one entry without a score: the list as given, each entry without one scored 1 / rank
    assert [i for i, _ in hits("[{ id: seval_article:a, score: 1 }, { id: seval_article:b }]")] == ["seval_article:a", "seval_article:b"]
    assert [i for i, _ in hits("[{ id: seval_article:a }, { id: seval_article:b, score: 9 }]")] == ["seval_article:a", "seval_article:b"]


#: The table langchain-surrealdb 0.2.1's SurrealDBVectorStore writes with its defaults (vectorstores.py:
#: DEFINE_INDEX, add_documents): SCHEMALESS `documents`, {text, vector, metadata}, HNSW index
#: documents_vector_index, no FULLTEXT index; ids as given (strings), or random for a document without one.
LANGCHAIN = """
DEFINE TABLE IF NOT EXISTS documents SCHEMALESS;
DEFINE INDEX IF NOT EXISTS documents_vector_index ON TABLE documents FIELDS vector HNSW DIMENSION 4 DIST COSINE TYPE F32 CONCURRENTLY;
UPSERT documents:⟨1⟩ CONTENT { vector: [0.9, 0.1, 0.1, 0.0], text: "Refunds are issued to your original payment method within 5 working days.", metadata: { category: "refunds" } };
UPSERT documents:⟨2⟩ CONTENT { vector: [0.8, 0.1, 0.3, 0.0], text: "To start a return, open Orders, choose the item and select Return.", metadata: { category: "refunds" } };
UPSERT documents:⟨3⟩ CONTENT { vector: [0.0, 0.95, 0.0, 0.1], text: "Forgot your password? Click Forgot password on the sign-in page.", metadata: { category: "account" } };
UPSERT documents:⟨4⟩ CONTENT { vector: [0.05, 0.85, 0.0, 0.3], text: "Turn on two-step verification under Account settings, Security.", metadata: { category: "account" } };
UPSERT documents:⟨5⟩ CONTENT { vector: [0.0, 0.0, 0.95, 0.1], text: "Track your parcel from the Orders page once the courier has it.", metadata: { category: "delivery" } };
UPSERT documents:⟨6⟩ CONTENT { vector: [0.3, 0.0, 0.9, 0.0], text: "If your parcel is marked as delivered but has not arrived, contact us.", metadata: { category: "delivery" } };
UPSERT documents:⟨f47ac10b-58cc-4372-a567-0e02b2c3d479⟩ CONTENT { vector: [0.3, 0.0, 0.0, 0.9], text: "Gift cards expire 24 months after purchase.", metadata: { category: "payments", page: 1 } };
INSERT INTO documents { vector: [0.1, 0.0, 0.0, 1.0], text: "We accept Visa, Mastercard, PayPal and Klarna at checkout.", metadata: {} };
"""
#: langchain-surrealdb's similarity search (vectorstores.py, SEARCH_QUERY) as a user's function, its
#: similarity aliased `score` and ordered by the name before the alias, with a LIMIT: the variant that
#: comes back unsorted inside a closure (KNN takes literals only: depth 100, the library's effort 40).
LC_SIMILARITY = """
DEFINE FUNCTION fn::lc_similarity($qvec: array<float>, $k: int) -> array {
    RETURN SELECT id, similarity AS score FROM (
        SELECT id, (1 - vector::distance::knn()) AS similarity FROM documents WHERE vector <|100,40|> $qvec
    ) ORDER BY similarity DESC LIMIT $k;
};
"""
#: Questions labelling the documents, each label ranked below the top for some.
LC_QUESTIONS = [
    Question(id="refund", text="how do I get my money back", embedding=[0.85, 0.1, 0.2, 0.0], relevant=["2"]),
    Question(id="password", text="forgot password", embedding=[0.0, 0.9, 0.0, 0.2], relevant=["4"]),
    Question(id="parcel", text="where is my parcel", embedding=[0.1, 0.0, 0.9, 0.1], relevant=["6"]),
    Question(id="gift", text="gift card expiry", embedding=[0.25, 0.05, 0.05, 0.9], relevant=["1"]),
    Question(id="two_step", text="two-step login code", embedding=[0.1, 0.8, 0.1, 0.4], relevant=["3"]),
]


@pytest.fixture
def langchain(db):
    """The harness beside langchain's `documents`, attached (with index: it has no FULLTEXT index, so the
    harness defines seval_documents_text), the questions above, and fn::lc_similarity registered as `lc`."""
    # one statement a query: a write that meets the index's concurrent build is retried alone (store/connection.py)
    for statement in [*LANGCHAIN.strip().splitlines(), LC_SIMILARITY]:
        db.query(statement)
    # the library defines its index CONCURRENTLY: until it reports ready, KNN answers every row with distance NONE
    deadline = time.monotonic() + 30
    while db.value("INFO FOR INDEX documents_vector_index ON documents")["building"]["status"] != "ready":
        assert time.monotonic() < deadline, "documents_vector_index never became ready"
        time.sleep(0.05)
    attach_table(db, "documents", content="text", embedding="vector", index=True)
    load_golden(db, LC_QUESTIONS, label_table="documents")
    add_function_retriever(db, "lc", function="fn::lc_similarity", corpus="documents")
    return db


def test_langchains_similarity_query_comes_back_unsorted_in_a_closure_and_the_harness_ranks_it_as_at_top_level(langchain):
    db = langchain
    run = evaluate(db, ks=[5], retrievers=["lc"], params={"corpus": "documents"}, per_question=True)
    ranked = per_question(run, "lc", 5)
    unsorted = 0
    for q in LC_QUESTIONS:
        top = db.value("RETURN fn::lc_similarity($v, 5)", {"v": q.embedding})
        inner = db.value("RETURN [1].map(|$x| fn::lc_similarity($v, 5))[0]", {"v": q.embedding})
        scores = [h["score"] for h in top]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)  # sorted, no ties
        assert sorted(map(str, inner)) == sorted(map(str, top))  # the same rows, in another order
        unsorted += [h["score"] for h in inner] != scores
        assert ranked[f"seval_question:{q.id}"] == [record_str(h["id"]) for h in top]
    assert unsorted == len(LC_QUESTIONS)  # the quirk is real on the pinned engine: every one came back unsorted


def test_langchains_similarity_as_a_retriever_scores_the_mrr_of_the_built_in_vector_retriever(langchain):
    db = langchain
    assert "seval_documents_text" in db.value("INFO FOR TABLE documents")["indexes"]
    run = evaluate(db, ks=[1, 3, 5], retrievers=["vector", "lc"], params={"corpus": "documents"}, per_question=True)
    mrr = {(r.retriever, r.k): r.scores["mrr"] for r in run.results}
    for k in (1, 3, 5):
        assert mrr[("lc", k)] == pytest.approx(mrr[("vector", k)])
    assert 0 < mrr[("lc", 5)] < 1  # labels below the top: the order counts
    assert per_question(run, "lc", 5) == per_question(run, "vector", 5)
    # in the order the closure returned it, the same lists would have scored another MRR
    inner = [db.value("RETURN fn::seval::metric_mrr([1].map(|$x| fn::lc_similarity($v, 5))[0].id, $r, [1], 5)",
                      {"v": q.embedding, "r": db.value("SELECT VALUE relevant FROM ONLY type::record('seval_question', $q)", {"q": q.id})})
             for q in LC_QUESTIONS]
    assert sum(inner) / len(inner) != pytest.approx(mrr[("lc", 5)])
