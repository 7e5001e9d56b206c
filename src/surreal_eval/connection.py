"""The one module that owns the database connection and turns engine errors into ours."""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from typing import Any, Iterator

from surrealdb import RecordID, Surreal
from surrealdb.errors import (
    ConnectionUnavailableError,
    NotAllowedError,
    SurrealError,
    ThrownError,
    TransportError,
    UnsupportedEngineError,
)

from .errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    QueryFailed,
    Rejected,
    StoreBusy,
)
from .settings import Settings

__all__ = ["Database", "connect", "record_str", "to_record"]

log = logging.getLogger(__name__)

_FIELD_RULE = re.compile(
    r"Found (?P<value>.*) for field `(?P<field>[^`]+)`, with record `(?P<record>[^`]+)`, but field must conform to: (?P<rule>.*)",
    re.S,
)
_THROWN_PREFIX = "An error occurred: "


def record_str(value: Any) -> str:
    """A record id as a plain `table:id` string (the form used in JSON output and files)."""
    if isinstance(value, RecordID):
        return f"{value.table_name}:{value.id}"
    return str(value)


def to_record(value: str | RecordID, table: str) -> RecordID:
    """`table:id` or a bare id as a RecordID of `table`; a prefix naming another table is kept as id text."""
    if isinstance(value, RecordID):
        return value
    prefix, sep, rest = value.partition(":")
    if sep and prefix == table:
        value = rest
    return RecordID(table, value)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def translate(error: SurrealError, settings: Settings | None = None) -> Exception:
    """Our exception for an SDK error, with a one-line message that says what to do."""
    message = _one_line(str(error))
    where = settings.describe() if settings else "the database"
    if isinstance(error, ConnectionUnavailableError) and "already locked" in message:
        return StoreBusy(
            f"the store {settings.url if settings else ''} is open in another process; "
            "close that process, or use another --url (mem:// for a throwaway store)"
        )
    if isinstance(error, UnsupportedEngineError):
        return ConfigError(f"cannot use --url {settings.url if settings else ''!r}: {message}")
    if isinstance(error, (ConnectionUnavailableError, TransportError)):
        return ConnectionFailed(f"cannot reach {where}: {message}")
    if isinstance(error, NotAllowedError) and "authentication" in message.lower():
        return AuthenticationFailed(
            f"{where} refused the credentials: check SURREAL_EVAL_USER and SURREAL_EVAL_PASS"
        )
    if isinstance(error, ThrownError):
        return Rejected(message.removeprefix(_THROWN_PREFIX))
    found = _FIELD_RULE.search(message)
    if found:
        return Rejected(
            f"{found['record']}: field `{found['field']}` rejected {found['value']}"
            f" (it must satisfy: {found['rule']})"
        )
    if "Cannot delete" in message or "already exists" in message:
        return Rejected(message)
    return QueryFailed(message)


class Database:
    """An open connection to one namespace and database. Values always travel as parameters."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self.settings = settings

    def query(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        """Run SurrealQL text; the result of each statement, in order. Errors become ours."""
        try:
            return self._client.query(sql, params or {}).execute()
        except SurrealError as error:
            raise translate(error, self.settings) from error

    def value(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """Run SurrealQL text and return the last statement's result."""
        results = self.query(sql, params)
        return results[-1] if results else None

    def close(self) -> None:
        try:
            self._client.close()
        except SurrealError:  # closing a connection that already failed is not an error
            log.debug("close failed", exc_info=True)

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(settings: Settings) -> Database:
    """Open the database that `settings` names, sign in if a user is given, and select ns/db."""
    log.debug("connecting to %s", settings.describe())
    try:
        client = Surreal(settings.url)
    except SurrealError as error:
        raise translate(error, settings) from error
    try:
        if settings.user:
            password = settings.password.get_secret_value() if settings.password else ""
            client.signin({"username": settings.user, "password": password})
        client.use(settings.namespace, settings.database)
    except SurrealError as error:
        try:
            client.close()
        except SurrealError:
            pass
        raise translate(error, settings) from error
    return Database(client, settings)


@contextmanager
def connected(settings: Settings) -> Iterator[Database]:
    """`connect` as a context manager that always closes."""
    db = connect(settings)
    try:
        yield db
    finally:
        db.close()
