"""Hostile input, fuzzed with hypothesis: every loader, question texts and ids, command-line identifiers.

Each file a test writes mixes valid rows full of hostile text (SurrealQL statements, quotes,
backticks, ⟨⟩, `{{placeholders}}`, `$params`, NUL, rich markup, 100k-character strings, any
code point UTF-8 can carry) with, sometimes, one bad row (invalid JSON, bytes that are not UTF-8, a
duplicate id, a wrong embedding, an unknown label, ...). It goes through the library (a fresh
`mem://` database) and through the CLI (a copy of a `surrealkv://` store), and:

- a file with no bad row loads, and every id and text reads back verbatim (read with parameters);
- a file with a bad row is refused: the library raises InputError, the CLI prints one line
  `error: ...` and exits 2, and the database is exactly as it was (`snapshot`);
- never a traceback; the schema is intact (INFO FOR DB as before, plus the table a successful load
  into a new table adds) and no user was defined (INFO FOR ROOT / NS / DB).

`SURREAL_EVAL_FUZZ_EXAMPLES` sets the examples per test (default 25).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from surreal_eval import (
    Question,
    Settings,
    SurrealEvalError,
    connect,
    diagnose,
    evaluate,
)
from surreal_eval.present.cli import app
from surreal_eval.store.connection import record_str
from surreal_eval.errors import InputError, Rejected
from surreal_eval.grammar import quoted_key
from surreal_eval.runs.export import export_run_trec
from surreal_eval.store.schema import RESERVED_WORDS
from surreal_eval.load.bulk import load_corpus
from surreal_eval.golden.files import load_beir, load_golden
from surreal_eval.load.readers import read_documents, read_questions

from .conftest import fresh_db, snapshot, seed_own

settings.register_profile(
    "surreal-eval-fuzz",
    max_examples=int(os.environ.get("SURREAL_EVAL_FUZZ_EXAMPLES", "25")),
    deadline=None,
    database=None,  # what fuzzing found is kept below as @example, not in a .hypothesis folder
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    print_blob=True,
)
FUZZ = settings.get_profile("surreal-eval-fuzz")
# a failing example with a 100k-character string is still worth reporting
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning")]

SEED_ARTICLES = ("account_locked", "api_rate_limits", "cancel_subscription", "contact_support", "enable_2fa",
                 "password_reset", "refund_request", "return_item", "track_order", "update_payment")
SEED_QUESTIONS = ("money_back", "new_card", "rate_limit", "send_back", "signin", "stop_plan", "two_factor", "where_parcel")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
DIMENSION = 4

# ------------------------------------------------------------------------------------ strategies

FRAGMENTS = (
    "'; REMOVE TABLE seval_article; --",
    '"); DELETE seval_article; RETURN ("',
    "DEFINE USER x ON ROOT PASSWORD 'p' ROLES OWNER;",
    "DEFINE USER y ON DATABASE PASSWORD 'p' ROLES OWNER;",
    "}; REMOVE TABLE seval_question; {",
    "SELECT * FROM seval_article; UPDATE seval_article SET content = 'pwned';",
    "$auth", "$session", "$value", "$rows", "$this", "{{dimension}}", "{{corpus}}", "{{ staging }}",
    "⟨", "⟩", "⟨x⟩", "`", "``", "'", '"', "\\", "\\u0000", "\x00", "/*", "*/", "--", ";", "@1,OR@",
    "seval_article:x", "seval_article:⟨x⟩", "seval_question:x", "type::table('x')", "<|3,40|>",
    "[bold]", "[/]", "[/bold]", "[link=http://x]", ":smile:", "\x1b[2J", "%s", "{}", "{0}",
    "\t", "\n", "\r", "\r\n", " ", "\x0b", "\x85", "\u2028", "\ufeff", "\u200b", "\U0001F600", "é", "ß", "İ",
    "0", "-1", "1e309", "NaN", "null", "NONE", "true", "[]", "{}", "a;b", ",", '""',
)
CHARS = st.characters(codec="utf-8")  # every code point UTF-8 can carry (no lone surrogates)
fragment = st.sampled_from(FRAGMENTS)
short_text = st.one_of(
    fragment,
    st.text(CHARS, max_size=30),
    st.lists(st.one_of(fragment, st.text(CHARS, max_size=8)), min_size=1, max_size=5).map("".join),
)


def _not_seed(s: str) -> bool:
    """Not a key of the seed data. A key written whole in SurrealDB's quoting (`⟨x⟩`, a backticked key) is
    drawn too: a load refuses it (grammar.RecordKey), since every command would read it as the key inside."""
    return bool(s) and s not in SEED_ARTICLES and s not in SEED_QUESTIONS


def quoted(ids) -> bool:
    """Whether one of `ids` is written whole in SurrealDB's quoting: the load is refused (bad row "quoted_id")."""
    return any(quoted_key(i) is not None for i in ids)


def _repeat(piece: str, size: int) -> str:
    return (piece * (size // len(piece) + 1))[:size]


long_text = st.builds(_repeat, fragment.filter(bool), st.integers(20_000, 100_000))
#: hostile text: mostly short, one draw in eight 20k to 100k characters
hostile = st.integers(0, 7).flatmap(lambda n: long_text if n == 0 else short_text)
long_id = st.builds(_repeat, fragment.filter(bool), st.integers(200, 2_000))
hostile_id = st.integers(0, 9).flatmap(lambda n: long_id if n == 0 else short_text.filter(bool)).filter(
    _not_seed)
#: a hostile id a load accepts (not written whole in SurrealDB's quoting)
loadable_id = hostile_id.filter(lambda s: quoted_key(s) is None)
number = st.floats(-1, 1, allow_nan=False)
#: a usable embedding: some direction (a zero or underflowing length is a bad row of its own)
vector = st.lists(number, min_size=DIMENSION, max_size=DIMENSION).filter(lambda v: sum(x * x for x in v) > 0)
#: what no embedding may be: no length, a length that overflows, or text and booleans for numbers
zero_norm = st.sampled_from([[0, 0, 0, 0], [0.0, -0.0, 0.0, 0.0], [1e-200, 0, 0, 0], [5e-324, 5e-324, 0, 0]])
overflowing = st.sampled_from([[1e308, 1e308, 1e308, 1e308], [1e200, 0, 0, 0], [-1e155, 1e155, 0, 0]])
not_numbers = st.sampled_from([["1", 0, 0, 0], [True, False, True, False], [None, 0, 0, 0], [[1], 0, 0, 0], "1,0,0,0"])
#: integers SurrealDB cannot hold (outside signed 64-bit)
huge_int = st.one_of(st.integers(2**63, 2**70), st.integers(-(2**70), -(2**63) - 1), st.just(10**20))
#: text with a lone UTF-16 surrogate (JSON can escape one; UTF-8 cannot carry it)
surrogate_text = st.builds(lambda a, s, b: a + s + b, short_text, st.sampled_from(["\ud800", "\udfff", "\udc00x"]),
                            short_text)


def deep_json(depth: int, kind: str) -> str:
    """JSON text `depth` arrays (or objects) deep: past the parser's recursion limit, or the engine's encoder."""
    return "[" * depth + "]" * depth if kind == "array" else '{"a": ' * depth + "1" + "}" * depth


deep = st.builds(deep_json, st.sampled_from([40, 300, 2_000, 100_000]), st.sampled_from(["array", "object"]))
metadata = st.dictionaries(short_text, st.one_of(short_text, st.integers(-(2**53), 2**53), st.booleans(),
                                                 st.lists(short_text, max_size=3)), max_size=3)
not_utf8 = st.builds(lambda head, tail: head + b"\xff\xfe\xc3\x28" + tail, st.binary(max_size=20), st.binary(max_size=20))
bad_json = st.one_of(
    st.sampled_from(['{"id": "x"', "{'id': 'x'}", "not json", '{"id": "x"}}', '{"id": "x",}', "[1, 2]", '"text"', "3", "null"]),
    short_text.map(lambda s: '{"id": ' + json.dumps(s)),
)


def rare(bad: list[str], valid: int = 4):
    """None (a valid file) `valid` times as often as each kind of bad row."""
    return st.sampled_from([None] * valid + bad)


# ------------------------------------------------------------------------------- files and cases


class Case:
    """Files to write (path -> bytes) and what a load must do: store `documents` and `questions`
    verbatim, or (`bad` names the bad row) refuse."""

    def __init__(self, files: dict[str, bytes], bad: str | None, kinds: frozenset[str], *,
                 documents: dict[str, dict[str, Any]] | None = None, questions: dict[str, dict[str, Any]] | None = None) -> None:
        self.files, self.bad, self.kinds = files, bad, kinds
        self.documents, self.questions = documents or {}, questions or {}

    def __repr__(self) -> str:  # hostile strings can be 100k characters: show their ends
        return f"Case(bad={self.bad!r}, files={_short(self.files)}, documents={_short(self.documents)}, questions={_short(self.questions)})"


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_short(k)}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    text = repr(value)
    return text if len(text) <= 200 else f"{text[:90]}...<{len(text)} characters>...{text[-90:]}"


DOCS, QUESTIONS = frozenset({"documents"}), frozenset({"questions"})


def jsonl_bytes(lines: list[Any], ascii_only: bool = False) -> bytes:
    out = b""
    for line in lines:
        if isinstance(line, bytes):
            out += line + b"\n"
        elif isinstance(line, str):
            out += line.encode("utf-8") + b"\n"
        else:
            out += json.dumps(line, ensure_ascii=ascii_only).encode("utf-8") + b"\n"
    return out


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def insert_at(draw, lines: list, line: Any) -> None:
    lines.insert(draw(st.integers(0, len(lines))), line)


@st.composite
def document_rows(draw, ids=hostile_id, max_size: int = 4) -> dict[str, dict[str, Any]]:
    """Valid documents full of hostile text, by id."""
    names = draw(st.lists(ids, min_size=1, max_size=max_size, unique=True))
    return {name: {"title": draw(hostile), "content": draw(hostile), "embedding": draw(vector),
                   "metadata": draw(st.none() | metadata)} for name in names}


def document_json(draw, ident: str, doc: dict[str, Any]) -> dict[str, Any]:
    row = {draw(st.sampled_from(["id", "_id"])): ident, "title": doc["title"],
           draw(st.sampled_from(["content", "text"])): doc["content"]}
    if doc.get("embedding") is not None:
        row["embedding"] = doc["embedding"]
    if doc["metadata"] is not None:
        row["metadata"] = doc["metadata"]
    return row


DOCUMENT_BAD = ["bad_json", "not_utf8", "duplicate", "dimension", "not_finite", "id_type", "no_id", "empty_id",
                "metadata_type", "content_and_text", "zero_norm", "overflow", "not_numbers", "deep_metadata",
                "huge_int", "huge_position", "surrogate"]


def bad_document(draw, kind: str, docs: dict[str, dict[str, Any]]) -> Any:
    ident = draw(hostile_id.filter(lambda s: s not in docs))
    good = {"id": ident, "title": "t", "content": draw(hostile), "embedding": draw(vector)}
    if kind == "bad_json":
        return draw(bad_json)
    if kind == "not_utf8":
        return draw(not_utf8)
    if kind == "duplicate":
        return {**good, "id": draw(st.sampled_from(sorted(docs)))}
    if kind == "dimension":
        return {**good, "embedding": draw(st.lists(number, min_size=1, max_size=8).filter(lambda v: len(v) != DIMENSION))}
    if kind == "not_finite":
        return json.dumps({**good, "embedding": [0, 0, 0, 0]}).replace("[0, 0, 0, 0]", draw(st.sampled_from(
            ["[NaN, 0, 0, 0]", "[0, Infinity, 0, 0]", "[0, 0, -Infinity, 0]", "[1e999, 0, 0, 0]"])))
    if kind == "id_type":
        return {**good, "id": draw(st.sampled_from([1.5, True, None, [], {}, ["x"]]))}
    if kind == "no_id":
        return {k: v for k, v in good.items() if k != "id"}
    if kind == "empty_id":
        return {**good, "id": ""}
    if kind == "metadata_type":
        return {**good, "metadata": draw(st.sampled_from([[1], "x", 3, True]))}
    if kind == "zero_norm":
        return {**good, "embedding": draw(zero_norm)}
    if kind == "overflow":
        return {**good, "embedding": draw(overflowing)}
    if kind == "not_numbers":
        return {**good, "embedding": draw(not_numbers)}
    if kind == "deep_metadata":
        return json.dumps({**good, "metadata": {"x": 0}}).replace('{"x": 0}', '{"x": ' + draw(deep) + "}")
    if kind == "huge_int":
        return {**good, "metadata": {draw(short_text): draw(huge_int)}}
    if kind == "huge_position":
        return {**good, "position": draw(huge_int)}
    if kind == "surrogate":
        field = draw(st.sampled_from(["title", "content", "id"]))
        return json.dumps({**good, field: draw(surrogate_text)}, ensure_ascii=True)
    return {**good, "text": good["content"] + "x"}  # content_and_text


@st.composite
def jsonl_documents(draw) -> Case:
    docs = draw(document_rows())
    lines: list[Any] = [document_json(draw, ident, doc) for ident, doc in docs.items()]
    bad = draw(rare(DOCUMENT_BAD))
    if bad:
        insert_at(draw, lines, bad_document(draw, bad, docs))
    bad = bad or ("quoted_id" if quoted(docs) else None)
    return Case({"docs.jsonl": jsonl_bytes(lines, draw(st.booleans()))}, bad, DOCS, documents=docs)


@st.composite
def csv_documents(draw) -> Case:
    docs = draw(document_rows())
    for doc in docs.values():
        doc["metadata"] = None  # a CSV's other columns become metadata: covered by test_loaders
    columns = ["id", "title", draw(st.sampled_from(["content", "text"])), "embedding"]
    order = draw(st.permutations(columns))
    rows = [[{"id": i, "title": d["title"], "content": d["content"], "text": d["content"],
              "embedding": json.dumps(d["embedding"])}[c] for c in order] for i, d in docs.items()]
    data = csv_bytes(order, rows)
    bad = draw(rare(["not_utf8", "duplicate", "dimension", "embedding_json", "cells", "header", "deep_cell",
                     "zero_norm", "not_numbers"]))
    if bad == "not_utf8":
        data += draw(not_utf8) + b"\n"
    elif bad in ("duplicate", "dimension", "embedding_json", "cells", "deep_cell", "zero_norm", "not_numbers"):
        row = dict(zip(order, draw(st.sampled_from(rows))))  # a copy of a row: a duplicate id as it is
        if bad in ("deep_cell", "zero_norm", "not_numbers"):
            row["id"] = draw(hostile_id.filter(lambda s: s not in docs))
        if bad == "deep_cell":
            row["embedding"] = draw(deep)
        elif bad in ("zero_norm", "not_numbers"):
            row["embedding"] = json.dumps(draw(zero_norm if bad == "zero_norm" else not_numbers.filter(lambda v: v != "1,0,0,0")))
        elif bad in ("dimension", "embedding_json"):
            row["id"] = draw(hostile_id.filter(lambda s: s not in docs))
            row["embedding"] = "[1, 0]" if bad == "dimension" else draw(st.sampled_from(["[1, 0", "{", "not json", "[1 0 0 0]"]))
        cells = [row[c] for c in order] + (["extra"] if bad == "cells" else [])
        data += csv_bytes(["x"], [cells]).split(b"\r\n", 1)[1]  # the row without the header
    elif bad == "header":
        data = csv_bytes(order + [draw(st.sampled_from(["", "id", "  "]))], [r + ["x"] for r in rows])
    bad = bad or ("quoted_id" if quoted(docs) else None)
    return Case({"docs.csv": data}, bad, DOCS, documents=docs)


def label(draw, ident: str) -> str:
    """A label naming article `ident`: bare, or as seval_article:ident."""
    return draw(st.sampled_from([ident, f"seval_article:{ident}"]))


@st.composite
def question_rows(draw, ids=hostile_id, max_size: int = 4, texts=hostile) -> dict[str, dict[str, Any]]:
    """Valid golden-set questions (labels are seed articles), by id; their texts may be blank (refused)."""
    names = draw(st.lists(ids, min_size=1, max_size=max_size, unique=True))
    questions = {}
    for name in names:
        relevant = draw(st.lists(st.sampled_from(SEED_ARTICLES), min_size=1, max_size=3, unique=True))
        grades = draw(st.none() | st.lists(st.integers(1, 3), min_size=len(relevant), max_size=len(relevant)))
        passages = draw(st.none() | st.lists(st.fixed_dictionaries(
            {"doc": st.sampled_from(relevant), "quote": short_text.filter(bool)}), min_size=1, max_size=2))
        questions[name] = {
            "text": draw(texts), "embedding": draw(vector), "relevant": relevant, "grades": grades,
            "category": draw(st.none() | short_text), "language": draw(st.none() | short_text),
            "source": draw(st.sampled_from([None, "real", "synthetic"])), "split": draw(st.sampled_from([None, "dev", "test"])),
            "passages": passages,
        }
    return questions


def blank_text(questions: dict[str, dict[str, Any]]) -> bool:
    """Whether a question's text or a passage's quote is blank (refused, naming the question)."""
    return any(not q["text"].strip() or any(not p["quote"].strip() for p in q.get("passages") or [])
               for q in questions.values())


QUESTION_BAD = ["bad_json", "not_utf8", "duplicate", "no_labels", "unknown_label", "label_twice", "dimension",
                "extra_key", "grade_text", "source", "grades_mismatch", "grades_bool", "zero_norm", "not_numbers",
                "surrogate"]


def question_json(draw, ident: str, q: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {draw(st.sampled_from(["id", "_id"])): ident, "text": q["text"], "embedding": q["embedding"]}
    labels = [label(draw, r) for r in q["relevant"]]
    if q["grades"] is not None and draw(st.booleans()):
        row["relevant"] = dict(zip(labels, q["grades"]))
    else:
        row["relevant"] = labels
        if q["grades"] is not None:
            row["grades"] = q["grades"]
    for key in ("category", "language", "source", "split"):
        if q[key] is not None:
            row[key] = q[key]
    if q["passages"] is not None:
        row["passages"] = q["passages"]
    return row


def bad_question(draw, kind: str, questions: dict[str, dict[str, Any]]) -> Any:
    ident = draw(hostile_id.filter(lambda s: s not in questions))
    good = {"id": ident, "text": "fine text", "embedding": draw(vector), "relevant": ["track_order"]}
    if kind == "bad_json":
        return draw(bad_json)
    if kind == "not_utf8":
        return draw(not_utf8)
    if kind == "duplicate":
        return {**good, "id": draw(st.sampled_from(sorted(questions)))}
    if kind == "no_labels":
        return {**good, "relevant": draw(st.sampled_from([[], {}, {"track_order": 0}, {"track_order": -1}]))}
    if kind == "unknown_label":
        return {**good, "relevant": ["track_order", draw(hostile_id.filter(lambda s: s.strip() != ""))]}
    if kind == "label_twice":
        return {**good, "relevant": ["track_order", "seval_article:track_order"]}
    if kind == "dimension":
        return {**good, "embedding": [1.0, 0.0]}
    if kind == "extra_key":
        fields = {"id", "_id", "text", "embedding", "relevant", "grades", "category", "language", "source", "split", "passages"}
        return {**good, draw(short_text.filter(lambda s: s not in fields)): draw(hostile)}
    if kind == "grade_text":
        return {**good, "relevant": {"track_order": draw(st.sampled_from(["high", "", None, [1], True]))}}
    if kind == "source":
        return {**good, "source": draw(short_text.filter(lambda s: s not in ("real", "synthetic")))}
    if kind == "grades_bool":
        return {**good, "grades": [True]}
    if kind == "zero_norm":
        return {**good, "embedding": draw(zero_norm)}
    if kind == "not_numbers":
        return {**good, "embedding": draw(not_numbers)}
    if kind == "surrogate":
        return json.dumps({**good, "text": draw(surrogate_text)}, ensure_ascii=True)
    return {**good, "grades": [1, 2]}  # grades_mismatch


@st.composite
def jsonl_questions(draw) -> Case:
    questions = draw(question_rows())
    lines: list[Any] = [question_json(draw, ident, q) for ident, q in questions.items()]
    bad = draw(rare(QUESTION_BAD))
    if bad:
        insert_at(draw, lines, bad_question(draw, bad, questions))
    bad = bad or ("quoted_id" if quoted(questions) else None) or ("blank_text" if blank_text(questions) else None)
    return Case({"golden.jsonl": jsonl_bytes(lines, draw(st.booleans()))}, bad, QUESTIONS, questions=questions)


@st.composite
def csv_questions(draw) -> Case:
    # CSV drops an empty optional cell, and ids, labels and ; split: keep what a cell carries as it is
    questions = draw(question_rows(ids=hostile_id.filter(lambda s: s.strip() != "")))
    columns = ["id", "text", "relevant", "embedding", "grades", "category", "language", "source", "split", "passages"]
    order = draw(st.permutations(columns))
    rows = []
    for ident, q in questions.items():
        for key in ("category", "language"):
            if q[key] == "":
                q[key] = None
        labels = [label(draw, r) for r in q["relevant"]]
        form = draw(st.sampled_from(["semicolons", "json", "map"])) if q["grades"] is not None else draw(st.sampled_from(["semicolons", "json"]))
        relevant = {"semicolons": ";".join(labels), "json": json.dumps(labels),
                    "map": json.dumps(dict(zip(labels, q["grades"] or [])))}[form]
        cells = {"id": ident, "text": q["text"], "relevant": relevant, "embedding": json.dumps(q["embedding"]),
                 "grades": json.dumps(q["grades"]) if q["grades"] is not None and form != "map" else "",
                 "category": q["category"] or "", "language": q["language"] or "", "source": q["source"] or "",
                 "split": q["split"] or "", "passages": json.dumps(q["passages"]) if q["passages"] else ""}
        rows.append([cells[c] for c in order])
    data = csv_bytes(order, rows)
    bad = draw(rare(["not_utf8", "duplicate", "no_labels", "unknown_label", "cells", "relevant_json", "extra_column"]))
    if bad == "not_utf8":
        data += draw(not_utf8) + b"\n"
    elif bad in ("duplicate", "no_labels", "unknown_label", "cells", "relevant_json"):
        row = dict(zip(order, draw(st.sampled_from(rows))))
        if bad != "duplicate":
            row["id"] = draw(hostile_id.filter(lambda s: s not in questions and s.strip() != ""))
        if bad == "no_labels":
            row["relevant"], row["grades"], row["passages"] = "", "", ""
        elif bad == "unknown_label":
            row["relevant"], row["grades"], row["passages"] = json.dumps(["track_order", "no such article"]), "", ""
        elif bad == "relevant_json":
            row["relevant"] = '["track_order"'
        cells = [row[c] for c in order] + (["extra"] if bad == "cells" else [])
        data += csv_bytes(["x"], [cells]).split(b"\r\n", 1)[1]  # the row without the header
    elif bad == "extra_column":
        name = draw(short_text.filter(lambda s: s.strip() and s.strip().lstrip("\ufeff") not in columns))
        data = csv_bytes(order + [name], [r + [draw(short_text.filter(bool))] for r in rows])
    bad = bad or ("quoted_id" if quoted(questions) else None) or ("blank_text" if blank_text(questions) else None)
    return Case({"golden.csv": data}, bad, QUESTIONS, questions=questions)


# --------------------------------------------------------------------------------- BEIR and TREC

#: ids a tab-separated qrels line carries as they are, and ids a whitespace-separated one does
beir_id = hostile_id.map(lambda s: re.sub(r"[\t\n\r]", "", s).strip()).filter(_not_seed)
# a TREC qrels line that starts with # is a comment, as trec_eval reads it (load/collections.py), and U+FEFF at a file's
# start is its byte order mark, read as the encoding's mark, not as an id's first character: no query id starts so
trec_id = hostile_id.map(lambda s: "".join(ch for ch in s if not ch.isspace())).filter(_not_seed).filter(lambda s: not s.startswith(("#", "\ufeff")))


@st.composite
def judgments(draw, queries: list[str], docs: list[str]) -> dict[str, dict[str, int]]:
    return {q: draw(st.dictionaries(st.sampled_from(docs), st.integers(0, 3), max_size=3)) for q in queries}


def judged(queries: dict[str, dict[str, Any]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """The questions a BEIR or TREC load makes: queries with a judgment above 0, labels in qrels order."""
    made = {}
    for qid, q in queries.items():
        positive = {d: g for d, g in qrels.get(qid, {}).items() if g > 0}
        if positive:
            made[qid] = {**q, "relevant": list(positive), "grades": [float(g) for g in positive.values()]}
    return made


@st.composite
def beir_folders(draw) -> Case:
    docs = draw(document_rows(ids=beir_id))
    queries = {qid: {"text": draw(hostile), "embedding": draw(vector)}
               for qid in draw(st.lists(beir_id, min_size=1, max_size=4, unique=True))}
    qrels = draw(judgments(list(queries), list(docs)))
    sidecar = draw(st.booleans())
    corpus = [document_json(draw, i, {**d, "embedding": None if sidecar else d["embedding"]}) for i, d in docs.items()]
    query_lines: list[Any] = [{"_id": qid, "text": q["text"], "embedding": q["embedding"]} for qid, q in queries.items()]
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, ds in qrels.items() for d, g in ds.items()]
    bad = draw(rare(["unknown_query", "unknown_doc", "twice", "grade", "corpus_not_utf8", "qrels_not_utf8",
                     "queries_json", "columns", "corpus_duplicate", "empty_query_id", "empty_doc_id"]))
    qrels_tail = b""
    if bad == "unknown_query":
        insert_at(draw, lines, f"{draw(beir_id.filter(lambda s: s not in queries))}\t{next(iter(docs))}\t1")
    elif bad == "unknown_doc":
        insert_at(draw, lines, f"{next(iter(queries))}\t{draw(beir_id.filter(lambda s: s not in docs))}\t1")
    elif bad == "twice":
        lines += [f"{next(iter(queries))}\t{next(iter(docs))}\t1"] * 2
    elif bad == "grade":
        lines.append(f"{next(iter(queries))}\t{next(iter(docs))}\t{draw(st.sampled_from(['high', 'nan', 'inf', '1e999']))}")
    elif bad == "corpus_not_utf8":
        insert_at(draw, corpus, draw(not_utf8))
    elif bad == "qrels_not_utf8":
        qrels_tail = draw(not_utf8) + b"\n"
    elif bad == "queries_json":
        insert_at(draw, query_lines, draw(bad_json))
    elif bad == "columns":
        lines.append(f"{next(iter(queries))}\t{next(iter(docs))}")
    elif bad == "corpus_duplicate":
        corpus.append(dict(corpus[0]))
    elif bad == "empty_query_id":  # was a pydantic traceback
        insert_at(draw, query_lines, {"_id": "", "text": "x", "embedding": [1, 0, 0, 0]})
        lines.append(f"\t{next(iter(docs))}\t1")
    elif bad == "empty_doc_id":
        lines.append(f"{next(iter(queries))}\t\t1")
    qrels_bytes = "".join(line + "\n" for line in lines).encode("utf-8") + qrels_tail
    files = {"beir/corpus.jsonl": jsonl_bytes(corpus), "beir/queries.jsonl": jsonl_bytes(query_lines),
             "beir/qrels/test.tsv": qrels_bytes}
    if sidecar:
        order = draw(st.permutations(list(docs)))
        files["beir/embeddings/corpus.jsonl"] = jsonl_bytes([{"_id": i, "embedding": docs[i]["embedding"]} for i in order])
    made = {qid: {**q, "split": "test"} for qid, q in judged(queries, qrels).items()}  # --split, default test
    bad = bad or ("quoted_id" if quoted([*docs, *made]) else None) or ("blank_text" if blank_text(made) else None)
    return Case(files, bad, DOCS | QUESTIONS, documents=docs, questions=made)


@st.composite
def trec_files(draw) -> Case:
    tsv = draw(st.booleans())
    texts = hostile.filter(lambda s: "\n" not in s and "\r" not in s) if tsv else hostile
    queries = {qid: {"text": draw(texts), "embedding": draw(vector)}
               for qid in draw(st.lists(trec_id, min_size=1, max_size=4, unique=True))}
    qrels = draw(judgments(list(queries), list(SEED_ARTICLES)))
    lines = [f"{q}{draw(st.sampled_from([' ', '  ', chr(9)]))}{draw(st.sampled_from(['0', 'Q0']))} {d} {g}"
             for q, ds in qrels.items() for d, g in ds.items()]
    sidecar = tsv or draw(st.booleans())
    name = "queries.tsv" if tsv else "queries.jsonl"
    if tsv:
        query_lines: list[Any] = [f"{qid}\t{q['text']}" for qid, q in queries.items()]
    else:
        query_lines = [{draw(st.sampled_from(["_id", "id"])): qid, "text": q["text"],
                        **({} if sidecar else {"embedding": q["embedding"]})} for qid, q in queries.items()]
    bad = draw(rare(["unknown_query", "unknown_doc", "twice", "grade", "columns", "qrels_not_utf8",
                     "queries_not_utf8", "empty_query_id"] + (["no_tab"] if tsv else ["queries_json"])))
    qrels_tail = b""
    if bad == "unknown_query":
        insert_at(draw, lines, f"{draw(trec_id.filter(lambda s: s not in queries))} 0 track_order 1")
    elif bad == "unknown_doc":
        insert_at(draw, lines, f"{next(iter(queries))} 0 {draw(trec_id.filter(lambda s: s not in SEED_ARTICLES))} 1")
    elif bad == "twice":
        lines += [f"{next(iter(queries))} 0 track_order 1"] * 2
    elif bad == "grade":
        lines.append(f"{next(iter(queries))} 0 track_order {draw(st.sampled_from(['high', 'nan', '-inf']))}")
    elif bad == "columns":
        lines.append(f"{next(iter(queries))} 0 track_order")
    elif bad == "qrels_not_utf8":
        qrels_tail = draw(not_utf8) + b"\n"
    elif bad == "queries_not_utf8":
        insert_at(draw, query_lines, draw(not_utf8))
    elif bad == "no_tab":
        insert_at(draw, query_lines, draw(trec_id.filter(lambda s: s not in queries)) + " no tab here")
    elif bad == "queries_json":
        insert_at(draw, query_lines, draw(bad_json))
    elif bad == "empty_query_id":
        insert_at(draw, query_lines, "\tno id" if tsv else {"_id": "", "text": "no id"})
    files = {"qrels.txt": "".join(line + "\n" for line in lines).encode("utf-8") + qrels_tail,
             name: jsonl_bytes(query_lines)}
    if sidecar:
        files[f"embeddings/{Path(name).stem}.jsonl"] = jsonl_bytes([{"_id": i, "embedding": q["embedding"]} for i, q in queries.items()])
    made = judged(queries, qrels)
    bad = bad or ("quoted_id" if quoted(made) else None) or ("blank_text" if blank_text(made) else None)
    return Case(files, bad, QUESTIONS, questions=made)


# -------------------------------------------------------------------------------------- helpers

runner = CliRunner()


def cli(store: Path, *args: str):
    return runner.invoke(app, ["--url", f"surrealkv://{store}", *args])


def no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def one_line_error(result, code: int = 2) -> str:
    no_traceback(result)
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def succeeded(result) -> None:
    no_traceback(result)
    assert result.exit_code == 0, result.output


def attempt(action: Callable[[], Any]) -> Any:
    """The action's result, or the SurrealEvalError it raised (any other exception fails the test)."""
    try:
        return action()
    except SurrealEvalError as error:
        return error


@contextmanager
def opened(store: Path) -> Iterator[Any]:
    with closing(connect(Settings(url=f"surrealkv://{store}"))) as db:
        yield db


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, Path]:
    """Stores to copy per example: `empty` (harness, dimension 4) and `seeded` (the demo's seed in the harness's tables)."""
    root = tmp_path_factory.mktemp("templates")
    succeeded(cli(root / "empty", "init", "--dimension", str(DIMENSION)))
    succeeded(cli(root / "seeded", "init", "--dimension", str(DIMENSION)))
    with opened(root / "seeded") as db:  # the demo's articles and questions in the harness's own tables
        seed_own(db)
    return {"empty": root / "empty", "seeded": root / "seeded"}


@contextmanager
def example_dir(files: dict[str, bytes] | None = None) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        root = Path(tmp)
        write_files(root, files or {})
        yield root


def store_copy(templates: dict[str, Path], name: str, root: Path) -> Path:
    store = root / "store"
    shutil.copytree(templates[name], store)
    return store


def seeded_db():
    db = fresh_db()
    seed_own(db)
    return db


def nobody_let_in(db) -> None:
    """No user was defined anywhere, no staging table is left."""
    assert db.value("INFO FOR ROOT")["users"] == {}
    assert db.value("INFO FOR NS")["users"] == {}
    info = db.value("INFO FOR DB")
    assert info["users"] == {}
    assert not [t for t in info["tables"] if t.startswith("seval_stage_")]


def schema_intact(db, before: dict[str, Any], added: set[str] = frozenset()) -> None:
    """INFO FOR DB as before, but for the tables a successful load adds."""
    info = db.value("INFO FOR DB")
    assert set(info["tables"]) == set(before["tables"]) | added
    assert {t: d for t, d in info["tables"].items() if t not in added} == before["tables"]
    assert {k: v for k, v in info.items() if k != "tables"} == {k: v for k, v in before.items() if k != "tables"}
    nobody_let_in(db)


def stored_documents(db, table: str) -> dict[str, dict[str, Any]]:
    rows = db.value("SELECT record::id(id) AS id, title, content, embedding, metadata FROM type::table($t)", {"t": table})
    return {r["id"]: {"title": r["title"], "content": r["content"], "embedding": r["embedding"],
                      "metadata": r.get("metadata")} for r in rows}


def expected_documents(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i: {"title": d["title"], "content": d["content"], "embedding": [float(x) for x in d["embedding"]],
                "metadata": d["metadata"] or None} for i, d in docs.items()}  # {} is no metadata


def stored_questions(db) -> dict[str, dict[str, Any]]:
    rows = db.value("SELECT record::id(id) AS id, text, relevant, grades, category, language, source, split, "
                    "passages FROM seval_question WHERE record::id(id) NOTINSIDE $seed", {"seed": list(SEED_QUESTIONS)})
    return {r["id"]: {"text": r["text"], "relevant": [record_str(x) for x in r["relevant"]], "grades": r.get("grades"),
                      "category": r.get("category"), "language": r.get("language"), "source": r.get("source"),
                      "split": r.get("split"),
                      "passages": [{"doc": record_str(p["doc"]), "quote": p["quote"]} for p in r.get("passages") or []] or None}
            for r in rows}


def expected_questions(questions: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i: {"text": q["text"], "relevant": [f"seval_article:{r}" for r in q["relevant"]],
                "grades": [float(g) for g in q["grades"]] if q.get("grades") is not None else [1.0] * len(q["relevant"]),
                "category": q.get("category"), "language": q.get("language"), "source": q.get("source"),
                "split": q.get("split"),
                "passages": [{"doc": f"seval_article:{p['doc']}", "quote": p["quote"]} for p in q["passages"]] if q.get("passages") else None}
            for i, q in questions.items()}


def check_library(case: Case, db, load: Callable[[], Any], *, table: str = "seval_article") -> None:
    """Load through the library: the rows verbatim, or InputError and the database as it was."""
    event(f"bad row: {case.bad}")
    before = snapshot(db)
    outcome = attempt(load)
    if case.bad:
        assert isinstance(outcome, InputError), (case.bad, outcome)
        assert len(str(outcome).splitlines()) == 1, str(outcome)
        assert snapshot(db) == before
        nobody_let_in(db)
        return
    assert not isinstance(outcome, SurrealEvalError), outcome
    if "documents" in case.kinds:
        assert stored_documents(db, table) == expected_documents(case.documents)
    if "questions" in case.kinds:
        assert stored_questions(db) == expected_questions(case.questions)
    if "documents" not in case.kinds:
        assert db.value("RETURN count(SELECT * FROM seval_article)") == len(SEED_ARTICLES)
    schema_intact(db, before["info"])


def check_cli(case: Case, store: Path, args: list[str], *, table: str = "seval_article") -> None:
    """Load through the CLI: exit 0 and the rows verbatim, or one line, exit 2 and the store as it was."""
    with opened(store) as db:
        before = snapshot(db)
    result = cli(store, *args)
    if case.bad:
        one_line_error(result, 2)
        with opened(store) as db:
            assert snapshot(db) == before
            nobody_let_in(db)
        return
    succeeded(result)
    with opened(store) as db:
        if "documents" in case.kinds:
            assert stored_documents(db, table) == expected_documents(case.documents)
        schema_intact(db, before["info"], added={table} - set(before["info"]["tables"]))
        if "questions" in case.kinds:
            assert stored_questions(db) == expected_questions(case.questions)
        if "documents" not in case.kinds:
            assert db.value("RETURN count(SELECT * FROM seval_article)") == len(SEED_ARTICLES)


# ------------------------------------------------------------------ what fuzzing found, kept as examples

V = [1.0, 0.0, 0.0, 0.0]


def _document(content: str = "x") -> dict[str, Any]:
    return {"title": "t", "content": content, "embedding": V, "metadata": None}


def _question_fields(relevant: list[str], **more: Any) -> dict[str, Any]:
    return {"text": "t", "embedding": V, "relevant": relevant, "grades": None, "category": None, "language": None,
            "source": None, "split": None, "passages": None, **more}


#: a duplicate id with line breaks made a library error of three lines
FOUND_DUPLICATE_WITH_LINE_BREAKS = Case(
    {"docs.jsonl": jsonl_bytes([{"id": "a\nb\x0b\u2028", "content": c, "embedding": V} for c in "xy"])},
    "duplicate", DOCS, documents={"a\nb\x0b\u2028": _document()})
#: a blank passage quote passed the loader and failed the schema's ASSERT at the move (QueryFailed, exit 1)
FOUND_BLANK_QUOTE = Case(
    {"golden.jsonl": jsonl_bytes([{"id": "q", "text": "t", "embedding": V, "relevant": ["track_order"],
                                   "passages": [{"doc": "track_order", "quote": "\r\n"}]}])},
    "blank_text", QUESTIONS)
#: a BEIR document whose id starts with its table's name (`seval_article:`) was refused as a label to an unknown document
FOUND_PREFIXED_DOCUMENT_ID = Case(
    {"beir/corpus.jsonl": jsonl_bytes([{"_id": "seval_article:x", "text": "x", "embedding": V}]),
     "beir/queries.jsonl": jsonl_bytes([{"_id": "q", "text": "t", "embedding": V}]),
     "beir/qrels/test.tsv": b"query-id\tcorpus-id\tscore\nq\tseval_article:x\t1\n"},
    None, DOCS | QUESTIONS, documents={"seval_article:x": {**_document(), "title": ""}},
    questions={"q": _question_fields(["seval_article:x"], grades=[1.0], split="test")})
#: ids written whole in SurrealDB's quoting loaded, and no command could name them afterwards (read as the key inside)
QUOTED_DOCUMENT_ID = Case({"docs.jsonl": jsonl_bytes([{"id": "fine", "content": "x", "embedding": V},
                                                      {"id": "⟨x⟩", "content": "y", "embedding": V}])},
                          "quoted_id", DOCS, documents={"fine": _document(), "⟨x⟩": _document("y")})
QUOTED_QUESTION_ID = Case({"golden.jsonl": jsonl_bytes([{"id": "`a b`", "text": "t", "embedding": V, "relevant": ["track_order"]}])},
                          "quoted_id", QUESTIONS)
QUOTED_QUERY_ID = Case(
    {"beir/corpus.jsonl": jsonl_bytes([{"_id": "d", "text": "x", "embedding": V}]),
     "beir/queries.jsonl": jsonl_bytes([{"_id": "``", "text": "t", "embedding": V}]),
     "beir/qrels/test.tsv": b"query-id\tcorpus-id\tscore\n``\td\t1\n"},
    "quoted_id", DOCS | QUESTIONS)
#: a BEIR query with an empty id was a pydantic ValidationError traceback
FOUND_EMPTY_QUERY_ID = Case(
    {"beir/corpus.jsonl": jsonl_bytes([{"_id": "d", "text": "x", "embedding": V}]),
     "beir/queries.jsonl": jsonl_bytes([{"_id": "", "text": "t", "embedding": V}]),
     "beir/qrels/test.tsv": b"query-id\tcorpus-id\tscore\n\td\t1\n"},
    "empty_query_id", DOCS | QUESTIONS)
#: bytes that are not UTF-8 in a TSV queries file were a UnicodeDecodeError traceback
FOUND_TSV_QUERIES_NOT_UTF8 = Case(
    {"qrels.txt": b"q 0 track_order 1\n", "queries.tsv": b"q\twhere is it\n\xff\xfe\n",
     "embeddings/queries.jsonl": jsonl_bytes([{"_id": "q", "embedding": V}])},
    "queries_not_utf8", QUESTIONS)

# ---------------------------------------------------------------------------------------- tests


@FUZZ
@given(case=jsonl_documents(), table=st.sampled_from(["seval_article", "seval_docs"]))
@example(case=FOUND_DUPLICATE_WITH_LINE_BREAKS, table="seval_article")
@example(case=QUOTED_DOCUMENT_ID, table="seval_docs")
def test_jsonl_documents_load_verbatim_or_not_at_all(templates, case, table):
    with example_dir(case.files) as root:
        with closing(fresh_db()) as db:
            check_library(case, db, lambda: load_corpus(db, read_documents(root / "docs.jsonl")))
        check_cli(case, store_copy(templates, "empty", root), ["load", "corpus", str(root / "docs.jsonl"), f"--corpus={table}"], table=table)


@FUZZ
@given(case=csv_documents(), table=st.sampled_from(["seval_article", "seval_docs"]))
def test_csv_documents_load_verbatim_or_not_at_all(templates, case, table):
    with example_dir(case.files) as root:
        with closing(fresh_db()) as db:
            check_library(case, db, lambda: load_corpus(db, read_documents(root / "docs.csv")))
        check_cli(case, store_copy(templates, "empty", root), ["load", "corpus", str(root / "docs.csv"), f"--corpus={table}"], table=table)


@FUZZ
@given(case=jsonl_questions())
@example(case=FOUND_BLANK_QUOTE)
@example(case=QUOTED_QUESTION_ID)
def test_jsonl_questions_load_verbatim_or_not_at_all(templates, case):
    with example_dir(case.files) as root:
        with closing(seeded_db()) as db:
            check_library(case, db, lambda: load_golden(db, read_questions(root / "golden.jsonl")))
        check_cli(case, store_copy(templates, "seeded", root), ["load", "golden", str(root / "golden.jsonl")])


@FUZZ
@given(case=csv_questions())
def test_csv_questions_load_verbatim_or_not_at_all(templates, case):
    with example_dir(case.files) as root:
        with closing(seeded_db()) as db:
            check_library(case, db, lambda: load_golden(db, read_questions(root / "golden.csv")))
        check_cli(case, store_copy(templates, "seeded", root), ["load", "golden", str(root / "golden.csv")])


@FUZZ
@given(case=beir_folders())
@example(case=FOUND_PREFIXED_DOCUMENT_ID)
@example(case=FOUND_EMPTY_QUERY_ID)
@example(case=QUOTED_QUERY_ID)
def test_beir_folder_loads_verbatim_or_not_at_all(templates, case):
    with example_dir(case.files) as root:
        with closing(fresh_db()) as db:
            check_library(case, db, lambda: load_beir(db, root / "beir"))
        check_cli(case, store_copy(templates, "empty", root), ["load", "beir", str(root / "beir")])


@FUZZ
@given(case=trec_files())
@example(case=FOUND_TSV_QUERIES_NOT_UTF8)
def test_trec_qrels_with_queries_load_verbatim_or_not_at_all(templates, case):
    queries = next(n for n in case.files if n.startswith("queries."))
    with example_dir(case.files) as root:
        with closing(seeded_db()) as db:
            check_library(case, db, lambda: load_golden(
                db, read_questions(root / "qrels.txt", format="trec", queries=root / queries)))
        check_cli(case, store_copy(templates, "seeded", root),
                  ["load", "golden", str(root / "qrels.txt"), "--format", "trec", "--queries", str(root / queries)])


# ----------------------------------------------------------------- questions through evaluation


@FUZZ
@given(questions=question_rows(ids=loadable_id, max_size=3, texts=hostile.filter(lambda s: s.strip() != "")).filter(lambda qs: not blank_text(qs)),
       run_label=st.none() | short_text)
@example(questions={"[/bold]": _question_fields(["track_order"], text="[link=x]where")}, run_label="[bold]")  # rich MarkupError
@example(questions={"\x1b[2J" * 3: _question_fields(["account_locked"], text="x")}, run_label=None)  # echo stripped ANSI codes
def test_hostile_questions_evaluate_diagnose_and_export(templates, questions, run_label):
    """Hostile ids and texts are scored by name, diagnosed, and exported as TREC (or refused, with whitespace)."""
    questions = {i: {**q, "passages": None} for i, q in questions.items()}  # hostile quotes match no article
    lines = [{"id": i, **{k: v for k, v in q.items() if v is not None}} for i, q in questions.items()]
    names = {f"seval_question:{i}" for i in questions}
    whitespace = any(ch.isspace() for i in questions for ch in i)
    with closing(seeded_db()) as db:
        tables = db.value("INFO FOR DB")
        load_golden(db, [Question(id=i, **{k: v for k, v in q.items() if v is not None}) for i, q in questions.items()])
        report = evaluate(db, ks=[3], per_question=True, label=run_label)
        assert report.questions == len(SEED_QUESTIONS) + len(questions)
        assert names <= {r.question for r in report.per_question}
        for ident, q in questions.items():
            found = diagnose(db, f"seval_question:{ident}", k=3)
            assert (found.question, found.text) == (f"seval_question:{ident}", q["text"])
        exported = attempt(lambda: list(export_run_trec(db, report.run)))
        check_trec(exported, questions, whitespace)
        schema_intact(db, tables)
        assert db.value("RETURN count(SELECT * FROM seval_article)") == len(SEED_ARTICLES)
    with example_dir({"golden.jsonl": jsonl_bytes(lines)}) as root:
        store = store_copy(templates, "seeded", root)
        succeeded(cli(store, "load", "golden", str(root / "golden.jsonl")))
        succeeded(cli(store, "evaluate", "--k", "3", "--per-question", *([f"--note={run_label}"] if run_label is not None else [])))
        result = cli(store, "evaluate", "--k", "3", "--per-question", "--json")
        succeeded(result)
        shown = json.loads(result.stdout)
        assert names <= {r["question"] for r in shown["per_question"]}
        for ident in questions:
            succeeded(cli(store, "diagnose", f"seval_question:{ident}", "--k", "3"))
        result = cli(store, "runs", "export", shown["run"])
        if whitespace:
            assert "whitespace" in one_line_error(result, 2)
        else:
            succeeded(result)
            check_trec(result.stdout.split("\n")[:-1], questions, whitespace)
        succeeded(cli(store, "runs", "list"))
        with opened(store) as db:
            nobody_let_in(db)
            assert db.value("RETURN count(SELECT * FROM seval_article)") == len(SEED_ARTICLES)


def check_trec(exported: Any, questions: dict[str, dict[str, Any]], whitespace: bool) -> None:
    """Valid TREC run lines naming every question, or (an id with whitespace) a one-line InputError."""
    if whitespace:
        assert isinstance(exported, InputError) and "whitespace" in str(exported)
        return
    assert not isinstance(exported, SurrealEvalError), exported
    qids = set()
    for line in exported:
        qid, q0, doc, rank, score, _tag = line.split()
        assert q0 == "Q0" and int(rank) >= 1 and float(score) > 0 and doc
        qids.add(qid)
    assert set(questions) <= qids


# --------------------------------------------------------------------- identifiers on the command line

NOT_IDENTIFIERS = ["article; REMOVE TABLE x", "a-b", "⟨x⟩", "", "a" * 100, "article\n", "`article`", " article",
                   "1abc", "ártículo", "article --", "seval_question:x", "article\x00"]
not_identifier = st.one_of(st.sampled_from(NOT_IDENTIFIERS), hostile.filter(lambda s: not IDENTIFIER.fullmatch(s)))
EMBEDDER = "openai:m@http://127.0.0.1:9/v1"  # never called: every command here is refused before
GOOD_DOCS = {"fz1": {"title": "t", "content": "parcel", "embedding": [1.0, 0.0, 0.0, 0.0], "metadata": None},
             "fz2": {"title": "u", "content": "refund", "embedding": [0.0, 1.0, 0.0, 0.0], "metadata": None}}


def identifier_commands(name: str, docs: Path) -> list[list[str]]:
    return [
        ["load", "corpus", str(docs), f"--corpus={name}"],
        ["evaluate", "--k", "3", f"--corpus={name}"],
        ["diagnose", "money_back", f"--corpus={name}"],
        ["tune", "--force", "--values", "0,3", f"--corpus={name}"],
        ["chunk", f"--corpus={name}", "--into=chunks", "--embedder", EMBEDDER],
        ["chunk", f"--into={name}", "--embedder", EMBEDDER],
        ["access", "add", "--", name],
        ["access", "remove", "--", name],
    ]


@FUZZ
@given(name=not_identifier)
@example(name="article\n")  # passed the identifier check: Python's `$` matches before a final newline
@example(name="")
def test_table_and_account_names_that_are_not_identifiers_are_refused(templates, name):
    docs = jsonl_bytes([{"id": i, **{k: v for k, v in d.items() if v is not None}} for i, d in GOOD_DOCS.items()])
    with example_dir({"docs.jsonl": docs}) as root:
        store = store_copy(templates, "seeded", root)
        with opened(store) as db:
            before = snapshot(db)
        for args in identifier_commands(name, root / "docs.jsonl"):
            result = runner.invoke(app, ["--url", f"surrealkv://{store}", *args], env={"SURREAL_EVAL_EVALUATOR_PASS": "long enough pw"})
            line = one_line_error(result, 2)
            assert "not a valid identifier" in line, (args, line)
        with opened(store) as db:
            assert snapshot(db) == before
            nobody_let_in(db)


HARNESS_TABLES = ("seval_question", "seval_run", "seval_ranking", "seval_watch", "seval_ingest", "seval_evaluator",
                  "seval_config", "seval_script", "seval_corpus")
identifier_name = st.one_of(
    st.sampled_from(HARNESS_TABLES + ("seval_stage_article", "select", "NONE", "true", "null", "FROM", "ONLY", "VALUE",
                                      "table", "delete", "Function", "tb", "x" * 55, "x" * 56)),
    st.from_regex(IDENTIFIER, fullmatch=True),
).filter(lambda s: s != "seval_article")


@FUZZ
@given(name=identifier_name)
def test_an_identifier_loads_a_corpus_table_or_is_refused_cleanly(templates, name):
    """A valid identifier that is not a corpus table is refused where one is read (exit 2, nothing changed);
    loading into it makes it a new corpus table when it carries the harness's prefix seval_, unless the
    harness uses the name (refused, exit 2); any other name is refused (exit 2)."""
    docs = jsonl_bytes([{"id": i, **{k: v for k, v in d.items() if v is not None}} for i, d in GOOD_DOCS.items()])
    with example_dir({"docs.jsonl": docs}) as root:
        store = store_copy(templates, "seeded", root)
        with opened(store) as db:
            before = snapshot(db)
        reserved = name.lower() in RESERVED_WORDS
        for args in (["evaluate", "--k", "3", f"--corpus={name}"], ["diagnose", "money_back", f"--corpus={name}"],
                     ["chunk", f"--corpus={name}", "--into=seval_chunks", "--embedder", EMBEDDER]):  # chunk once cut eval_run
            line = one_line_error(cli(store, *args), 2)
            assert ("is a SurrealQL keyword" if reserved else "corpus table") in line, (args, line)
        with opened(store) as db:
            assert snapshot(db) == before
        result = cli(store, "load", "corpus", str(root / "docs.jsonl"), f"--corpus={name}")
        no_traceback(result)
        # a table the harness defines carries its prefix: any other name is refused too
        refused = name in HARNESS_TABLES or reserved or not name.startswith("seval_")
        if refused or name.startswith("seval_stage_") or result.exit_code != 0:
            one_line_error(result, 2 if refused else result.exit_code)
            assert result.exit_code != 0
            with opened(store) as db:
                assert snapshot(db) == before
                nobody_let_in(db)
            return
        with opened(store) as db:
            assert stored_documents(db, name) == expected_documents(GOOD_DOCS)
            schema_intact(db, before["info"], added={name})


# -------------------------------------------------------------------------------- any bytes at all

LOADERS: dict[str, Callable[[Any, Path], Any]] = {
    "docs.jsonl": lambda db, path: load_corpus(db, read_documents(path)),
    "docs.csv": lambda db, path: load_corpus(db, read_documents(path)),
    "golden.jsonl": lambda db, path: load_golden(db, read_questions(path)),
    "golden.csv": lambda db, path: load_golden(db, read_questions(path)),
    "qrels.txt": lambda db, path: load_golden(db, read_questions(path, format="trec", queries=path.parent / "queries.tsv")),
    "queries.tsv": lambda db, path: load_golden(db, read_questions(path.parent / "qrels.txt", format="trec", queries=path)),
    "corpus.jsonl": lambda db, path: load_beir(db, path.parent),
    "queries.jsonl": lambda db, path: load_beir(db, path.parent),
    "test.tsv": lambda db, path: load_beir(db, path.parent.parent),
}
SOUND = {  # a valid file of every name, for the files a loader reads beside the one fuzzed
    "qrels.txt": b"q 0 track_order 1\n", "queries.tsv": b"q\tparcel\n",
    "corpus.jsonl": b'{"_id": "d", "text": "x", "embedding": [1, 0, 0, 0]}\n',
    "queries.jsonl": b'{"_id": "q", "text": "t", "embedding": [1, 0, 0, 0]}\n',
}


@FUZZ
@given(name=st.sampled_from(sorted(LOADERS)), data=st.one_of(
    st.binary(max_size=300), not_utf8, st.lists(st.one_of(st.binary(max_size=40), fragment.map(str.encode)),
                                                max_size=8).map(b"\n".join)))
def test_any_bytes_in_any_file_load_or_are_refused_in_one_line(name, data):
    """Whatever bytes a file holds, a load stores what it read or raises one of ours in one line, changing nothing."""
    with example_dir() as root:
        folder = root / "beir"
        write_files(folder, {"qrels/test.tsv": b"query-id\tcorpus-id\tscore\nq\td\t1\n", **SOUND,
                             "embeddings/queries.jsonl": b'{"_id": "q", "embedding": [1, 0, 0, 0]}\n'})
        path = folder / ("qrels/test.tsv" if name == "test.tsv" else name)
        path.write_bytes(data)
        with closing(seeded_db()) as db:
            before = snapshot(db)
            outcome = attempt(lambda: LOADERS[name](db, path))
            if isinstance(outcome, SurrealEvalError):
                assert len(str(outcome).splitlines()) == 1 and str(outcome).isprintable(), str(outcome)
                assert snapshot(db) == before
            nobody_let_in(db)
            assert set(db.value("INFO FOR DB")["tables"]) == set(before["info"]["tables"])


@FUZZ
@given(ident=loadable_id)
@example(ident="with space")  # a record shown in backticks did not match: QueryFailed, exit 1, not Rejected
def test_a_schema_refusal_of_any_id_is_rejected_in_one_line(ident):
    """A row only the schema refuses (an ASSERT added here) is Rejected (exit 2) naming the record, nothing written."""
    with closing(seeded_db()) as db:
        db.query("DEFINE FIELD OVERWRITE category ON seval_question TYPE option<string> ASSERT $value != 'forbidden'")
        before = snapshot(db)
        bad = Question(id=ident, text="t", embedding=V, relevant=["track_order"], category="forbidden")
        with pytest.raises(Rejected) as refused:
            load_golden(db, [bad])
        assert "field `category`" in str(refused.value) and str(refused.value).isprintable()
        assert snapshot(db) == before


# ------------------------------------------------------------------------- numeric options

#: every numeric option of every command, with the arguments that command needs besides it
NUMERIC_OPTIONS = [
    (["evaluate"], "--k"), (["evaluate"], "--depth"), (["evaluate"], "--rrf-k"), (["evaluate"], "--floor"),
    (["evaluate"], "--weights"), (["diagnose", "money_back"], "--k"), (["diagnose", "money_back"], "--floor"),
    (["watch", "set"], "--k"), (["watch", "set"], "--floor"), (["watch", "set"], "--rrf-k"), (["runs", "list"], "--limit"),
    (["split"], "--dev"), (["split"], "--seed"), (["init"], "--dimension"), (["init"], "--knn-depth"),
    (["init"], "--knn-ef"), (["tune", "--force", "--param", "floor"], "--values"),
    (["tune", "--force", "--param", "rrf_k"], "--values"), (["tune", "--force", "--param", "knn_ef"], "--values"),
    (["tune", "--force", "--param", "weights"], "--values"),
]
hostile_number = st.one_of(
    huge_int.map(str), st.integers(-(2**64), 2**64).map(str), st.integers(-3, 20_000).map(str),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-0", "0", "1e3", "0x10", "1_000", "", " ", "true",
                     "nan,inf", "0,0", "1,nan", "-1,2", "1e308,1e308", "0.5;0.5", "1,2,3", "٣", "\ud800"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@FUZZ
@given(option=st.sampled_from(NUMERIC_OPTIONS), value=hostile_number)
@example(option=(["evaluate"], "--k"), value="99999999999999999999")
@example(option=(["evaluate"], "--k"), value="101")  # refused after the engine checks passed: none kept
@example(option=(["init"], "--dimension"), value="99999999")
@example(option=(["tune", "--force", "--param", "knn_ef"], "--values"), value="100000")
@example(option=(["evaluate"], "--weights"), value="nan,inf")
@example(option=(["tune", "--force", "--param", "floor"], "--values"), value="1,2,3")  # a sweep that ties is refused
def test_any_value_of_a_numeric_option_runs_or_is_refused_in_one_line(templates, option, value):
    """NaN, infinities, integers past 64 bits, text: a command runs, or prints one line, exits 2 and changes nothing."""
    command, name = option
    with example_dir() as root:
        store = store_copy(templates, "seeded", root)
        with opened(store) as db:
            before = snapshot(db)
        result = cli(store, *command, f"{name}={value}")
        no_traceback(result)
        if result.exit_code != 0:
            if result.stderr.startswith("Usage:"):  # click refused a value that is not of the option's type
                assert result.exit_code == 2 and name in result.stderr, result.output
            else:
                one_line_error(result, 2)
            with opened(store) as db:
                assert snapshot(db) == before
