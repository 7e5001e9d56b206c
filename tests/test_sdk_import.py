"""The SDK is imported without its HTTP clients (store/sdk_import.py), which load at their first use."""

from __future__ import annotations

import ast
import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from surreal_eval.store.sdk_import import DEFERRED, FORWARD_REFERENCES

#: The SDK's modules that import the deferred clients, and which of them each imports.
SDK_USERS = {"connections/async_http.py": "aiohttp", "connections/blocking_http.py": "requests"}


def run_python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_sdk_after_the_harness_leaves_its_http_clients_unimported():
    seen = run_python(
        "import json, sys\n"
        "import surreal_eval\n"
        "from surreal_eval import Settings, connect\n"
        "db = connect(Settings(url='mem://'))\n"
        "db.value('RETURN 1')\n"
        "db.close()\n"
        "import inspect, surrealdb\n"
        "loaders = [type(surrealdb.__loader__).__name__, type(surrealdb.__spec__.loader).__name__, 'AsyncSurreal' in inspect.getsource(surrealdb)]\n"
        "print(json.dumps({**{name: name in sys.modules for name in ('aiohttp', 'requests', 'surrealdb')}, 'loaders': loaders}))\n")
    # and the package, once imported, holds its own loader: its source and resources read as usual
    assert seen == {"aiohttp": False, "requests": False, "surrealdb": True, "loaders": ["SourceFileLoader", "SourceFileLoader", True]}


def test_a_deferred_client_is_the_real_module_at_its_first_use():
    seen = run_python(
        "import json, sys\n"
        "import surreal_eval, surrealdb\n"
        "import surrealdb.connections.async_http as http_async\n"
        "import surrealdb.connections.blocking_http as http_blocking\n"
        "timeout = http_async.aiohttp.ClientTimeout\n"
        "error = http_blocking.requests.exceptions.Timeout\n"
        "import aiohttp, requests\n"
        "print(json.dumps({'aiohttp': timeout is aiohttp.ClientTimeout, 'requests': error is requests.exceptions.Timeout,\n"
        "    'real': [type(sys.modules[n]).__name__ for n in ('aiohttp', 'requests')],\n"
        "    'annotation': http_async.AsyncHttpSurrealConnection._request.__annotations__['session']}))\n")
    assert seen == {"aiohttp": True, "requests": True, "real": ["module", "module"], "annotation": "aiohttp.ClientSession"}


def test_the_clients_and_their_submodules_import_as_usual_after_the_sdk():
    seen = run_python(
        "import json, sys\n"
        "import surreal_eval, surrealdb\n"
        "import requests.adapters, aiohttp.web\n"
        "import surrealdb.connections.blocking_http as http_blocking\n"
        "print(json.dumps({'adapters': requests.adapters.HTTPAdapter.__name__, 'web': aiohttp.web.Application.__name__,\n"
        "    'same': http_blocking.requests.Session is requests.Session}))\n")
    assert seen == {"adapters": "HTTPAdapter", "web": "Application", "same": True}


def test_a_client_imported_before_the_sdk_is_the_one_the_sdk_holds():
    seen = run_python(
        "import json, requests\n"
        "import surreal_eval, surrealdb\n"
        "import surrealdb.connections.blocking_http as http_blocking\n"
        "print(json.dumps({'same': http_blocking.requests is requests}))\n")
    assert seen == {"same": True}


class _Refusing(http.server.BaseHTTPRequestHandler):
    """An HTTP server that answers every request 503, as a SurrealDB behind a proxy that is down."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_http_store_is_reached_through_the_deferred_client(refusing_server):
    # the request is made by the real aiohttp, imported at this first use: the server's answer comes back as our error
    done = subprocess.run([sys.executable, "-m", "surreal_eval", "--url", refusing_server, "runs", "list"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"error: cannot reach {refusing_server}") and f"HTTP 503 from {refusing_server}/rpc" in done.stderr


def _read_at_import(tree: ast.Module, client: str) -> list[str]:
    """What module `client` is read for while `tree` runs as a module: outside function bodies, in signatures, decorators."""
    found = []

    def uses(node: ast.AST | None) -> list[str]:
        return [] if node is None else [ast.unparse(n) for n in ast.walk(node)
                                        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == client]

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
                    found.extend(uses(argument.annotation) if argument is not None else [])
                for default in [*arguments.defaults, *arguments.kw_defaults]:
                    found.extend(f"default {u}" for u in uses(default))
                found.extend(uses(node.returns))
                for decorator in node.decorator_list:
                    found.extend(f"decorator {u}" for u in uses(decorator))
            elif isinstance(node, ast.ClassDef):
                for part in [*node.bases, *node.keywords, *node.decorator_list]:
                    found.extend(f"class {u}" for u in uses(part))
                visit(node.body)
            elif not isinstance(node, (ast.Import, ast.ImportFrom)):
                found.extend(f"statement {u}" for u in uses(node))

    visit(tree.body)
    return found


def test_the_installed_sdk_reads_its_http_clients_at_import_only_in_annotations_given_as_forward_references():
    import surrealdb

    package = Path(surrealdb.__file__).parent
    assert set(SDK_USERS.values()) == set(DEFERRED)
    read = {client: _read_at_import(ast.parse((package / path).read_text(encoding="utf-8")), client)
            for path, client in SDK_USERS.items()}
    assert read == {client: sorted(f"{c}.{name}" for c, name in FORWARD_REFERENCES if c == client) for client in DEFERRED}
    # and no other module of the SDK imports them
    others = [str(p.relative_to(package)) for p in package.rglob("*.py") if str(p.relative_to(package)) not in SDK_USERS
              and any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                  (a.name if isinstance(n, ast.Import) else (n.module or "")).split(".")[0] in DEFERRED for a in n.names)
                      for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert others == []
