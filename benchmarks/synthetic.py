"""A deterministic synthetic retrieval corpus for benchmarks: Zipfian text, planted embeddings.

    from synthetic import generate
    corpus = generate(docs=20_000, questions=1_000, dimension=384, seed=7)
    corpus.articles, corpus.questions      # lists of surreal_eval.Article / Question

How it is made (numpy only, the same numbers for the same arguments):

- a vocabulary of pronounceable pseudo-words, drawn with Zipf-Mandelbrot frequencies
  (p(rank r) ~ 1 / (r + 2.7)^1.07), so a few words are in most documents (BM25 idf 0, as for
  "the" in English) and most words are rare: the postings lists have a realistic shape;
- topics, each a unit vector and a set of topic words from the middle and tail of the vocabulary;
- documents of 100 to 200 words, about 15% of them words of their topic and the rest drawn from
  the Zipf distribution, embedded as their topic's vector plus noise (normalised);
- questions, each labelling 1 to 5 documents of one topic (grades 1 to 3): the question's vector
  is the mean of its labels' vectors plus noise (normalised), so the labels are near it; its text
  is a few rare words of each label, a topic word and some common words, so it shares words with
  its labels (and, through the common words, with much of the corpus).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surreal_eval import Article, Question

__all__ = ["SyntheticCorpus", "generate"]

_CONSONANTS = list("bdfgklmnprstvz")
_VOWELS = list("aeiou")
#: Documents per topic (on average).
_DOCS_PER_TOPIC = 100
_TOPIC_WORDS = 40


@dataclass
class SyntheticCorpus:
    articles: list[Article]
    questions: list[Question]
    vocabulary: int
    topics: int


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """`size` distinct pseudo-words of 2 to 4 consonant-vowel syllables and a final consonant."""
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.integers(2, 5)
        cons = rng.choice(_CONSONANTS, size=syllables + 1)
        vows = rng.choice(_VOWELS, size=syllables)
        word = "".join(c + v for c, v in zip(cons[:-1], vows)) + cons[-1]
        words.setdefault(word, None)
    return list(words)


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def generate(
    *, docs: int,
    questions: int,
    dimension: int = 384,
    seed: int = 7,
    vocabulary: int | None = None,
    common_words: tuple[int, int] = (0, 1),
) -> SyntheticCorpus:
    """`docs` documents and `questions` labelled questions, the same for the same arguments."""
    if docs < 10 or questions < 1:
        raise ValueError("need at least 10 documents and 1 question")
    rng = np.random.default_rng(seed)
    vocab_size = vocabulary or max(2_000, min(40_000, docs * 2))
    vocab = _vocabulary(rng, vocab_size)
    ranks = np.arange(vocab_size)
    zipf = 1.0 / (ranks + 2.7) ** 1.07
    zipf /= zipf.sum()
    rare_from = min(300, vocab_size // 10)  # words past this rank count as "rare" for questions

    topics = max(2, docs // _DOCS_PER_TOPIC)
    centres = _unit(rng.standard_normal((topics, dimension)))
    topic_words = rng.integers(rare_from, vocab_size, size=(topics, _TOPIC_WORDS))

    doc_topic = rng.integers(0, topics, size=docs)
    lengths = rng.integers(100, 201, size=docs)
    noise = rng.standard_normal((docs, dimension)) / np.sqrt(dimension)
    doc_vectors = _unit(centres[doc_topic] + 0.9 * noise)
    doc_terms: list[np.ndarray] = []
    articles: list[Article] = []
    width = len(str(docs))
    for i in range(docs):
        n = int(lengths[i])
        n_topic = round(0.15 * n)
        terms = np.concatenate([
            rng.choice(topic_words[doc_topic[i]], size=n_topic),
            rng.choice(vocab_size, size=n - n_topic, p=zipf),
        ])
        rng.shuffle(terms)
        doc_terms.append(terms)
        articles.append(Article(
            id=f"d{i:0{width}d}",
            title=" ".join(vocab[t] for t in terms[:6]),
            content=" ".join(vocab[t] for t in terms),
            embedding=doc_vectors[i].tolist(),
        ))

    by_topic = [np.flatnonzero(doc_topic == t) for t in range(topics)]
    usable = [t for t in range(topics) if len(by_topic[t]) >= 1]
    q_width = len(str(questions))
    golden: list[Question] = []
    for j in range(questions):
        topic = usable[int(rng.integers(0, len(usable)))]
        members = by_topic[topic]
        count = min(int(rng.integers(1, 6)), len(members))
        labels = rng.choice(members, size=count, replace=False)
        vector = _unit(doc_vectors[labels].mean(axis=0)
                       + 0.6 * rng.standard_normal(dimension) / np.sqrt(dimension))
        words: list[int] = []
        for d in labels:
            rare = doc_terms[d][doc_terms[d] >= rare_from]
            if len(rare):
                words.extend(rng.choice(rare, size=min(len(rare), int(rng.integers(1, 4))), replace=False).tolist())
        words.append(int(rng.choice(topic_words[topic])))
        words.extend(rng.choice(vocab_size, size=int(rng.integers(common_words[0], common_words[1] + 1)), p=zipf).tolist())
        order = rng.permutation(len(words))
        golden.append(Question(
            id=f"q{j:0{q_width}d}",
            text=" ".join(vocab[words[k]] for k in order),
            embedding=vector.tolist(),
            relevant=[articles[d].id for d in labels],
            grades=[float(g) for g in rng.integers(1, 4, size=count)],
            source="synthetic",
        ))
    return SyntheticCorpus(articles=articles, questions=golden, vocabulary=vocab_size, topics=topics)
