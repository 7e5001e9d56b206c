"""The cost floor benchmark (benchmarks/cost_floor.py) runs end to end on a tiny synthetic set.

Speed is never asserted: only that the table has its five rows and that the floor, measured on the
same data in the same process, is not above the full evaluation it is the floor of.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import cost_floor  # noqa: E402 (benchmarks/ is on the path only from here)
from synthetic import generate  # noqa: E402

from surreal_eval import Settings, connect  # noqa: E402

pytestmark = pytest.mark.slow  # kills processes / runs the benchmarks: not in the fast subset


def test_the_generator_is_deterministic_and_labels_documents_that_exist():
    one, two = generate(docs=50, questions=5, dimension=8), generate(docs=50, questions=5, dimension=8)
    assert [q.model_dump() for q in one.questions] == [q.model_dump() for q in two.questions]
    ids = {a.id for a in one.articles}
    assert all(1 <= len(q.relevant) <= 5 and set(q.relevant) <= ids for q in one.questions)
    assert all(100 <= len(a.content.split()) <= 200 for a in one.articles)


@pytest.fixture(scope="module")
def measured():
    config = cost_floor.Config(depth=20, naive_questions=1, client_questions=10, scored=100, rounds=2,
                               concurrency=cost_floor.detect_concurrency())
    with connect(Settings(url="mem://")) as db:
        documents = cost_floor.load_synthetic(db, 300, 20, 16, 7)
        result = cost_floor.measure_dataset(db, "synthetic", documents, config, lambda message: None)
    return result


def test_the_table_has_the_six_rows_and_the_ratios(measured):
    table = cost_floor.format_result(measured)
    rows = re.findall(r"^\| ([FHRNCS]) \|", table, flags=re.MULTILINE)
    assert rows == ["F", "H", "R", "N", "C", "S"]
    for ratio in cost_floor.TARGETS:
        assert re.search(rf"^\| {re.escape(ratio)} \| [0-9.]+ \| .* \| (PASS|MISS) \|$", table, flags=re.MULTILINE)
    assert "Peak memory of one more H run" in table
    assert all(measured.timings[row].note.startswith("median of 2 runs") for row in "FHR")


def test_the_floor_is_not_above_the_full_evaluation(measured):
    assert measured.questions == 20
    assert 0 < measured.timings["F"].seconds <= measured.timings["H"].seconds


def test_the_second_evaluation_reads_every_candidate_list_of_the_first(measured):
    assert "; 40 of 40 candidate lists read from H's" in measured.timings["R"].note


def test_scoring_in_the_database_agrees_with_pytrec_eval(measured):
    assert re.search(r"means agree with pytrec-eval to [0-9.]+e-(1[0-9]|[2-9][0-9])", measured.timings["S"].note)


def test_the_scale_table_states_a_trend():
    points = [cost_floor.ScalePoint(d, q, 0.1 * d / 100 * q / 10, 0.12 * d / 100 * q / 10)
              for d in (100, 200, 400) for q in (10, 20)]
    text = cost_floor.format_scale(points)
    assert text.count("\n| ") == 6 and "Trend: H per question grows 4.0x from 100 to 400 documents" in text


def test_with_no_option_it_measures_what_the_readme_reports():
    args = cost_floor.parse_args([])
    assert args.datasets == {"cisi", "debian"} and args.depth == 10 and args.analyzer_questions == 100
    assert args.scale_on == "debian" and args.scale_docs == [5000, 10000, 20000] and args.watch_docs == [2000]
    assert cost_floor.parse_args(["--dataset", "synthetic"]).scale_docs == [5000, 10000, 20000]
    assert cost_floor.parse_args(["--dataset", "synthetic", "--docs", "8000"]).scale_on == "synthetic"


def test_the_debian_set_is_deterministic_and_its_questions_are_drawn_from_their_labels():
    import debian_corpus

    one, two = debian_corpus.build(docs=200, questions=10, dimension=8), debian_corpus.build(docs=200, questions=10, dimension=8)
    assert [q.model_dump() for q in one.questions] == [q.model_dump() for q in two.questions]
    contents = {a.id: a.content for a in one.articles}
    for question in one.questions:
        assert question.relevant[0] == question.id.removeprefix("q_")
        words = contents[question.relevant[0]].split()
        assert set(question.text.split()) <= set(words) and len(question.text.split()) >= 3


def test_the_analyzer_table_measures_both_analyzers_and_restores_the_index():
    import analyzer_floor

    with connect(Settings(url="mem://")) as db:
        cost_floor.load_synthetic(db, 300, 10, 16, 7)
        cost_floor.define_bench_functions(db)
        rows = analyzer_floor.measure_analyzers(db, cost_floor.question_ids(db), 20, lambda calls: cost_floor.run_many(db, calls, 1),
                                                lambda ids: cost_floor.batches(ids, 4), lambda message: None)
        assert "ANALYZER seval_english_stop " in db.value("INFO FOR TABLE seval_article")["indexes"]["seval_article_content"]
    assert [r.analyzer for r in rows] == ["seval_english", "seval_english_stop"]
    assert all(len(r.bm25) == 2 and 0 < r.ms("bm25") and 0 <= r.ndcg10 <= 1 for r in rows)
    assert "seval_english_stop / seval_english: BM25" in analyzer_floor.format_analyzers("synthetic", 300, 20, rows)


def test_a_floor_and_full_only_result_formats_with_its_two_rows(measured):
    only = cost_floor.Result(measured.dataset, measured.documents, measured.questions, measured.depth, measured.concurrency,
                             timings={k: measured.timings[k] for k in ("F", "H")})
    table = cost_floor.format_result(only)
    assert re.findall(r"^\| ([FHNCS]) \|", table, flags=re.MULTILINE) == ["F", "H"]
    assert "| H/F |" in table and "S/pytrec-eval" not in table
    assert "| H/F | Debian |" not in cost_floor.format_ratios([only], {}) and "| H/F | synthetic |" in cost_floor.format_ratios([only], {})


def test_the_watch_benchmark_repeats_cisis_judged_questions_under_new_ids_and_writes_new_documents():
    import watch_scale

    docs, questions, batches, _ = watch_scale.cisi_set(200, 20)
    ids = [q.id for q in questions]
    assert len(ids) == len(set(ids)) == 200
    original = {q.id: q for q in questions if "_copy" not in q.id}
    assert len(original) == 76  # CISI's judged queries, then their copies with the same text, embedding and labels
    for q in questions:
        first = original[q.id.split("_copy")[0]]
        assert (q.text, q.embedding, q.relevant) == (first.text, first.embedding, first.relevant)
    known = {d.id for d in docs}
    new = [row["id"] for batch in batches for row in batch]
    assert len(batches) == watch_scale.BATCHES and all(len(b) == 20 for b in batches)
    assert len(new) == len(set(new)) and not known & set(new)  # every batch new records


def test_the_watch_benchmark_measures_a_commit_with_watch_on_and_off_and_the_evaluation_after_it(tmp_path):
    import watch_scale

    from .conftest import lesson_rows

    articles, questions = lesson_rows()
    watch_scale.base_store(tmp_path, articles, questions)
    batches = watch_scale._batches(articles, 2)[:5]
    (tmp_path / "b.json").write_text(__import__("json").dumps(batches))
    said = watch_scale.run_child("commit", watch_scale.copy(tmp_path, "c"), str(tmp_path / "b.json")).said
    assert len(said["on"]) == len(said["off"]) == 2 and all(t > 0 for t in said["on"] + said["off"])
    url = watch_scale.copy(tmp_path, "after")
    watch_scale.run_child("app-ingest", url, str(tmp_path / "b.json"))
    after = watch_scale.run_child("after", url, "")
    # every vector list merged, a BM25 list rescored where certain, else fetched; memory the child's own
    retrieval = after.said["retrieval"]
    assert retrieval["merged"] >= 8 and retrieval["merged"] + retrieval["fetched"] == 16 and after.peak_rss_mb > 0


def _certified(db, lengths: list[int], *, new: list[dict] = (), k: int = 2, after_docs: int = 100, df: dict | None = None,
               truncated: bool = False) -> bool:
    """Whether fn::seval::bm25_certified (surql/certificate.surql) certifies a hand-made kept list whose entries each
    hold every query term once, scored as the engine scores them at 100 documents of mean length 10, after an ingest that makes
    `after_docs` of the same mean length and adds the records `new` ({len, tf: {term: tf'}}); each query term held by
    the records of `df` (default t: 5), before and after. `truncated`: records outside the list may score as high as
    its last entry."""
    df = df or {"t": 5}
    terms = sorted(df)
    weights = [2.2 * max(0.0, math.log((100 - df[t] + 0.5) / (df[t] + 0.5))) for t in terms]
    scores = [sum(c / (1 + 1.2 * (0.25 + 0.75 * length / 10)) for c in weights) for length in lengths]
    row = {"hits": [{"id": f"d{i}", "score": x} for i, x in enumerate(scores)], "depth": 40,
           "bound": scores[-1] if truncated else 0,
           "stats": {"terms": terms, "w": [1] * len(terms), "len": lengths, "tf": [[1.0] * len(terms)] * len(lengths),
                     "n": [df[t] for t in terms]}}
    b = {"analyzer": "seval_english", "k1": 1.2, "b": 0.75, "documents": {"from": 100, "to": after_docs},
         "length": {"from": 1000, "to": after_docs * 10}, "gone": [], "plus": {}, "minus": {},
         "docs": [{"id": f"new{i}", "len": d["len"], "terms": list(d["tf"]), "tf": d["tf"]} for i, d in enumerate(new)]}
    said = db.value("RETURN fn::seval::bm25_certified($row, $q, $b, 'seval_article', $k, [], false)",
                    {"row": row, "q": {"text": " ".join(terms)}, "b": b, "k": k})
    # refused: NONE, or once the query's terms are weighed what it computed, handed on to the list's merge
    assert said is None or ("failed" in said) != ("scores" in said)
    return said is not None and "failed" not in said


def test_the_ingest_certificate_keeps_a_top_k_only_where_no_record_can_overtake(db):
    # nothing changed: a factor of exactly 1; the k-th's neighbour of the same length moves with it
    assert _certified(db, [10, 12, 12, 20])
    # the group alike to the k-th runs to the end of a kept list that records outside may equal: not certain
    assert _certified(db, [10, 12, 12]) and not _certified(db, [10, 12, 12], truncated=True)
    # a record added holding the term: idf 2.85 (n 5 of 100), so about 5.6 with tf' 1 + ln 9 in 1 token, 0.14 with tf'
    # 1 in 500; the k-th scores 2.8
    strong = {"len": 1, "tf": {"t": 1 + math.log(9)}}
    weak = {"len": 500, "tf": {"t": 1.0}}
    assert not _certified(db, [6, 9, 40], new=[strong]) and _certified(db, [6, 9, 40], new=[weak])
    # 20 documents more: idf of t (n 5) grows by 1.067, of u (n 30) by 1.298, so scores may move apart by 22%; the top
    # and the entry after it are scored exactly (records of the same terms, shorter first, keep their order), and what a
    # record outside the list may score (up to its last entry's score then) is bounded by that factor
    two = {"t": 5, "u": 30}
    assert _certified(db, [10, 11, 12], after_docs=120, df=two)
    assert not _certified(db, [10, 11, 12], after_docs=120, df=two, truncated=True)  # 12 tokens score only 4% below 11
    assert _certified(db, [10, 11, 20], after_docs=120, df=two, truncated=True)  # 20 tokens score 26% below 11
    assert _certified(db, [10, 60, 200], after_docs=120, df=two)
    # entries below the top and the entry after it that the factor could lift past the k-th (13 tokens score 7% below 11)
    # are scored exactly too, and stay below it: certain (before, refused at the bound on the entry after 12)
    assert _certified(db, [10, 11, 12, 13], after_docs=120, df=two) and _certified(db, [10, 11, 13, 14, 15], after_docs=120, df=two)
