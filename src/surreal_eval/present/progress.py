"""Progress of a load or an evaluation, drawn on stderr with rich."""

from __future__ import annotations

import threading
from typing import Optional

from .app import err

__all__ = ["Progress"]


class Progress:
    """Progress of a load or an evaluation on stderr (rich): only on a terminal, once it has run 1 s."""

    def __init__(self) -> None:
        self._bar = None
        self._tasks: dict[str, object] = {}
        self._timer: threading.Timer | None = None
        self._closed = False
        if err.is_terminal:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 TimeElapsedColumn(), console=err, transient=True)
            self._timer = threading.Timer(1.0, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        if not self._closed and self._bar is not None:
            self._bar.start()

    def __call__(self, step: str, done: int, total: Optional[int]) -> None:
        if self._bar is None:
            return
        task = self._tasks.get(step)
        if task is None:
            for earlier in self._tasks.values():  # a new step: the ones before it are finished
                finished = self._bar.tasks[earlier].completed  # type: ignore[index]
                self._bar.update(earlier, total=finished or 1, completed=finished or 1)  # type: ignore[arg-type]
            task = self._tasks[step] = self._bar.add_task(step, total=total)
        counted = f"{step} ({done:,})" if total != 1 else step  # rows so far, for the batched steps
        self._bar.update(task, completed=done, total=total, description=counted)  # type: ignore[arg-type]

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self._bar is not None:
            self._bar.stop()
