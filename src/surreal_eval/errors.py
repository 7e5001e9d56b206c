"""The package's one exception tree. Every error names what is wrong and where.

    SurrealEvalError                 base: the CLI prints str(error) on one line, exits 3
    ├── ConfigError                  a setting or argument is invalid (bad k, identifier, dimension)
    ├── ConnectionFailed             the database cannot be reached or opened          (exit 3)
    │   ├── AuthenticationFailed     the server refused the credentials
    │   └── StoreBusy                another process holds the embedded store, or is loading into it
    ├── InputError                   a file, row or value given to the harness is invalid (exit 2)
    ├── Rejected                     the database refused a write (a constraint or reference)
    ├── NotFound                     a question, article or run that does not exist
    ├── NotComparable                two runs that must not be compared (different golden sets) (exit 2)
    ├── QueryFailed                  any other SurrealQL error, with the engine's message (exit 3)
    ├── EngineCheckFailed            an engine sanity check before a run gave a wrong answer (exit 3)
    ├── EmbeddingFailed              an embedder could not turn texts into vectors       (exit 4)
    ├── EndpointFailed               a search endpoint or reranker failed or answered nonsense (exit 4)
    ├── PermissionDenied             the signed-in user may not do this (an evaluator)  (exit 5)
    └── IngestEvaluationFailed       an evaluation after an ingest failed; the ingest and its records are
                                     kept, the failure recorded on the ingest row    (exit 6)

Exit 1 is kept for "the gate regressed" (and `golden dangling` listing labels); no error exits 1. An interruption (Ctrl-C, KeyboardInterrupt)
exits 130 with one line saying what the interrupted work kept and what it discarded: the notes that
`on_interrupt` adds to the KeyboardInterrupt on its way out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "SurrealEvalError",
    "ConfigError",
    "ConnectionFailed",
    "AuthenticationFailed",
    "StoreBusy",
    "InputError",
    "Rejected",
    "NotFound",
    "NotComparable",
    "QueryFailed",
    "EngineCheckFailed",
    "EmbeddingFailed",
    "EndpointFailed",
    "PermissionDenied",
    "IngestEvaluationFailed",
]


def one_line(text: str) -> str:
    """`text` with every character that is not printable escaped (`\\n`, `\\x00`, `\\u2028`, ...): a
    message naming a hostile id stays one line and cannot drive a terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class SurrealEvalError(Exception):
    """Base of every error this package raises on purpose; its message is always one printable line."""

    #: the process's exit code when this error ends a command (the table in docs/exit-codes.md)
    exit_code = 3

    def __init_subclass__(cls, *, exit_code: int | None = None, **options: object) -> None:
        super().__init_subclass__(**options)
        if exit_code is not None:
            cls.exit_code = exit_code

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(one_line(str(message)), *args)


class ConfigError(SurrealEvalError, exit_code=2):
    """A setting or argument is invalid."""


class ConnectionFailed(SurrealEvalError, exit_code=3):
    """The database could not be reached or opened."""


class AuthenticationFailed(ConnectionFailed):
    """The server refused the user name or password."""


class StoreBusy(ConnectionFailed):
    """Another process has the persistent embedded store open, or is loading into the database."""


class InputError(SurrealEvalError, exit_code=2):
    """Input given to the harness is invalid; the message names the file, line or id."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)
        self.source = source
        self.line = line


class Rejected(SurrealEvalError, exit_code=2):
    """The database refused a write because it breaks a rule of the schema."""


class NotFound(SurrealEvalError, exit_code=2):
    """A record that was asked for does not exist."""


class NotComparable(SurrealEvalError, exit_code=2):
    """Two runs cannot be compared as asked (a gate across different golden sets); the message says how."""


class QueryFailed(SurrealEvalError, exit_code=3):
    """A SurrealQL statement failed for a reason not covered above (a store problem: exit 3)."""


class EngineCheckFailed(SurrealEvalError, exit_code=3):
    """An engine sanity check made before a run is recorded (surql/checks.surql) got a wrong answer:
    the message names the symptom and the engine version; no run was recorded."""


class PermissionDenied(SurrealEvalError, exit_code=5):
    """The signed-in user is not allowed to do this (an evaluator defining, loading or granting)."""


class IngestEvaluationFailed(SurrealEvalError, exit_code=6):
    """The evaluation after one or more ingests failed (`watch drain`, or a watched load): the ingests and the
    records they brought are kept, and each failure is recorded on its ingest row (state failed, error)."""


class EmbeddingFailed(SurrealEvalError, exit_code=4):
    """An embedding endpoint or local model failed; the message names the endpoint and the fix."""

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status


class EndpointFailed(SurrealEvalError, exit_code=4):
    """A search endpoint or reranker (a service the harness calls over HTTP) failed after its retries,
    or answered without the ranking asked for; the message names the endpoint."""

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status


@contextmanager
def on_interrupt(note: str | Callable[[], str | None]) -> Iterator[None]:
    """Add `note` (or what it returns: what the interrupted work kept and what it discarded, in a few words;
    None adds nothing) to a KeyboardInterrupt raised inside. The CLI prints the notes as one line, the
    outermost first (present/cli.py), so each work says only what it knows of itself."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        try:
            said = note() if callable(note) else note
        except Exception:  # noqa: BLE001 - a note that cannot be worked out is left out, never raised instead
            logging.getLogger(__name__).debug("no note for the interruption", exc_info=True)
            said = None
        if said:
            interrupt.add_note(one_line(said))
        raise
