"""The SurrealDB SDK this harness runs on: 3.x (the embedded SurrealDB 3 engine), refused in one line otherwise.

langchain-surrealdb 0.2.1 pins the 1.x SDK (for SurrealDB 2.x); installed into the same environment it replaces the
3.x SDK, and the harness's first query would fail in the SDK's own words. The version is read from the installed
package's metadata when the SDK fails to import (store/connection.py).
"""

from __future__ import annotations

from functools import cache

from ..errors import ConnectionFailed

#: The SDK release the harness is built and tested on (pyproject.toml pins it).
PINNED = "3.0.0b10"


def sdk_problem(installed: str | None) -> str | None:
    """The one-line refusal for SDK version `installed` (None: not installed), or None when it is a 3.x release."""
    if installed is not None and installed.split(".", 1)[0] == "3":
        return None
    found = "no surrealdb SDK is installed" if installed is None else f"the surrealdb SDK installed is {installed}"
    return (f"surreal-eval needs the surrealdb SDK 3 ({PINNED}, SurrealDB 3), but {found} (langchain-surrealdb 0.2 pins 1.x): "
            f"install surreal-eval in an environment of its own (docs/own-database.md#langchain-surrealdb)")


@cache
def _installed() -> str | None:
    """The installed surrealdb SDK's version, from its package metadata (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # about 10 ms: only when the SDK failed to import

    try:
        return version("surrealdb")
    except PackageNotFoundError:
        return None


def require_sdk() -> None:
    """Refuse, in one line (exit 3), an environment whose surrealdb SDK is not a 3.x release."""
    problem = sdk_problem(_installed())
    if problem:
        raise ConnectionFailed(problem)

