"""What `--url` may be, checked before anything is opened: a bad URL is one line (ConfigError, exit 2)
that says what is wrong, the forms accepted and, for a likely typo, the URL meant."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError

__all__ = ["ACCEPTED", "EMBEDDED_SCHEMES", "STORE_SCHEMES", "check_url", "store_folder", "embedded_engine_installed"]

#: The forms `--url` accepts, as every refusal lists them.
ACCEPTED = "mem://, surrealkv://PATH, ws://HOST:PORT, wss://HOST:PORT, http://HOST:PORT or https://HOST:PORT"
#: Schemes of a store on disk, opened by the embedded engine (file:// is the SDK's other name for surrealkv://).
STORE_SCHEMES = frozenset({"surrealkv", "surrealkv+versioned", "file"})
#: Schemes the embedded engine opens in this process.
EMBEDDED_SCHEMES = STORE_SCHEMES | {"mem", "memory"}
#: Schemes of a SurrealDB server.
SERVER_SCHEMES = frozenset({"ws", "wss", "http", "https"})
#: Engines a SurrealDB server can run on but the SDK's embedded engine cannot open.
SERVER_ONLY = frozenset({"rocksdb", "tikv", "fdb", "indxdb"})
_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+:\d+(/.*)?$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def embedded_engine_installed() -> bool:
    """True when the SDK's embedded engine (the `embedded` extra) can be imported."""
    try:
        import surrealdb.connections.async_embedded  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def _refuse(url: str, what: str, meant: str | None = None) -> ConfigError:
    hint = f"; did you mean {meant}?" if meant else ""
    return ConfigError(f"--url {url!r} {what}{hint} (accepted: {ACCEPTED})")


def _without_scheme(url: str) -> ConfigError:
    """The refusal of a URL without `://`: a scheme with one slash or none, a host and port, or a path."""
    scheme = _SCHEME.match(url)
    name = scheme[1].lower() if scheme and len(scheme[1]) > 1 else None  # `C:` is a Windows drive, not a scheme
    if name in STORE_SCHEMES or name in SERVER_SCHEMES or name in SERVER_ONLY:
        rest = url[len(name) + 1:].lstrip("/") if name in SERVER_SCHEMES else url[len(name) + 1:]
        fixed = "surrealkv" if name in SERVER_ONLY else name
        return _refuse(url, f"needs '//' after '{name}:'", f"{fixed}://{rest}")
    if name in {"mem", "memory"}:
        return _refuse(url, "is not a URL", "mem://")
    if _HOST_PORT.match(url):
        return _refuse(url, "has no scheme", f"ws://{url} (a server) or surrealkv://{url} (a store on disk)")
    return _refuse(url, "is a path, not a URL", f"surrealkv://{url}")


def check_url(url: str) -> None:
    """Raise ConfigError, one line, unless `url` is a form the SDK opens (see ACCEPTED); say "pip install
    surrealdb[embedded]" only when an embedded URL is right but the embedded engine cannot be imported."""
    if not url.strip():
        raise _refuse(url, "is empty", "surrealkv://surreal-eval.db (the default store)")
    if url == "memory":  # the SDK's bare spelling of mem://
        scheme, rest = "memory", ""
    elif "://" not in url:
        raise _without_scheme(url)
    else:
        scheme, rest = url.split("://", 1)
    if scheme != scheme.lower() and scheme.lower() in EMBEDDED_SCHEMES | SERVER_SCHEMES:
        raise _refuse(url, "has its scheme in capitals", f"{scheme.lower()}://{rest}")
    if scheme in SERVER_ONLY:
        raise _refuse(url, f"names a {scheme} store, which only a SurrealDB server opens (start one on it and use "
                           "ws://HOST:PORT); the embedded engine opens surrealkv://PATH")
    if scheme not in EMBEDDED_SCHEMES | SERVER_SCHEMES:
        raise _refuse(url, f"has a scheme SurrealDB does not speak ({scheme}://)")
    if scheme in STORE_SCHEMES and not rest.split("?", 1)[0]:
        raise _refuse(url, "names no folder", f"{scheme}://surreal-eval.db (the default store)")
    if scheme in SERVER_SCHEMES and not rest.split("/", 1)[0]:
        raise _refuse(url, "names no host", f"{scheme}://localhost:8000")
    if scheme in EMBEDDED_SCHEMES and not embedded_engine_installed():
        raise ConfigError(f"--url {url!r} needs the SDK's embedded engine, which is not installed: "
                          "pip install 'surrealdb[embedded]', or use a server (ws://HOST:PORT)")


def store_folder(url: str) -> Path | None:
    """The folder of an embedded store on disk (surrealkv://PATH), None for mem:// and servers."""
    scheme, _, rest = url.partition("://")
    path = rest.split("?", 1)[0]
    return Path(path) if scheme in STORE_SCHEMES and path else None
