"""Questions a model writes (`surreal-eval golden generate`), through surql/generate.surql.

1. Sample `count` records of a corpus table, seeded and stratified: by the value of a field when one is
   given (`stratify`, e.g. metadata.topic), else by length (the quartiles of the records' word counts);
   each stratum gets its share of `count` (largest remainder), drawn at random within it. A record some
   question was already generated from (or a `synthetic` question of the set is labelled with) is skipped.
2. Ask the chat model, one request per record, with the prompt template (the package's
   prompts/question.txt unless replaced) filled with {title}, {passage} (at most PASSAGE_CHARS characters)
   and {language}.
3. Read each answer (golden/wording.py): dropped and counted, never stored: an empty answer, one with no
   line ending in `?` (not a question: an answer or a statement instead), a question that does not look
   English when `language` is `en`, and, with `max_overlap` and not `flag_overlap`, a question whose
   lexical overlap with its passage is above it (a copy). With `flag_overlap`, those are kept and flagged.
4. Embed the kept questions with the embedder and store them all in one statement
   (fn::seval::add_generated): all or nothing. Any failure of the chat endpoint or the embedder leaves
   the database exactly as it was. Only an owner may generate: an evaluator is refused before any request.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any, Optional


from ..model_base import Model
from ..errors import ConfigError, InputError, on_interrupt
from ..store.access import require_owner
from ..store.connection import Database, record_str
from .chat import OpenAIChat
from .prompts import fill, require, shipped
from ..load.embedding import Embedder
from .labels import who
from .wording import looks_english, overlap, question_in, words

__all__ = ["DROP_REASONS", "GenerateReport", "default_prompt", "generate_questions", "sample_passages"]

#: The longest passage put into a prompt, in characters (a longer one is cut there).
PASSAGE_CHARS = 6000
#: Why an answer is dropped, as the report counts them.
DROP_REASONS = ("empty", "not a question", "other language", "copies the passage")
_LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
              "nl": "Dutch"}


class GenerateReport(Model):
    """What one `golden generate` did."""

    corpus: str
    model: str
    #: sha256 of the prompt template
    prompt: str
    #: records that could be sampled (not used before), and how many were asked about
    available: int
    asked: int
    #: requests sent to the endpoint (the others were answered from the cache)
    requests: int
    stored: int
    flagged: int
    dropped: dict[str, int]
    #: the lexical overlap of every question read (stored or dropped as a copy), in sample order
    overlaps: list[float]
    questions: list[str]


def default_prompt() -> str:
    """The prompt template shipped with the package (prompts/question.txt)."""
    return shipped("question")


def _strata(passages: list[dict[str, Any]], by_field: bool) -> list[str]:
    if by_field:
        return [p.get("stratum") or "(none)" for p in passages]
    lengths = sorted(len(words(p["text"])) for p in passages)
    cuts = [lengths[(len(lengths) * q) // 4] for q in (1, 2, 3)] if lengths else []
    return [f"length q{1 + sum(len(words(p['text'])) >= c for c in cuts)}" for p in passages]


def sample_passages(passages: list[dict[str, Any]], count: int, *, seed: int = 0,
                    by_field: bool = False) -> list[dict[str, Any]]:
    """`count` of `passages` (all of them when fewer), stratified as the module says, in sample order;
    each chosen one gets its stratum as `stratum`."""
    ordered = sorted(passages, key=lambda p: record_str(p["id"]))
    groups: dict[str, list[dict[str, Any]]] = {}
    for passage, stratum in zip(ordered, _strata(ordered, by_field)):
        groups.setdefault(stratum, []).append({**passage, "stratum": stratum})
    count = min(count, len(ordered))
    shares = {s: count * len(g) / len(ordered) for s, g in groups.items()} if ordered else {}
    quota = {s: int(share) for s, share in shares.items()}
    for s in sorted(shares, key=lambda s: (-(shares[s] - quota[s]), s))[: count - sum(quota.values())]:
        quota[s] += 1
    rng = random.Random(seed)
    chosen = [p for s in sorted(groups) for p in rng.sample(groups[s], quota[s])]
    rng.shuffle(chosen)
    return chosen


def _owner(db: Database) -> None:
    require_owner(db, "golden generate writes questions into the golden set")


def generate_questions(db: Database, chat: OpenAIChat, embedder: Embedder | None, *, count: int, seed: int = 0,
                       corpus: str | None = None, stratify: str | None = None, prompt: str | None = None,
                       language: str = "en", max_overlap: float | None = None, flag_overlap: bool = False,
                       by: Optional[str] = None) -> GenerateReport:
    """Ask `chat` for questions about `count` sampled records of `corpus` (default: the corpus a run
    searches) and store the good ones in the harness's own golden set, as the module says."""
    _owner(db)
    if count < 1:
        raise InputError(f"--count must be at least 1, not {count}")
    if max_overlap is not None and not 0 <= max_overlap <= 1:
        raise InputError(f"--max-overlap must be between 0 and 1, not {max_overlap}")
    if flag_overlap and max_overlap is None:
        raise InputError("--flag-overlap flags the questions above --max-overlap: give --max-overlap too")
    if embedder is None:
        raise ConfigError("golden generate embeds the questions it writes: give --embedder or set SURREAL_EVAL_EMBEDDER")
    template = require(default_prompt() if prompt is None else prompt, {"passage": "the record's text"})
    digest = hashlib.sha256(template.encode("utf-8")).hexdigest()
    corpus = corpus or db.value("RETURN fn::seval::default_corpus()")
    passages = db.value("RETURN fn::seval::passages($c, fn::seval::generation_sources($c), $f)",
                        {"c": corpus, "f": stratify})
    chosen = sample_passages([p for p in passages if p["text"].strip()], count, seed=seed, by_field=stratify is not None)
    shown = [p["text"][:PASSAGE_CHARS] for p in chosen]
    values = [{"title": p["title"], "passage": text, "language": _LANGUAGES.get(language, language)}
              for p, text in zip(chosen, shown)]
    sent = chat.sent
    with on_interrupt("no question was stored in the database"):
        answers = chat.answer_all([[{"role": "user", "content": fill(template, v)}] for v in values])
    dropped: Counter[str] = Counter({reason: 0 for reason in DROP_REASONS})
    kept: list[dict[str, Any]] = []
    overlaps: list[float] = []
    for passage, text, answer in zip(chosen, shown, answers):
        question = question_in(answer)
        if not answer.strip():
            dropped["empty"] += 1
        elif question is None or len(words(question)) < 2:
            dropped["not a question"] += 1
        elif language == "en" and not looks_english(question):
            dropped["other language"] += 1
        else:
            share = round(overlap(question, f"{passage['title']} {text}"), 4)
            overlaps.append(share)
            above = max_overlap is not None and share > max_overlap
            if above and not flag_overlap:
                dropped["copies the passage"] += 1
                continue
            doc = passage["id"]
            kept.append({"id": f"gen-{doc.table_name}-{doc.id}", "text": question, "doc": doc, "language": language,
                         "overlap": share, "flagged": above, "stratum": passage["stratum"]})
    if kept:
        vectors = embedder.embed([row["text"] for row in kept])
        for row, vector in zip(kept, vectors):
            row["embedding"] = vector
        db.value("RETURN fn::seval::add_generated($rows, $model, $prompt, $by)",
                 {"rows": kept, "model": chat.name, "prompt": digest, "by": by or who()})
    return GenerateReport(corpus=corpus, model=chat.name, prompt=digest, available=len(passages), asked=len(chosen),
                          requests=chat.sent - sent, stored=len(kept), flagged=sum(r["flagged"] for r in kept),
                          dropped=dict(dropped), overlaps=overlaps, questions=[f"seval_question:{r['id']}" for r in kept])
