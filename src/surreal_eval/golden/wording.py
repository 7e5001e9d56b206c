"""Reading a model's plain-text answers, and measuring the words of a question against its passage.

Answers are read as plain text, so that servers without a JSON mode work:

- a generated question is the first line of the answer that ends with `?` (surrounding spaces
  trimmed); no such line: not a question;
- a judgment is the first whole number from 0 to 3 in the answer (a number that is part of a decimal,
  a larger number or a negative one is skipped); none: no judgment.

The lexical overlap of a question with its passage is the share of the question's distinct content
words (lower-cased runs of letters and digits, the 127 English stopwords of fn::seval::strip_stopwords
removed: the harness's one stopword list, read from surql/analyzers.surql) that occur in the passage.

No language-detection library is a dependency: `looks_english` is a documented heuristic (see it).
"""

from __future__ import annotations

import re
from functools import cache

from ..store.schema import surql_dir

__all__ = ["content_words", "judgment_in", "looks_english", "overlap", "question_in", "stopwords"]

_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"(?<![\d.\-])(\d+)(?![\d]|\.\d)")
#: Frequent function words of French, German, Spanish, Italian and Portuguese that are not English words.
_FOREIGN = frozenset(
    "le la les des du une est sont dans pour avec sur qui quoi quels quelle quelles comment pourquoi "
    "der die das und ist sind nicht mit auf für wie warum welche wer den dem ein eine einer "
    "el los las del por para qué cómo cuál cuáles es son una está están "
    "il lo gli della delle che sono come perché quali di e "
    "os da do das dos em um uma são não como porque quais".split())


@cache
def stopwords() -> frozenset[str]:
    """The English stopwords fn::seval::strip_stopwords removes (surql/analyzers.surql)."""
    text = (surql_dir() / "analyzers.surql").read_text(encoding="utf-8")
    found = re.search(r"strip_stopwords\(\$text: string\).*?\(\?:([a-z|]+)\)", text, re.DOTALL)
    if not found:  # pragma: no cover - the file is the package's own
        raise RuntimeError("surql/analyzers.surql holds no stopword list in fn::seval::strip_stopwords")
    return frozenset(found[1].split("|"))


def question_in(answer: str) -> str | None:
    """The first line of `answer` that ends with `?` (trimmed), or None when no line does."""
    for line in answer.splitlines():
        line = line.strip()
        if line.endswith("?"):
            return line
    return None


def judgment_in(answer: str) -> int | None:
    """The first whole number from 0 to 3 in `answer`, or None when there is none."""
    for found in _NUMBER.finditer(answer):
        if 0 <= int(found[1]) <= 3:
            return int(found[1])
    return None


def words(text: str) -> list[str]:
    """The lower-cased runs of letters and digits of `text`, in order."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    """The distinct words of `text` that are not English stopwords."""
    return set(words(text)) - stopwords()


def overlap(question: str, passage: str) -> float:
    """The share of the question's distinct content words that occur in the passage (0 when it has none)."""
    mine = content_words(question)
    return len(mine & set(words(passage))) / len(mine) if mine else 0.0


def looks_english(text: str) -> bool:
    """A heuristic: at most 10% of the letters are not ASCII, and more of the words are English stopwords
    than frequent function words of French, German, Spanish, Italian or Portuguese (at least one)."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(not c.isascii() for c in letters) > 0.1 * len(letters):
        return False
    seen = words(text)
    english = sum(w in stopwords() for w in seen)
    return english > 0 and english > sum(w in _FOREIGN for w in seen)
