"""Every figure a command prints is in its --json (issue 34): evaluate, gate, compare, slices, runs list (history),
diagnose, golden generate, judge, agreement and from-log, demo and tune are each run twice, as text and with --json,
on questions of three sources (real, synthetic, click), and every number the text shows must be a number of the JSON.
A command that writes (generate, judge, from-log) runs on two stores built alike; the others twice on the same one.
The library's `evaluate` gives the means per source itself (`RunReport.by_source`), checked by hand at the end.

How a printed number is matched: it is read with the digits it was printed with, and some number of the JSON must
print the same at that precision (`0.667` matches 0.6666…, `+0.333` needs a positive 0.333, `-0.667` a negative one,
`50%` matches 0.5, `< 0.0001` any number below it); a count the text prints of what the JSON lists (questions fixed,
broken) is matched by the length of that list. On a line naming exactly one retriever, the number must come
from an object of that retriever (a dict whose `retriever` is it, or one inside it): a gap of bm25 cannot pass on a
figure of vector.

What is not a figure, and why it is skipped:
- record ids (`seval_run:…`, `seval_question:…`), URLs (a chat model's, with its port) and dates and times: names
  and moments, not measurements;
- the k of a metric's name (`recall@5`, `mrr@5`) and of a column header: part of the name, its k is in the JSON;
- `95%` in `[95% interval]`: the level the harness always uses, not something measured;
- `(1 of 2)` after a table's title: the table was split to fit the width;
- `and 15 more` after the first items of a list: how many the text left out of a list the JSON holds whole;
- digits inside words (`enable_2fa`, a sha256 prefix): part of a name;
- prose the JSON carries verbatim as a string (a warning, an engine check's note, a gate check's reason, a title,
  a question's text): its numbers are in the JSON as written. A `headline` string is not prose: its numbers must
  also be numbers of the JSON (`by_source`).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from surreal_eval import HarnessConfig, Settings, connect, evaluate, import_harness, load_run
from surreal_eval.golden.labels import add_label
from surreal_eval.present.cli import app

from .chat_server import chat_server
from .conftest import reverse_embeddings, seed_own

runner = CliRunner()

#: The demo's eight questions by source. bm25 misses money_back and signin at k = 5, vector misses rate_limit: on the
#: three real questions bm25 has recall@5 1.000 and synthetic 0.333, a gap of -0.667 (a negative figure, so no
#: interval bound of the overall means can stand in for it); two_factor has no source set and counts as real.
SOURCES = {"real": ["rate_limit", "new_card"], "synthetic": ["money_back", "signin", "send_back"],
           "click": ["stop_plan", "where_parcel"]}
RETRIEVERS = ("bm25", "vector", "hybrid", "hybrid_floor", "vector_exact")

ID = re.compile(r"\S*://\S*|\b[A-Za-z_][\w]*:[\w⟨⟩-]+")
MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?)?(?: UTC)?")
METRIC_NAME = re.compile(r"\b[a-z_]+@\d+")
SPLIT_TABLE = re.compile(r"\(\d+ of \d+\)\s*$")
LEVEL = re.compile(r"\b95%")
MORE = re.compile(r"\band \d+ more\b")
NUMBER = re.compile(r"(<\s*)?(?<![\w.])([-+]?)(\d+(?:\.\d+)?)(%?)(?![\w.])")


def mark_sources(db) -> None:
    for source, questions in SOURCES.items():
        db.query("UPDATE seval_question SET source = $s WHERE record::id(id) IN $q", {"s": source, "q": questions})


def build(path, *, runs: bool = True) -> str:
    """A store with the demo's articles and questions of three sources; with `runs`, a run tagged good at k = 1, 3, 5,
    then one after the article embeddings were reversed (vector search breaks): what gate and compare read."""
    url = f"surrealkv://{path}"
    db = connect(Settings(url=url))
    try:
        import_harness(db, HarnessConfig(dimension=4))
        seed_own(db)
        mark_sources(db)
        if runs:
            evaluate(db, ks=[1, 3, 5], tag="good")
            reverse_embeddings(db)
            evaluate(db, ks=[1, 3, 5], label="reversed")
    finally:
        db.close()
    return url


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """Lines as long as they come (no wrapping), so a sentence the JSON carries is found whole in the text."""
    from surreal_eval.present.app import out

    monkeypatch.setattr(out, "width", 2000)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return build(tmp_path_factory.mktemp("figures") / "store")


def invoke(url: str, *args: str, code: int = 0) -> str:
    done = runner.invoke(app, ["--url", url, *args])
    assert done.exit_code == code, done.output
    return done.stdout


def both(url: str, *args: str, code: int = 0) -> tuple[str, object]:
    return invoke(url, *args, code=code), json.loads(invoke(url, *args, "--json", code=code))


def leaves(data: object, retriever: str | None = None, key: str | None = None) -> Iterator[tuple[str | None, str | None, object]]:
    """Every leaf of the JSON as (the retriever of the innermost object naming one, its key, the value)."""
    if isinstance(data, dict):
        here = data.get("retriever") if isinstance(data.get("retriever"), str) else retriever
        for name, value in data.items():
            yield from leaves(value, here, name)
    elif isinstance(data, list):
        yield retriever, key, len(data)  # a count the text prints (questions fixed, broken) is the length of the JSON's list
        for value in data:
            yield from leaves(value, retriever, key)
    else:
        yield retriever, key, data


def prose(data: object) -> list[str]:
    """The JSON's strings that are prose (several words), longest first: a headline is figures, not prose."""
    found = {" ".join(v.split()) for _, key, v in leaves(data) if isinstance(v, str) and key != "headline" and " " in v.strip()}
    return sorted(found, key=len, reverse=True)


def shown_numbers(text: str, data: object) -> list[tuple[str, str | None, str]]:
    """Every figure of the text as (the line, the one retriever the line names or None, the number as printed)."""
    said = prose(data)
    figures = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        for sentence in said:
            line = line.replace(sentence, " ")
        line = SPLIT_TABLE.sub("", MORE.sub("", LEVEL.sub("", METRIC_NAME.sub("", MOMENT.sub("", ID.sub("", line))))))
        named = [r for r in RETRIEVERS if re.search(rf"(?<![\w]){r}(?![\w])", line)]
        for match in NUMBER.finditer(line):
            figures.append((raw.strip(), named[0] if len(named) == 1 else None, match.group(0).replace(" ", "")))
    return figures


def matches(printed: str, value: object) -> bool:
    """Whether a JSON number prints as `printed` did (its precision, sign and percent sign)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if printed.startswith("<"):
        return value < float(printed[1:])
    body = printed.lstrip("+-")
    if printed.endswith("%"):
        return f"{value:.{len(body.rstrip('%').partition('.')[2])}%}" == body
    places = len(body.partition(".")[2])
    if "." not in body:
        return value == int(body) * (-1 if printed.startswith("-") else 1)
    return f"{value:{'+' if printed[0] in '+-' else ''}.{places}f}" == printed


def missing(text: str, data: object) -> list[tuple[str, str]]:
    """The figures of `text` no number of `data` accounts for, as (number, line)."""
    numbers = [(r, v) for r, _, v in leaves(data)]
    lost = []
    for line, retriever, printed in shown_numbers(text, data):
        pool = [v for r, v in numbers if retriever is None or r == retriever]
        if not any(matches(printed, v) for v in pool):
            lost.append((printed, line))
    return lost


def test_the_matching_is_strict_enough_to_fail():
    """The checker itself: a gap the JSON lacks, the wrong sign, another retriever's figure, a rounder figure."""
    data = {"results": [{"retriever": "bm25", "recall": 0.6666, "n": 3}, {"retriever": "vector", "recall": 0.25, "k": 3}], "n": 4}
    assert missing("bm25 0.667 n=3", data) == []
    assert missing("bm25 gap -0.667", data) == [("-0.667", "bm25 gap -0.667")]
    assert missing("bm25 recall 0.250", data) == [("0.250", "bm25 recall 0.250")]
    assert missing("vector recall 0.250 (25%) at k=3", data) == []
    assert missing("mean 0.6667 of 4 questions", data) == [("0.6667", "mean 0.6667 of 4 questions")]
    assert missing("mean 0.667 of 5 questions", data) == [("5", "mean 0.667 of 5 questions")]
    assert missing("recall@5 on seval_run:x9 at 2026-12-04 16:13:31 [95% interval] (1 of 2)", data) == []


def test_evaluate_json_carries_every_printed_figure_with_the_real_synthetic_and_click_means_and_gaps(tmp_path):
    url = build(tmp_path / "store", runs=False)
    text, data = both(url, "evaluate", "--k", "1,3,5", "--fresh")  # --fresh: both runs retrieve and check the engine alike
    assert "headline: bm25 recall@5 on the 3 real questions 1.000" in text and "gap -0.667" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    means = {(r["retriever"], r["source"]): r for r in data["by_source"]}
    assert set(means) == {(r, s) for r in ("bm25", "vector", "hybrid", "hybrid_floor") for s in ("real", "synthetic", "click")}
    real, synthetic, click = means["bm25", "real"], means["bm25", "synthetic"], means["bm25", "click"]
    assert (real["questions"], synthetic["questions"], click["questions"]) == (3, 3, 2)
    assert (real["mean"], click["mean"]) == (1.0, 1.0) and synthetic["mean"] == pytest.approx(1 / 3)
    assert synthetic["gap"] == pytest.approx(1 / 3 - 1) and click["gap"] == 0
    assert real["gap"] is None and "measured from" in real["gap_note"]  # no gap to itself: null with the reason, never 0
    assert data["by_source_note"] is None and len(data["headline"]) == 4 and data["headline"][0].startswith("bm25 recall@5")
    assert any(note.startswith("quote the real figure") for note in data["notes"])


def test_evaluate_per_question_json_carries_the_ranks_the_table_shows(tmp_path):
    url = build(tmp_path / "store", runs=False)
    text, data = both(url, "evaluate", "--k", "3", "--fresh", "--per-question", "--retriever", "bm25")
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    ranks = {row["question"]: row["ranks"] for row in data["per_question"]}
    # bm25 finds money_back's labels nowhere in its top 3: null, never a rank of 0
    assert ranks["seval_question:money_back"] == [None] * len(ranks["seval_question:money_back"])
    assert all(r is None or 1 <= r <= 3 for found in ranks.values() for r in found)
    assert any(r is not None for found in ranks.values() for r in found)


def test_evaluate_json_says_why_it_has_no_means_per_source(tmp_path):
    url = build(tmp_path / "store", runs=False)
    data = json.loads(invoke(url, "evaluate", "--k", "5", "--no-record", "--json"))
    assert data["by_source"] == [] and "--no-record" in data["by_source_note"]
    with connect(Settings(url=url)) as db:
        db.query("UPDATE seval_question SET source = 'synthetic'")
    data = json.loads(invoke(url, "evaluate", "--k", "5", "--json"))
    assert data["by_source"] == [] and "one source" in data["by_source_note"] and data["headline"] == []


def test_gate_json_carries_every_printed_figure(store):
    # --per-check: vector's recall@3 fell on 7 of 8 questions, p 0.0312 on its own: FAIL, with the broken questions
    text, data = both(store, "gate", "--baseline", "good", "--metric", "recall@3", "--metric", "recall@5", "--per-check", code=1)
    assert "FAIL" in text and "headline: " in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))


def test_compare_json_carries_every_printed_figure(store):
    text, data = both(store, "compare", "good", "latest")
    assert "headline: " in text and "overlap" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))


def test_slices_json_carries_every_printed_figure_with_the_gaps_to_real(store):
    text, data = both(store, "slices", "good")
    assert "gap = source - real" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    gaps = {(row["retriever"], row["value"]): row for row in data if row["by"] == "source_means"}
    assert gaps["bm25", "synthetic"]["gap"] == pytest.approx(-2 / 3) and gaps["bm25", "real"]["gap"] is None
    assert gaps["bm25", "real"]["gap_note"]
    assert all(row["by"] in ("category", "language", "source", "source_means") for row in data)


@pytest.mark.parametrize("metric", [None, "recall@3"])
def test_runs_list_json_carries_every_printed_figure(store, metric):
    text, data = both(store, "runs", "list", *(["--metric", metric] if metric else []))
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))


def test_diagnose_json_carries_every_printed_figure_and_marks_a_dangling_label(tmp_path):
    url = build(tmp_path / "store", runs=False)
    with connect(Settings(url=url)) as db:
        labels = db.value("SELECT VALUE relevant FROM ONLY seval_question:money_back")
        assert len(labels) == 2
        db.query("DELETE seval_article:cancel_subscription")  # money_back's second label: its record is gone
    text, data = both(url, "diagnose", "money_back", "--k", "3")
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    marked = {label["id"]: label["dangling"] for label in data["labels"]}
    assert marked == {"seval_article:refund_request": False, "seval_article:cancel_subscription": True}
    shown = {line.split()[1]: line for line in text.splitlines() if line.lstrip().startswith("label ")}
    assert "DANGLING: the record no longer exists" in shown["seval_article:cancel_subscription"]
    assert "DANGLING" not in shown["seval_article:refund_request"] and "Request a refund" in shown["seval_article:refund_request"]


@pytest.mark.usefixtures("chat_env")
def test_golden_generate_json_carries_every_printed_figure(tmp_path):
    with chat_server(dimension=4) as server:
        server.rules = {"Title: Request a refund": "answer", "Title: API rate limits": "copy"}
        args = ("golden", "generate", "--count", "6", "--chat", f"openai:tiny@{server.url}", "--embedder", f"openai:emb@{server.url}",
                "--max-overlap", "0.5", "--no-cache")
        text = invoke(build(tmp_path / "text", runs=False), *args)
        data = json.loads(invoke(build(tmp_path / "json", runs=False), *args, "--json"))
    assert "min / q1 / median / q3 / max" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    assert set(data["overlap_quartiles"]) == {"min", "q1", "median", "q3", "max"}


#: How the chat server grades a judging prompt, by the document's title (the first rule that matches; every other pair
#: 2): "Contact support" gets an answer with no grade, so its pairs stay unjudged and are listed.
JUDGE_RULES = {"Title: Track your order": "grade 3", "Title: Request a refund": "grade 1", "Title: Contact support": "unsure",
               "Title: Locked out": "grade 0", "Question: ": "grade 2"}


def judged_store(path) -> str:
    """`build`'s store without runs, two pairs a person judged not relevant (the humans' sample then holds both
    classes, so kappa is measurable), and one run of bm25 and vector at k = 1, 3 for the model to judge."""
    url = build(path, runs=False)
    with connect(Settings(url=url)) as db:
        add_label(db, "money_back", "track_order", relevant=False)
        add_label(db, "where_parcel", "refund_request", relevant=False)
        evaluate(db, ks=[1, 3], retrievers=["bm25", "vector"])
    return url


def judge_args(server, *more: str) -> tuple[str, ...]:
    return ("golden", "judge", "latest", "--k", "3", "--chat", f"openai:judge@{server.url}", "--no-cache", *more)


@pytest.mark.usefixtures("chat_env")
def test_golden_judge_json_carries_every_printed_figure(tmp_path):
    # --agreement 11 of the 13 human judgments: the sample's size is no other count of the report
    args = ("--agreement", "11", "--calibrate", "4")
    with chat_server(dimension=4) as server:
        server.rules = dict(JUDGE_RULES)
        text = invoke(judged_store(tmp_path / "text"), *judge_args(server, *args))
        data = json.loads(invoke(judged_store(tmp_path / "json"), *judge_args(server, *args), "--json"))
    for shown in ("answers held no grade", "human relevant: model relevant", "Kendall's tau", "drew 4 pairs"):
        assert shown in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    # the judgments that count as relevant on human+model: grades 2 and 3, a figure of its own
    assert data["relevant"] == data["grades"]["2"] + data["grades"]["3"] > 0 and f"{data['relevant']} count as relevant" in text


@pytest.mark.usefixtures("chat_env")
def test_golden_agreement_json_carries_every_printed_figure(tmp_path):
    url = judged_store(tmp_path / "store")
    with chat_server(dimension=4) as server:
        server.rules = dict(JUDGE_RULES)
        drawn = json.loads(invoke(url, *judge_args(server, "--agreement", "0", "--calibrate", "4"), "--json"))["calibration"]
    assert sorted(p["model_grade"] for p in drawn) == [0, 1, 2, 3]
    with connect(Settings(url=url)) as db:  # a person grades the four pairs drawn: 2, not relevant, 1, 2
        for pair, grade in zip(drawn, (2, 0, 1, 2)):
            add_label(db, pair["question"], pair["doc"], grade=grade or 1, relevant=grade > 0)
    text, data = both(url, "golden", "agreement")
    assert "confusion (rows the person's grade" in text and "Kendall's tau" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    assert data["agreement"]["n"] == 4 and sum(map(sum, data["agreement"]["confusion"])) == 4


#: A search log's queries over the demo's articles, each with the one article that answers it.
LOG_QUERIES = {"refund please": "refund_request", "where is my order": "track_order", "send it back": "return_item",
               "cancel my plan": "cancel_subscription", "talk to someone": "contact_support"}


def click_log(path, impressions: int = 80, seed: int = 5) -> None:
    """A seeded log: four of six articles shown per impression, the answer clicked far more often than the others and
    less often lower down, each click with a dwell, twelve users; enough impressions for auto to hold a quarter out."""
    articles = sorted({*LOG_QUERIES.values(), "update_payment"})
    rng = random.Random(seed)
    rows = []
    for _ in range(impressions):
        query = rng.choice(sorted(LOG_QUERIES))
        shown = rng.sample(articles, 4)
        clicked = [d for rank, d in enumerate(shown, 1) if rng.random() < (0.9 if d == LOG_QUERIES[query] else 0.08) / rank ** 0.5]
        rows.append({"query": query, "shown": shown, "clicked": clicked, "dwell": {d: rng.choice([3, 20, 45, 90]) for d in clicked},
                     "user": f"u{rng.randrange(12)}"})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.mark.usefixtures("chat_env")
def test_golden_from_log_json_carries_every_printed_figure(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the log named by a relative path: the text prints it, and a temporary folder's name holds digits
    click_log(tmp_path / "searches.jsonl")
    with chat_server(dimension=4) as server:  # its embeddings, for the new questions
        args = ("golden", "from-log", "searches.jsonl", "--embedder", f"openai:emb@{server.url}", "--top", "3", "--sample", "1",
                "--seed", "23", "--unclicked-not-relevant", "--min-dwell", "10", "--margin", "0.25")
        text = invoke(build(tmp_path / "text", runs=False), *args)
        data = json.loads(invoke(build(tmp_path / "json", runs=False), *args, "--json"))
    assert "held-out log-likelihood" in text and "documents judged not relevant" in text and "(seed 23)" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    assert data["seed"] == 23 and len(data["fits"]) == 4


def test_demo_json_carries_every_printed_figure():
    text = runner.invoke(app, ["demo"]).stdout
    data = json.loads(runner.invoke(app, ["demo", "--json"]).stdout)
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    # the demo's questions name no source: every one counts as real, nothing to split, and the JSON says so
    assert data["by_source"] == [] and "one source" in data["by_source_note"] and data["headline"] == []
    assert data["per_question"] and all("ranks" in row for row in data["per_question"]) and data["retrieval"]["retrieved"] == 16


def test_tune_json_carries_every_printed_figure_with_its_reports_means_per_source(tmp_path):
    url = build(tmp_path / "store", runs=False)
    invoke(url, "split", "--dev", "0.5", "--seed", "0")  # test: new_card (real), stop_plan (click), signin, send_back (synthetic)
    text, data = both(url, "tune", "--param", "floor", "--metric", "mrr@3", "--fresh")
    assert "headline: hybrid_floor recall@3 on the 1 real question" in text and "recall@3 by question source" in text
    assert missing(text, data) == [], "\n".join(map(str, missing(text, data)))
    report = data["report"]
    assert [(r["source"], r["questions"]) for r in report["by_source"]] == [("real", 1), ("click", 1), ("synthetic", 2)]
    assert report["headline"][0].startswith("hybrid_floor recall@3") and report["notes"][0].startswith("quote the real figure")


def test_the_librarys_evaluate_gives_the_means_per_source_and_their_gaps_to_real(tmp_path):
    url = build(tmp_path / "store", runs=False)
    with connect(Settings(url=url)) as db:
        report = evaluate(db, ks=[3, 5], retrievers=["bm25", "vector"])
        means = {(m.retriever, m.source): m for m in report.by_source}
        assert [(m.retriever, m.source) for m in report.by_source] == [(r, s) for r in ("bm25", "vector") for s in ("real", "click", "synthetic")]
        assert {m.metric for m in report.by_source} == {"recall@5"} and report.by_source_note is None
        # by hand, recall@5 (SOURCES): bm25 misses money_back and signin (synthetic), vector rate_limit (real); real is
        # rate_limit, new_card and two_factor (no source set), click stop_plan and where_parcel
        bm25 = [means["bm25", s] for s in ("real", "click", "synthetic")]
        assert [(m.questions, m.mean) for m in bm25] == [(3, 1.0), (2, 1.0), (3, pytest.approx(1 / 3))]
        assert bm25[0].gap is None and "measured from" in bm25[0].gap_note and bm25[1].gap == 0
        assert bm25[2].gap == pytest.approx(-2 / 3) and bm25[2].low <= bm25[2].mean <= bm25[2].high
        vector = [means["vector", s] for s in ("real", "click", "synthetic")]
        assert [m.mean for m in vector] == [pytest.approx(2 / 3), 1.0, 1.0]
        assert [m.gap for m in vector[1:]] == [pytest.approx(1 / 3)] * 2
        # no k = 5: recall at the deepest k
        assert {m.metric for m in evaluate(db, ks=[1, 3], retrievers=["bm25"]).by_source} == {"recall@3"}
        # not worked out: a run read back, or one without intervals
        assert load_run(db, report.run).by_source is None and evaluate(db, ks=[5], intervals=False).by_source is None
        unrecorded = evaluate(db, ks=[5], record=False)
        assert unrecorded.by_source == [] and "--no-record" in unrecorded.by_source_note
        db.query("UPDATE seval_question SET source = 'synthetic'")
        one = evaluate(db, ks=[5], retrievers=["bm25"])
        assert one.by_source == [] and "one source" in one.by_source_note
