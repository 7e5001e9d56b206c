"""The demo's database: the one a reader of the lesson has built (surql/lesson.surql: tables `article` and
`question`, analyzer `english`, the lesson's functions, `eval_run`), with what the demo adds to it
(surql/seed.surql: a category per question and graded labels), and the harness beside it: `article`
attached as a corpus and `question` as a golden set, both in place. The harness's own tables stay empty.

The demo creates the reader's names, so it refuses a database that already holds any of them and that
it did not seed (a reader's real database): it never redefines what is not its own.
"""

from __future__ import annotations

from ..errors import ConfigError, InputError
from ..store.connection import Database
from ..store.ownership import conflicts, defined_names
from ..store.schema import DEMO_DIMENSION, apply, harness_config, stored_dimension, surql_dir
from ..load.attach import attach_table
from .attach import attach_golden

__all__ = ["LESSON_SCRIPT", "SEED_SCRIPT", "import_lesson", "import_seed", "refuse_a_readers_database", "refuse_another_dimension"]

LESSON_SCRIPT = "lesson"
SEED_SCRIPT = "seed"
#: Where the harness notes that this database's lesson tables are the demo's (so `init --demo` may run again).
_SEEDED = "seval_config:demo"


def _read(name: str) -> str:
    return (surql_dir() / f"{name}.surql").read_text(encoding="utf-8")


def import_lesson(db: Database) -> None:
    """Build the lesson reader's database (surql/lesson.surql) in `db`, as the lesson builds it."""
    apply(db, _read(LESSON_SCRIPT))


def refuse_a_readers_database(db: Database) -> None:
    """An InputError when `db` holds any of the lesson's names and the demo did not put them there (a
    reader's own database): the demo would redefine them."""
    tables = db.value("INFO FOR DB")["tables"]
    if "seval_config" in tables and db.value(f"RETURN record::exists({_SEEDED})"):
        return
    names = [n for n in defined_names([_read(LESSON_SCRIPT)]) if not n[1].startswith("seval")]
    taken = conflicts(db, names)
    if taken:
        listed = ", ".join(f"{kind} {'fn::' if kind == 'function' else ''}{name}" for kind, name in taken)
        raise InputError(f"the demo builds the lesson's database, and this one already holds {listed}: "
                         f"run the demo in another database (--db) or namespace; nothing was changed")


def refuse_another_dimension(db: Database, dimension: int | None = None) -> None:
    """A ConfigError, before anything is changed, when the demo cannot go into `db` at that dimension: its
    articles and questions carry DEMO_DIMENSION-d embeddings, so `dimension` (--dimension) must be that
    or None, and the embeddings `db` already stores must be of that dimension."""
    demo = f"the demo's articles and questions carry {DEMO_DIMENSION}-d embeddings"
    elsewhere = ("run `init --demo` in another database (--db demo) or store (--url surrealkv://demo.db), "
                 "or `surreal-eval demo` for a throwaway one; nothing was changed")
    if dimension is not None and dimension != DEMO_DIMENSION:
        raise ConfigError(f"--dimension {dimension} cannot apply to the demo: {demo}; leave --dimension out, or {elsewhere}")
    stored = stored_dimension(db) if harness_config(db) is not None else None
    if stored and stored != DEMO_DIMENSION:
        raise ConfigError(f"{demo} and this database holds {stored}-d ones: {elsewhere}")


def import_seed(db: Database) -> None:
    """The demo: the lesson reader's database and the demo's additions, with `article` attached as a
    corpus and `question` attached as a golden set (grades and category read from the demo's fields).
    Needs the harness imported with dimension 4; refuses a database holding any of the lesson's names
    that an earlier `import_seed` did not create."""
    config = harness_config(db)
    if config is None or config.dimension != DEMO_DIMENSION:
        got = "no harness" if config is None else f"dimension {config.dimension}"
        raise ConfigError(f"the demo needs the harness imported with dimension {DEMO_DIMENSION}, found {got}: "
                          f"run it in a new database (`surreal-eval demo` uses a throwaway one)")
    refuse_a_readers_database(db)
    import_lesson(db)
    apply(db, _read(SEED_SCRIPT) + f"\nIF !record::exists({_SEEDED}) {{ CREATE {_SEEDED} CONTENT {{ seeded_at: time::now() }} RETURN NONE }};")
    # BM25 on content alone, as the lesson's own retrievers search it (its index covers content)
    attach_table(db, "article", content="content", embedding="embedding", title="title", bm25_fields=["content"])
    attach_golden(db, "question", text="text", relevant="relevant", embedding="embedding", grades="grades",
                  category="category")
