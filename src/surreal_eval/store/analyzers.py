"""Which analyzer a corpus table's BM25 index uses (`--analyzer` of init, load and attach --index).

The harness defines two (surql/analyzers.surql): `english` (lowercase, ascii, snowball stems) and
`seval_english_stop` (the same after fn::seval::strip_stopwords removes 127 English stopwords in one regex pass,
from documents and questions alike). Any other name must be an analyzer the user already defined in
the database: it is used as it is, never defined or changed by the harness. A table keeps the
analyzer its index has unless one is chosen; a new table gets DEFAULT_ANALYZER. Each time the harness
defines an index it records every corpus table's analyzer and its checksum (record_analyzers) where
a run reads them (fn::seval::corpus_fingerprint), INFO being closed to an evaluator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .connection import Database
from .defaults import DEFAULT_ANALYZER
from ..errors import InputError

__all__ = ["DEFAULT_ANALYZER", "HARNESS_ANALYZERS", "analyzer_of", "check_analyzer", "index_analyzer", "record_analyzers",
           "table_analyzer"]

#: The analyzers surql/analyzers.surql defines (harness-owned, recorded in harness_object).
HARNESS_ANALYZERS = ("seval_english", "seval_english_stop")
_ANALYZER = re.compile(r"\bFULLTEXT\s+ANALYZER\s+`?(\w+)`?")


def analyzer_of(definition: str | None) -> str | None:
    """The analyzer named by a FULLTEXT index definition (INFO FOR TABLE), None for another index."""
    found = _ANALYZER.search(definition or "")
    return found[1] if found else None


def check_analyzer(db: Database, name: str, *, option: str = "--analyzer") -> str:
    """`name` if the harness defines it or the database holds an analyzer of that name, else an InputError."""
    if name in HARNESS_ANALYZERS:
        return name
    if not isinstance(name, str) or name not in db.value("INFO FOR DB")["analyzers"]:
        raise InputError(f"{option} {name!r}: this database has no analyzer of that name; use "
                         f"{' or '.join(HARNESS_ANALYZERS)}, or define yours first (DEFINE ANALYZER {name} ...)")
    return name


def index_analyzer(db: Database, table: str, tables: Iterable[str] | None = None) -> str | None:
    """The analyzer of corpus table `table`'s BM25 index `<table>_content`, None when there is none (`tables`: the
    database's tables, INFO FOR DB, when the caller has just read them)."""
    if table not in (db.value("INFO FOR DB")["tables"] if tables is None else tables):
        return None
    return analyzer_of(db.value("INFO FOR TABLE $t", {"t": table})["indexes"].get(f"{table}_content"))


def table_analyzer(db: Database, table: str, chosen: str | None = None, tables: Iterable[str] | None = None) -> str:
    """The analyzer `table`'s BM25 index is (re)defined with: `chosen` (checked), else the one its
    index has, else DEFAULT_ANALYZER (`tables`: as index_analyzer's)."""
    if chosen is not None:
        return check_analyzer(db, chosen)
    return index_analyzer(db, table, tables) or DEFAULT_ANALYZER


def record_analyzers(db: Database) -> None:
    """Store each corpus table's analyzer and its checksum in its seval_corpus row (fn::seval::record_corpus_analyzers)."""
    db.query("RETURN fn::seval::record_corpus_analyzers()")
