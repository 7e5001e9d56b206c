"""Run files made elsewhere, read as rankings: TREC run files (`qid Q0 docid rank score tag`) and JSONL
(`{"question": ID, "ranked": [ID, ...] | [{"id": ID, "score": N}, ...], "retriever": NAME}`).

Every malformed line is refused with its file and line. Which question and document ids exist is
for the caller to check (runs/score.py): a reader knows only the text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError
from .rows import json_rows, open_text

__all__ = ["RunFileFormat", "Ranked", "read_run_file", "check_name", "trec_eval_float"]

RunFileFormat = Literal["auto", "trec", "jsonl"]
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,63}$")


@dataclass
class Ranked:
    """One question's ranking by one retriever as the file gives it: ids best first, their scores, and
    the line each id is on (the line the ranking starts on: `line`)."""

    retriever: str
    question: str
    ids: list[str]
    scores: list[float]
    line: int
    lines: list[int]


def check_name(name: str, *, where: str) -> str:
    """`name` if it can name a retriever of a run (letters, digits and _ . : + -, at most 64), else an InputError."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InputError(f"retriever name {name!r} ({where}) must be 1 to 64 letters, digits or _ . : + -")
    return name


def _format_of(path: Path, given: str) -> str:
    if given in ("trec", "jsonl"):
        return given
    if given != "auto":
        raise InputError(f"--format {given!r} is not one of auto, trec, jsonl", source=str(path))
    with open_text(path) as handle:
        try:
            first = next((line for line in handle if line.strip() and not line.lstrip().startswith("#")), "")
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None
    if not first:
        raise InputError("the run file is empty", source=str(path))
    return "jsonl" if first.lstrip().startswith("{") else "trec"


def _score(text: Any, path: Path, line: int) -> float:
    try:
        value = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"score {text!r} is not a finite number", source=str(path), line=line)
    return value


def _trec(path: Path) -> Iterator[tuple[int, str, str, str, float]]:
    """(line, tag, qid, docid, score) per line of a TREC run file; the rank column is checked, not used
    (trec_eval orders by score)."""
    with open_text(path) as handle:
        try:
            for number, text in enumerate(handle, start=1):
                fields = text.split()
                if not fields or fields[0].startswith("#"):  # a comment, as trec_eval 10 reads them
                    continue
                if len(fields) < 6:  # fields after the tag are ignored, as trec_eval ignores them
                    raise InputError(f"a TREC run line has 6 fields (qid Q0 docid rank score tag), this has {len(fields)}",
                                     source=str(path), line=number)
                qid, _, doc, rank, score, tag = fields[:6]
                if not rank.lstrip("-").isdigit():
                    raise InputError(f"rank {rank!r} is not a whole number", source=str(path), line=number)
                yield number, check_name(tag, where=f"{path}:{number}"), qid, doc, _score(score, path, number)
        except UnicodeDecodeError as error:
            raise InputError(f"not UTF-8 text ({error.reason})", source=str(path)) from None


def trec_eval_float(score: float) -> Any:
    """The score as trec_eval holds it (a numpy float32): read into a C float (TEXT_RESULTS.sim,
    get_trec_results.c), so scores that differ only past 32-bit precision tie there, and one past a float's
    range is infinite; trec_eval then breaks a tie by docid descending."""
    import numpy as np

    with np.errstate(over="ignore"):
        return np.float32(score)


def _read_trec(path: Path) -> list[Ranked]:
    rankings: dict[tuple[str, str], Ranked] = {}
    for line, tag, qid, doc, score in _trec(path):
        ranked = rankings.setdefault((tag, qid), Ranked(tag, qid, [], [], line, []))
        if doc in ranked.ids:
            raise InputError(f"document {doc!r} is ranked twice for question {qid!r} by {tag}", source=str(path), line=line)
        ranked.ids.append(doc)
        ranked.scores.append(score)
        ranked.lines.append(line)
    for ranked in rankings.values():  # trec_eval's order: score descending as a 32-bit float, ties by docid descending
        order = sorted(range(len(ranked.ids)), key=lambda i: (trec_eval_float(ranked.scores[i]), ranked.ids[i]), reverse=True)
        ranked.ids = [ranked.ids[i] for i in order]
        ranked.scores = [ranked.scores[i] for i in order]
        ranked.lines = [ranked.lines[i] for i in order]
    return list(rankings.values())


def _id(value: Any, what: str, path: Path, line: int) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a non-empty string, got {value!r}", source=str(path), line=line)
    return value.strip()


def _read_jsonl(path: Path, name: str) -> list[Ranked]:
    seen: set[tuple[str, str]] = set()
    out: list[Ranked] = []
    for line, raw in json_rows(path):
        unknown = sorted(set(raw) - {"question", "ranked", "retriever"})
        if unknown:
            raise InputError(f"unknown field {unknown[0]!r}: a line has question, ranked and optionally retriever",
                             source=str(path), line=line)
        question = _id(raw.get("question"), "question", path, line)
        retriever = check_name(raw["retriever"], where=f"{path}:{line}") if "retriever" in raw else name
        items = raw.get("ranked")
        if not isinstance(items, list):
            raise InputError("ranked must be a list of ids or of {id, score} objects", source=str(path), line=line)
        if (retriever, question) in seen:
            raise InputError(f"question {question!r} is ranked twice by {retriever}", source=str(path), line=line)
        seen.add((retriever, question))
        ids: list[str] = []
        scores: list[float] = []
        for rank, item in enumerate(items, start=1):
            if isinstance(item, dict):
                if set(item) != {"id", "score"}:
                    raise InputError(f"ranked[{rank - 1}] must be {{id, score}}, got keys {sorted(item)}",
                                     source=str(path), line=line)
                doc, score = _id(item["id"], f"ranked[{rank - 1}].id", path, line), _score(item["score"], path, line)
            else:  # ids only: scores that keep the order given
                doc, score = _id(item, f"ranked[{rank - 1}]", path, line), float(len(items) - rank + 1)
            if doc in ids:
                raise InputError(f"document {doc!r} is ranked twice for question {question!r}", source=str(path), line=line)
            ids.append(doc)
            scores.append(score)
        if any(a < b for a, b in zip(scores, scores[1:])):
            raise InputError(f"the scores of question {question!r} must not increase down the ranking (best first)",
                             source=str(path), line=line)
        out.append(Ranked(retriever, question, ids, scores, line, [line] * len(ids)))
    return out


def read_run_file(path: Path, *, format: RunFileFormat = "auto", name: str | None = None) -> tuple[str, list[Ranked]]:
    """The file's format and its rankings. `name` renames a TREC file's one tag (a file with several
    tags is refused) and names a JSONL file's rankings that give no retriever (default: supplied)."""
    if path.is_dir() or not path.exists():
        raise InputError("a folder, not a file: name a run file" if path.is_dir() else "no such file", source=str(path))
    if name is not None:
        check_name(name, where="--retriever")
    fmt = _format_of(path, format)
    if fmt == "jsonl":
        return fmt, _read_jsonl(path, name or "supplied")
    rankings = _read_trec(path)
    tags = sorted({r.retriever for r in rankings})
    if name is not None and len(tags) > 1:
        raise InputError(f"--retriever names the rankings of a file with one tag, and this file has {len(tags)}: {', '.join(tags)}", source=str(path))
    if name is not None:
        for ranked in rankings:
            ranked.retriever = name
    return fmt, rankings
