"""The SurrealDB SDK imported without the HTTP clients it loads for connections a process may never open.

`import surrealdb` (3.0.0b10) imports aiohttp and requests at once for its HTTP connections: about 0.12 s of the
0.2 s the SDK takes, in every command. An embedded store and a ws:// server use neither. While the SDK imports, each
is a stand-in module; at its first use (an http:// connection's first request) the stand-in imports the real module
and hands on what is asked of it. Only the SDK's own modules hold a stand-in: once the SDK is imported, the names are
gone from `sys.modules` again, and anyone else's `import aiohttp` gets the real module.

Only the pinned release is imported this way, for its source was read: it uses aiohttp and requests only inside
functions, except one annotation, `session: aiohttp.ClientSession`, which a stand-in gives as the forward reference
'aiohttp.ClientSession' (as `from __future__ import annotations` would). tests/test_sdk_import.py reads the installed
SDK's source to hold this; any other release, or a client already imported, is imported as it is.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["DEFERRED", "FORWARD_REFERENCES", "defer_http_clients"]

#: The modules the SDK imports for its HTTP connections, left unimported until used.
DEFERRED = ("aiohttp", "requests")
#: The attributes the pinned SDK reads of them while it imports (annotations only), and so given as forward references.
FORWARD_REFERENCES = frozenset({("aiohttp", "ClientSession")})

_importing = threading.local()


class _StandIn(ModuleType):
    """A module the SDK imported, that imports the real one at its first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if getattr(_importing, "sdk", False) and (self.__name__, name) in FORWARD_REFERENCES:
            return f"{self.__name__}.{name}"
        if sys.modules.get(self.__name__) is self:  # used while the SDK imports: the real module from here on
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), name)


class _DeferringLoader(importlib.abc.Loader):
    """The SDK package's own loader, run with stand-ins for the HTTP clients not imported yet."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        standing = [name for name in DEFERRED if name not in sys.modules]
        for name in standing:
            sys.modules[name] = _StandIn(name)
        _importing.sdk = True
        try:
            self._loader.exec_module(module)
        finally:
            _importing.sdk = False
            for name in standing:
                if isinstance(sys.modules.get(name), _StandIn):
                    del sys.modules[name]
            # imported, the package holds its own loader again (its source, its resources, a reload)
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader


class _SdkFinder(importlib.abc.MetaPathFinder):
    """Finds the `surrealdb` package once, as the path finder does, and hands it the deferring loader."""

    def find_spec(self, fullname: str, path: Any, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "surrealdb":
            return None
        from .sdk_version import PINNED  # imported here: `import surreal_eval` need not

        _remove_finder()
        spec = importlib.util.find_spec(fullname)  # by the finders after this one
        if spec is None or spec.loader is None or spec.origin is None:
            return spec
        if not (Path(spec.origin).parent.parent / f"surrealdb-{PINNED}.dist-info").is_dir():
            return spec  # another release: imported as it is
        spec.loader = _DeferringLoader(spec.loader)
        return spec


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _SdkFinder)]


def defer_http_clients() -> None:
    """Import the SDK, when something first imports it, with its HTTP clients deferred (nothing when already imported)."""
    if "surrealdb" in sys.modules or any(isinstance(f, _SdkFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _SdkFinder())
