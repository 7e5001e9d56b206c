"""The event loop the database connection's async SDK client runs on, on a thread of its own, and how
a wait on it ends when the process is interrupted (Ctrl-C)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from typing import Any, Callable, Coroutine, TypeVar

__all__ = ["LoopThread"]

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Seconds between two looks at a signal while waiting: the interpreter runs Python's signal handlers
#: only in the main thread, and only once it runs again (a signal the engine's threads received waits for it).
POLL = 0.1


class LoopThread:
    """An asyncio loop on a daemon thread: the async SDK client lives on it, callers block on results."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="surreal-eval-db", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], *, drop: bool = True, interrupted: Callable[[], None] | None = None,
            meanwhile: Callable[[], None] | None = None) -> T:
        """`coro` run on the loop, waited for. Interrupted (Ctrl-C), nothing is left running behind the caller
        (who may go on to discard a run or undo a load): `interrupted()` is called (it stops what has not
        started) and `coro` is cancelled at once with `drop` (the embedded engine drops a statement in flight,
        uncommitted), else waited for (a server finishes a statement it was sent whatever the client does).
        `meanwhile()` is called in the caller's thread once `coro` is running: Python work the caller needs after it
        (imports, say), done while the engine works on its own threads. Should it fail, the failure is left to the
        caller's own use of that work, which meets it again."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            if meanwhile is not None:
                try:
                    meanwhile()
                except Exception:  # noqa: BLE001 - met again, and raised, where the work is needed
                    log.debug("work done meanwhile failed", exc_info=True)
            while True:  # woken every POLL s: Ctrl-C is raised here even when the signal reached another thread
                try:
                    return future.result(timeout=POLL)
                except concurrent.futures.TimeoutError:
                    continue
        except KeyboardInterrupt:
            if interrupted is not None:
                interrupted()
            if drop:
                future.cancel()
                asyncio.run_coroutine_threadsafe(_settled(), self.loop).result()
            else:
                concurrent.futures.wait([future])
            raise

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


async def _settled() -> None:
    """Return once every other task on the loop has ended (a cancelled one ends at its next await)."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        await asyncio.wait(others)
