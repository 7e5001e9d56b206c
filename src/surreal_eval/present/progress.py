"""Progress of a load or an evaluation on stderr: a rich display on a terminal, plain lines when piped."""

from __future__ import annotations

import threading
import time
from typing import Optional

from .app import err, plain

__all__ = ["Progress"]

#: Nothing is shown before a load or an evaluation has run this long.
DELAY = 1.0
#: When piped, a line at most this often for a step whose total is unknown...
EVERY = 10.0
#: ...and, for a step whose total is known, also each time another tenth of it is done.
TENTH = 0.1


class Progress:
    """Progress of a load or an evaluation on stderr, once it has run 1 s: on a terminal a rich
    display; piped (not a terminal), a plain line (`staging documents: 500`, `evaluating: 38/76`)
    every 10 % of a known total or every 10 s, so that a log shows a long load is alive."""

    def __init__(self) -> None:
        self._bar = None
        self._tasks: dict[str, object] = {}
        self._timer: threading.Timer | None = None
        self._closed = False
        self._started = time.monotonic()
        self._lines: dict[str, tuple[float, int]] = {}  # piped: per step, when its last line was printed and its count
        if err.is_terminal:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 TimeElapsedColumn(), console=err, transient=True)
            self._timer = threading.Timer(DELAY, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        if not self._closed and self._bar is not None:
            self._bar.start()

    def __call__(self, step: str, done: int, total: Optional[int]) -> None:
        if self._bar is None:
            self._line(step, done, total)
            return
        task = self._tasks.get(step)
        if task is None:
            for earlier in self._tasks.values():  # a new step: the ones before it are finished
                finished = self._bar.tasks[earlier].completed  # type: ignore[index]
                self._bar.update(earlier, total=finished or 1, completed=finished or 1)  # type: ignore[arg-type]
            task = self._tasks[step] = self._bar.add_task(step, total=total)
        counted = f"{step} ({done:,})" if total != 1 else step  # rows so far, for the batched steps
        self._bar.update(task, completed=done, total=total, description=counted)  # type: ignore[arg-type]

    def _line(self, step: str, done: int, total: Optional[int]) -> None:
        """Piped: a plain line when this step is worth reporting again (see the class)."""
        now = time.monotonic()
        if self._closed or now - self._started < DELAY or done <= 0 or total == 1:
            return
        last = self._lines.get(step)
        if last is not None:
            when, shown = last
            grown = total is not None and total > 0 and done - shown >= TENTH * total
            if done == shown or not (grown or now - when >= EVERY):
                return
        self._lines[step] = (now, done)
        plain(err, f"{step}: {done:,}/{total:,}" if total else f"{step}: {done:,}")

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self._bar is not None:
            self._bar.stop()
