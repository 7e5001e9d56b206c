"""Split a corpus table's documents into a chunk table, each chunk embedded and tied to its document."""

from __future__ import annotations

from typing import Callable, Iterator

from ..store.connection import Database, record_str
from ..errors import ConfigError
from ..store.schema import DOCUMENTS, corpus_tables, harness_table, identifier
from ..models import Article

__all__ = ["split_words", "chunk_documents", "chunk_corpus"]

_PAGE = """
SELECT id, title, content, doc ?? id AS doc FROM type::table($source) ORDER BY id LIMIT $limit START $start
"""
#: A page of an attached table, read through the fields its corpus_table row names.
_ATTACHED_PAGE = """
LET $c = type::record('seval_corpus', $source);
SELECT id, IF $c.title { type::field($c.title) } ELSE { '' } AS title, type::field($c.content) AS content, id AS doc
    FROM type::table($source) ORDER BY id LIMIT $limit START $start
"""


def split_words(text: str, size: int, overlap: int) -> list[str]:
    """`text` cut into windows of `size` words, each starting `size - overlap` words after the last.

    Whitespace is normalised to single spaces; an empty text gives one empty chunk (it stays in the
    corpus, as the document did); the last window may be shorter.
    """
    if size < 1:
        raise ConfigError(f"--size must be at least 1 word, got {size}")
    if not 0 <= overlap < size:
        raise ConfigError(f"--overlap must be at least 0 and below --size ({size}), got {overlap}")
    words = text.split()
    if not words:
        return [""]
    step = size - overlap
    starts = range(0, max(len(words) - overlap, 1), step)
    return [" ".join(words[s : s + size]) for s in starts]


def _attached(db: Database, source: str) -> bool:
    return bool(db.value("RETURN type::record('seval_corpus', $t).attached ?? false", {"t": source}))


def chunk_documents(db: Database, source: str, size: int, overlap: int, *, page: int = 200) -> Iterator[dict]:
    """Every chunk of every record of `source`, page by page, as {id, title, content, doc, position}."""
    start = 0
    attached = _attached(db, source)
    while True:
        rows = db.value(_ATTACHED_PAGE if attached else _PAGE, {"source": source, "limit": page, "start": start})
        if not rows:
            return
        for row in rows:
            doc = row["doc"]
            for position, text in enumerate(split_words(row["content"] or "", size, overlap)):
                yield {
                    "id": f"{doc.id}#{position}",
                    "title": row["title"] or "",
                    "content": text,
                    "doc": record_str(doc),
                    "position": position,
                }
        start += page


def chunk_corpus(
    db: Database,
    *,
    source: str = DOCUMENTS,
    target: str,
    size: int,
    overlap: int = 0,
    embedder,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
):
    """Cut `source`'s documents into chunk table `target`, embed every chunk, and bulk-load it.

    Returns the ingest's LoadReport. The table's seval_corpus row records the chunking (source, unit
    'words', size, overlap), which every run on it copies into its params. The chunk table is (re)defined like `article`, its rows tied to
    their documents by `doc`, so document labels and quote labels both work on it. An attached
    `source` is read through its own fields, and labels naming its records score its chunks.
    """
    from .bulk import load_corpus  # the bulk loader

    identifier(source, what="--corpus table")
    harness_table(target, what="--into table")
    if target == DOCUMENTS or target == source:
        raise ConfigError(f"--into {target} would overwrite the documents: choose a new chunk table name")
    known = corpus_tables(db)
    if source not in known:
        raise ConfigError(f"--from {source} is not a corpus table: known are {', '.join(known)}")

    def embedded() -> Iterator[Article]:
        batch: list[dict] = []
        for chunk in chunk_documents(db, source, size, overlap):
            batch.append(chunk)
            if len(batch) >= batch_size:
                yield from _embed(batch)
                batch = []
        if batch:
            yield from _embed(batch)

    def _embed(batch: list[dict]) -> Iterator[Article]:
        vectors = embedder.embed([c["content"] or c["title"] for c in batch])
        for chunk, vector in zip(batch, vectors, strict=True):
            yield Article(**chunk, embedding=vector)
        if progress:
            progress(len(batch))

    report = load_corpus(db, embedded(), table=target, doc_table=source if _attached(db, source) else DOCUMENTS)
    # a run on the chunk table records how it was cut (fn::seval::with_chunking)
    db.query("RETURN fn::seval::record_chunking($t, $c)",
             {"t": target, "c": {"source": source, "unit": "words", "size": size, "overlap": overlap}})
    return report
