"""The one module that owns the database connection and turns engine errors into ours."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import threading
import weakref
from typing import Any, Callable, Coroutine, Sequence, TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from .sdk_version import require_sdk

try:
    from surrealdb import AsyncSurreal, DoneFrame, ErrorFrame, RecordID  # noqa: F401 (RecordID: imported from here by other modules)
    from surrealdb.errors import (
        ConnectionUnavailableError,
        InvalidUrlError,
        NotAllowedError,
        SurrealError,
        ThrownError,
        TransportError,
        UnsupportedEngineError,
    )
except ImportError:  # another SDK than 3.x (langchain-surrealdb pins 1.x): refused in one line, not in the SDK's words
    require_sdk()
    raise

from ..errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    EngineCheckFailed,
    PermissionDenied,
    QueryFailed,
    Rejected,
    StoreBusy,
)
from .local_store import NewStore, entries, foreign_store, new_store, refuse_missing_store, refuse_unusable_folder
from .local_store import undo_failed_open
from .loop import LoopThread
from .record_ids import record_str, to_record
from .settings import Settings
from .statements import one_transaction, retryable
from .urls import ACCEPTED, check_url, store_folder

__all__ = ["Database", "open_database", "record_str", "to_record"]

log = logging.getLogger(__name__)

_FIELD_RULE = re.compile(
    # a record id that is not a plain identifier is shown in backticks: `question:`a b``
    r"Found (?P<value>.*) for field `(?P<field>[^`]+)`, with record `(?P<record>.+?)`, but field must conform to: (?P<rule>.*)",
    re.S,
)
_THROWN_PREFIX = "An error occurred: "
#: How the engine checks' failures begin (surql/checks.surql, fn::check_failed).
ENGINE_CHECK_PREFIX = "engine check failed: "
#: What the engine says when the harness was never imported into this namespace and database.
_MISSING = re.compile(r"The (table '[^']+'|function 'fn::[^']+') does not exist")
#: What the engine says when a harness function of an older release takes other arguments than this one passes.
_ARITY = re.compile(r"Incorrect arguments for function (fn::seval::[A-Za-z0-9_:]+)\(\)\. The function expects")
#: What a transaction's other statements report when one fails (or BEGIN/COMMIT after it).
_NOT_EXECUTED = re.compile(r"not executed due to a (failed|cancelled) transaction|Cannot COMMIT")
#: What the engine says when the signed-in user may not run a statement or a function.
_NOT_PERMITTED = re.compile(r"Not enough permissions|You don't have permission to")


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
    if isinstance(error, (UnsupportedEngineError, InvalidUrlError)):  # check_url refuses most first, saying why
        return ConfigError(f"--url {settings.url if settings else ''!r}: {message} (accepted: {ACCEPTED})")
    if (foreign := foreign_store(settings.url if settings else "", message)) is not None:
        return foreign
    if isinstance(error, (ConnectionUnavailableError, TransportError)):
        if "failed while opening the database" in message:
            return ConnectionFailed(f"cannot open {where}: {message}")
        if "closed before a response" in message or "failed while" in message:  # it was reached, then went
            return ConnectionFailed(f"lost the connection to {where} mid-statement: {message}")
        return ConnectionFailed(f"cannot reach {where}: {message}")
    if isinstance(error, NotAllowedError) and "authentication" in message.lower():
        return AuthenticationFailed(
            f"{where} refused the credentials: check SURREAL_EVAL_USER and SURREAL_EVAL_PASS"
        )
    if _NOT_PERMITTED.search(message):
        return PermissionDenied(f"{where} refused this: {message}; sign in as an owner to do it")
    arity = _ARITY.search(message)
    missing = _MISSING.search(message) or (arity and f"{arity[1]} takes other arguments there")
    if missing:
        return ConfigError(
            f"{where} has no surreal-eval harness, or one older than this surreal-eval "
            f"({missing if isinstance(missing, str) else missing[0]}): run `surreal-eval init` "
            "(again after an upgrade: it adds what is new and keeps your data), or check --url, --ns and --db"
        )
    if isinstance(error, ThrownError):
        thrown = message.removeprefix(_THROWN_PREFIX)
        return EngineCheckFailed(thrown) if thrown.startswith(ENGINE_CHECK_PREFIX) else Rejected(thrown)
    found = _FIELD_RULE.search(message)
    if found:
        return Rejected(
            f"{found['record']}: field `{found['field']}` rejected {found['value']}"
            f" (it must satisfy: {found['rule']})"
        )
    if "Cannot delete" in message or "already exists" in message:
        return Rejected(message)
    return QueryFailed(message)


T = TypeVar("T")


_OPEN: "weakref.WeakSet[Database]" = weakref.WeakSet()


@atexit.register
def _close_open_databases() -> None:
    """Close what is still open at exit: the engine aborts the process if its loop dies mid-flight."""
    for db in list(_OPEN):
        db.close()


class Database:
    """An open connection to one namespace and database. Values always travel as parameters.

    The SDK's async client runs on a private event loop, so `query` blocks like a plain call while `query_many` can keep several
    statements in flight on one connection (the embedded engine then uses both cores; threads over the blocking client do not).
    """

    def __init__(self, client: Any, settings: Settings, loop: LoopThread) -> None:
        self._client = client
        self._loop = loop
        self.settings = settings
        self._closed = False
        #: runs this connection is writing (runs.evaluate): never discarded as stale while they are
        self.live_runs: set[Any] = set()
        #: held while a run is started, so that two threads starting runs see each other's
        self.starting = threading.Lock()
        folder = store_folder(settings.url)
        self._wal = str(folder / "wal") if folder else None
        #: what this open made on disk, if it made a new store (NewStore.remove undoes it after a failed command)
        self.new_store: NewStore | None = None
        self.opened_tables: list[str] | None = None  #: the tables store.opening.connect read and left: valid until another statement
        _OPEN.add(self)

    def flush_if_full(self) -> bool:
        """Let an embedded surrealkv store flush its writes, if it must: True if it was reopened.

        The SDK's async embedded engine opens the store on a runtime it does not keep, so the
        store's background jobs never run, and one of them is surrealkv's memtable flush. Once
        about two memtables of writes are waiting (each ~1 GB on a 24 GB machine, less on a
        smaller one), every write waits forever. Closing the store flushes it, so when a full
        memtable waits (a second write-ahead log file in `<store>/wal`) the store is closed and
        reopened, between two statements. Long writers call this between batches.
        """
        if self._wal is None or self._closed:
            return False
        try:
            waiting = sum(1 for name in os.listdir(self._wal) if name.endswith(".wal")) > 1
        except OSError:
            return False
        if not waiting:
            return False
        log.debug("reopening %s so that it flushes its memtables", self.settings.describe())
        try:
            self._wait(self._client.close())
            self._client = self._wait(_open(self.settings))
        except SurrealError as error:
            raise translate(error, self.settings) from error
        return True

    def _wait(self, coro: Coroutine[Any, Any, T], interrupted: Callable[[], None] | None = None, meanwhile: Callable[[], None] | None = None) -> T:
        """`coro` run on the connection's loop, `meanwhile()` as it runs; interrupted, a statement in flight is dropped (embedded) or finished."""
        return self._loop.run(coro, drop=self.settings.is_embedded, interrupted=interrupted, meanwhile=meanwhile)

    async def _execute(self, sql: str, params: dict[str, Any]) -> list[Any]:
        """One statement text, run again (up to 5 times, a short random wait between) when the engine says its transaction met another's
        write and can be retried: nothing of it was applied. A text of several transactions is not run again (one_transaction): its earlier ones were."""
        attempts = 5 if one_transaction(sql) else 1
        async for attempt in AsyncRetrying(retry=retry_if_exception(retryable), stop=stop_after_attempt(attempts),
                                           wait=wait_random_exponential(multiplier=0.05, max=1), reraise=True):
            with attempt:
                return await self._client.query(sql, params).execute()
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    def query(self, sql: str, params: dict[str, Any] | None = None, *, meanwhile: Callable[[], None] | None = None) -> list[Any]:
        """Run SurrealQL text; the result of each statement, in order. Errors become ours. `meanwhile()`: work done in
        this thread while the engine runs it (LoopThread.run)."""
        try:
            return self._wait(self._execute(sql, params or {}), meanwhile=meanwhile)
        except SurrealError as error:
            raise translate(error, self.settings) from error

    def query_many(
        self,
        calls: Sequence[tuple[str, dict[str, Any]]],
        *,
        concurrency: int = 2,
        progress: Callable[[int], None] | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[list[Any]]:
        """Run several queries with up to `concurrency` in flight; their results in the order given.

        `concurrency` workers take the calls in order, so memory does not grow with their number (one coroutine per call
        held ~4 KB each). `progress` is called with the number of queries finished so far, as each one finishes. After a
        failure no further query starts; the first failure is raised (as ours) once the queries in flight have finished.
        `meanwhile()`: work for after them, done in this thread while the engine runs them (LoopThread.run).
        """
        done = 0
        results: list[Any] = [None] * len(calls)
        failures: list[BaseException] = []
        pending = iter(enumerate(calls))

        async def worker() -> None:
            nonlocal done
            for index, (sql, params) in pending:
                if failures:
                    return
                try:
                    results[index] = await self._execute(sql, params)
                except BaseException as error:  # noqa: BLE001 - raised below, after the others stop
                    failures.append(error)
                    return
                done += 1
                if progress:
                    progress(done)

        async def run_all() -> None:
            await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))

        # interrupted: no further query starts; those in flight are dropped (embedded) or finish (server)
        self._wait(run_all(), interrupted=lambda: failures.append(KeyboardInterrupt()), meanwhile=meanwhile)
        if failures:
            if isinstance(failures[0], SurrealError):
                raise translate(failures[0], self.settings) from failures[0]
            raise failures[0]
        return results

    def atomic(self, sql: str, params: dict[str, Any] | None = None, *, meanwhile: Callable[[], None] | None = None) -> list[Any]:
        """Run `sql` as one transaction (BEGIN and COMMIT are added here): all of it applies, or none (`meanwhile`: as `query`).

        On failure the error is the statement that failed, not the engine's notice that the other
        statements were not executed (which is all `query` could report for a transaction).
        """
        text = f"BEGIN TRANSACTION;\n{sql}\nCOMMIT TRANSACTION;"

        async def frames() -> tuple[dict[int, Any], list[SurrealError]]:
            results: dict[int, Any] = {}
            failures: list[SurrealError] = []
            async with self._client.query(text, params or {}).stream() as stream:
                async for frame in stream:
                    if isinstance(frame, ErrorFrame):
                        failures.append(frame.error)
                    elif isinstance(frame, DoneFrame):
                        results[frame.index] = frame.result.value
            return results, failures

        try:
            results, failures = self._wait(frames(), meanwhile=meanwhile)
        except SurrealError as error:
            raise translate(error, self.settings) from error
        if failures:
            cause = next((e for e in failures if not _NOT_EXECUTED.search(str(e))), failures[0])
            raise translate(cause, self.settings) from cause
        return [results[i] for i in sorted(results)][1:-1]  # without BEGIN's and COMMIT's

    def engine_version(self) -> str:
        """The engine's version as it reports it (`surrealdb-3.2.4`); SurrealQL has no version() function."""
        try:
            return str(self._wait(self._client.version()))
        except SurrealError as error:
            raise translate(error, self.settings) from error

    def value(self, sql: str, params: dict[str, Any] | None = None, *, meanwhile: Callable[[], None] | None = None) -> Any:
        """Run SurrealQL text and return the last statement's result (`meanwhile`: as `query`)."""
        results = self.query(sql, params, meanwhile=meanwhile)
        return results[-1] if results else None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        try:
            self._wait(self._client.close())
        except SurrealError:  # closing a connection that already failed is not an error
            log.debug("close failed", exc_info=True)
        finally:
            self._loop.stop()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _sign_in(client: Any, settings: Settings) -> None:
    """Sign in as a system user (user/password) or through a record access (access, user/password)."""
    password = settings.password.get_secret_value() if settings.password else ""
    try:
        if settings.access:
            await client.signin({
                "namespace": settings.namespace, "database": settings.database, "access": settings.access,
                "variables": {"name": settings.user or "", "pass": password},
            })
        elif settings.user:
            await client.signin({"username": settings.user, "password": password})
    except (ConnectionUnavailableError, TransportError):
        raise
    except SurrealError as error:  # any refusal at sign-in is a credentials problem, said without the secret
        raise AuthenticationFailed(
            f"{settings.describe()} refused the credentials: check SURREAL_EVAL_USER and SURREAL_EVAL_PASS"
            + (f" for access {settings.access}" if settings.access else "")
        ) from error


async def _open(settings: Settings) -> Any:
    require_sdk()  # an SDK whose names import but whose protocol is not 3.x's
    client = AsyncSurreal(settings.url)
    try:
        await client.connect()
        await _sign_in(client, settings)
        await client.use(settings.namespace, settings.database)
    except BaseException:
        try:
            await client.close()
        except SurrealError:
            pass
        raise
    return client


#: Opening a server connection is retried this many times on a connection error (nothing has been
#: sent yet, so a retry is safe); statements are never retried, since they may have been applied.
CONNECT_ATTEMPTS = 3


async def _open_with_retries(settings: Settings) -> Any:
    from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    if settings.is_embedded:  # a local store either opens or says why (locked, bad path): no retry
        return await _open(settings)
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type((ConnectionUnavailableError, TransportError)),
        stop=stop_after_attempt(CONNECT_ATTEMPTS),
        wait=wait_exponential(multiplier=0.2, max=2),
        reraise=True,
    ):
        with attempt:
            return await _open(settings)
    raise AssertionError("unreachable")  # pragma: no cover


def open_database(settings: Settings) -> Database:
    """Open the database that `settings` names, sign in if a user is given, and select ns/db
    (`store.opening.connect` also puts right what a killed load left). A mistyped URL (store.urls), a
    file or a folder of other files, and a store of another engine version (store.local_store) are
    refused in one line (ConfigError); a failed open leaves the store's folder as it was. Unless `settings.create`,
    a store on disk that does not exist yet (a missing path, an empty folder) is refused too, and nothing is made."""
    log.debug("connecting to %s", settings.describe())
    check_url(settings.url)
    folder = store_folder(settings.url)
    if folder is not None:
        refuse_unusable_folder(settings.url, folder)
        if not settings.create:
            refuse_missing_store(settings.url, folder)
    before = entries(folder) if folder is not None else None
    made = new_store(folder) if folder is not None else None
    loop = LoopThread()
    try:
        client = loop.run(_open_with_retries(settings))
    except AuthenticationFailed:
        loop.stop()
        raise
    except SurrealError as error:
        loop.stop()
        if folder is not None:  # put back what the failed open made in the folder (only that)
            log.debug("removed after the failed open of %s: %s", folder, undo_failed_open(folder, before, str(error)))
        raise translate(error, settings) from error
    except BaseException:
        loop.stop()
        raise
    db = Database(client, settings, loop)
    db.new_store = made
    return db
