"""The package's layout is its architecture: layers as sub-packages, each importing only from below."""

from __future__ import annotations

import ast
from pathlib import Path

import surreal_eval

PACKAGE = Path(surreal_eval.__file__).parent
#: Layers from the bottom up; a module may import from its own layer and the layers below it.
LAYERS = ("base", "store", "load", "golden", "runs", "analysis", "present", "top")
BASE = {"errors", "model_base", "models", "stats", "grammar", "kappa"}
#: Longest module, in lines.
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def layer(module: str) -> str:
    head = module.split(".")[0]
    if head in BASE:
        return "base"
    if head in LAYERS:
        return head
    return "top"  # the package's __init__ (the public API) and __main__


def imports(path: Path) -> set[str]:
    """The package modules `path` imports (relative imports resolved), at any depth in the file."""
    own = module_name(path).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = [a.name for a in node.names]
            for name in names if not node.module else [None]:
                candidate = [*target, name] if name else target
                dotted = ".".join(candidate)
                found.add(dotted if (PACKAGE / Path(*candidate)).with_suffix(".py").exists() or
                          (PACKAGE / Path(*candidate)).is_dir() else ".".join(target))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("surreal_eval"):
            found.add(node.module.removeprefix("surreal_eval").lstrip(".") or "__init__")
    return {f for f in found if f}


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def test_no_layer_imports_from_a_layer_above_it():
    wrong = [f"{m} ({layer(m)}) imports {i} ({layer(i)})" for m, targets in graph().items() for i in targets
             if LAYERS.index(layer(i)) > LAYERS.index(layer(m))]
    assert wrong == []


def test_the_import_graph_has_no_circle():
    edges = graph()
    state: dict[str, int] = {}
    circles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(nxt_name := node, set())):
            if nxt not in edges or nxt == nxt_name:
                continue
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt):], nxt]) if nxt in path else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_walk_sees_the_imports_it_checks():
    """The checks above would pass on a graph with no edges: these edges must be found."""
    edges = graph()
    assert "store.connection" in edges["store.opening"] and "store.journal" in edges["store.opening"]
    assert "runs.record" in edges["analysis.compare"] and "errors" in edges["store.connection"]
    assert "present.run_tables" in edges["present.commands_runs"]


def test_every_module_is_short_enough_to_read_in_one_sitting():
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_model_of_the_package_is_built_when_first_used_not_when_imported():
    """Every pydantic model of the package derives from model_base.Model (defer_build): a command imports them all and
    uses a few. A model deriving from pydantic's BaseModel directly is named here."""
    import importlib
    import pkgutil

    from pydantic import BaseModel

    from surreal_eval.model_base import Model

    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="surreal_eval."):
        if info.name != "surreal_eval.__main__":  # importing __main__ runs the CLI
            importlib.import_module(info.name)
    found, wrong = [], []
    pending = list(BaseModel.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        if cls.__module__.startswith("surreal_eval.") and cls is not Model:
            found.append(cls)
            if not cls.model_config.get("defer_build") or not issubclass(cls, Model):
                wrong.append(f"{cls.__module__}.{cls.__qualname__}")
    assert len(found) > 80
    assert wrong == []


def test_a_deferred_model_validates_and_serialises_as_it_did():
    from surreal_eval.models import Question

    q = Question.model_validate({"id": "q1", "text": "how do I sign in", "relevant": ["a1"]})
    assert q.model_dump()["relevant"] == ["a1"]
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Question.model_validate({"id": "q1", "text": "x", "relevant": "a1", "bogus": 1})
