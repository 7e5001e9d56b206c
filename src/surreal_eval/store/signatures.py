"""How a user's retrieval function's parameters are bound (`retriever add --function fn::F [--arg NAME=VALUE]`).

Each parameter gets one of: the question's text (`text`), its embedding (`embedding`), the depth k
asked for (`k`), or a value given with `--arg NAME=VALUE` (`arg:NAME`, the value kept in the
registry row's `args` and passed as data at every call). The binding is read from the declared
types, `option<...>` of a type binding as the type:

- `string` -> text; `array<float>`, `array<number>`, `array<decimal>`, `array<int>` (a length too) -> embedding; `int` -> k;
- `any` (and, for k, `number`; for the embedding, `array` or `array<any>`): by the parameter's name,
  TEXT_NAMES, EMBEDDING_NAMES or K_NAMES;
- anything else only by `--arg`, which also overrides a type binding.

Two parameters that would get the same value are ambiguous, and a parameter that gets nothing is
unbound: both are refused (InputError) naming the parameter, and so is an `--arg` for a parameter
the function does not have. The function `fn::F($text: string, $embedding: option<array<number>>,
$k: int)` of earlier releases binds as it always did: text, embedding, k.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .schema import identifier
from ..errors import InputError, QueryFailed

__all__ = ["ROLES", "TEXT_NAMES", "EMBEDDING_NAMES", "K_NAMES", "function_parameters", "parse_args",
           "bind_parameters", "describe_binding"]

#: What a parameter can get from the harness, and how each is named in messages.
ROLES = {"text": "the question's text", "embedding": "the question's embedding", "k": "the depth k"}
#: The names that bind an `any` parameter (or a `number` one to k, an untyped array to the embedding).
TEXT_NAMES = ("text", "q", "query", "question")
EMBEDDING_NAMES = ("embedding", "qvec", "vector", "vec")
K_NAMES = ("k", "limit", "top_k", "n")
_BY_NAME = {"text": TEXT_NAMES, "embedding": EMBEDDING_NAMES, "k": K_NAMES}
#: The declared types each role takes by type, and those it takes by name only.
_BY_TYPE = {"string": "text", "int": "k"}
_VECTOR = re.compile(r"^array<(float|number|decimal|int)(,\s*\d+)?>$")
_NAMED_TYPES = {"text": {"any"}, "embedding": {"any", "array", "array<any>"}, "k": {"any", "number"}}
_SIGNATURE = re.compile(r"^DEFINE FUNCTION\s+(?:OVERWRITE\s+|IF NOT EXISTS\s+)?fn::[\w:]+\s*\(")
_PARAMETER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def function_parameters(ddl: str) -> list[tuple[str, str]]:
    """The (name, type) of each parameter of the function defined by `ddl` (an INFO FOR DB entry)."""
    opening = _SIGNATURE.match(ddl)
    if opening is None:
        raise QueryFailed(f"cannot read the parameters of {ddl[:80]!r}")
    depth, start, params = 0, opening.end(), []
    for i in range(opening.end(), len(ddl)):
        ch = ddl[i]
        if ch in "<([":
            depth += 1
        elif ch in ">])" and depth > 0:
            depth -= 1
        elif ch in ",)" and depth == 0:
            if ddl[start:i].strip():
                params.append(ddl[start:i].strip())
            start = i + 1
            if ch == ")":
                break
    return [(p.split(":", 1)[0].strip(), p.split(":", 1)[1].strip() if ":" in p else "any") for p in params]


def parse_args(items: list[str] | None) -> dict[str, Any]:
    """`--arg NAME=VALUE` options as {NAME: value}: VALUE parsed as JSON when it parses (numbers,
    booleans, "strings", arrays, objects; NaN and infinities are not numbers), else the text as given."""
    args: dict[str, Any] = {}
    for item in items or []:
        name, eq, text = item.partition("=")
        name = name.strip().removeprefix("$")
        if not eq or not _PARAMETER.fullmatch(name):
            raise InputError(f"--arg {item!r}: write NAME=VALUE, NAME the function's parameter without $ (e.g. --arg floor=1.5)")
        if name in args:
            raise InputError(f"--arg {name} is given twice")
        args[name] = _value(text)
    return args


def _value(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        value = json.loads(text, parse_constant=refuse)
    except ValueError:
        return text
    return value if not isinstance(value, float) or math.isfinite(value) else text


def _base(declared: str) -> str:
    """A declared type without `none |` / `option<...>`: `none | array<float>` is `array<float>`."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(declared + "|"):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "|" and depth == 0:
            parts.append(declared[start:i].strip())
            start = i + 1
    parts = [p for p in parts if p != "none"]
    base = parts[0] if len(parts) == 1 else declared.strip()
    return base[len("option<"):-1].strip() if base.startswith("option<") and base.endswith(">") else base


def _role(name: str, declared: str) -> str | None:
    """The role parameter `name` of type `declared` takes without --arg, or None."""
    base = _base(declared)
    if base in _BY_TYPE:
        return _BY_TYPE[base]
    if _VECTOR.fullmatch(base):
        return "embedding"
    return next((role for role, names in _BY_NAME.items() if name in names and base in _NAMED_TYPES[role]), None)


def bind_parameters(fn: str, params: list[tuple[str, str]], args: dict[str, Any]) -> list[str]:
    """What each parameter of `fn` gets, in order: 'text', 'embedding', 'k' or 'arg:NAME'; see the module docstring."""
    names = [p.removeprefix("$") for p, _ in params]
    unknown = [a for a in args if a not in names]
    if unknown:
        have = ", ".join(p for p, _ in params) or "none"
        raise InputError(f"--arg {unknown[0]}: {fn} has no parameter ${unknown[0]} (its parameters: {have})")
    binding: list[str] = []
    for name, declared in zip(names, (t for _, t in params)):
        role = None if name in args else _role(name, declared)
        if name in args:  # its name is written into the call (store/schema.py function_call): an identifier
            binding.append("arg:" + identifier(name, what=f"{fn} parameter"))
        elif role is None:
            raise InputError(f"{fn}: parameter ${name}: {declared} is unbound: a string gets the question's text, "
                             f"an array<float> its embedding, an int the depth k; give it with --arg {name}=VALUE")
        elif role in binding:
            other = names[binding.index(role)]
            raise InputError(f"{fn}: parameter ${name} is ambiguous: ${other} already gets {ROLES[role]}; "
                             f"give one of them with --arg (e.g. --arg {name}=VALUE)")
        else:
            binding.append(role)
    return binding


def describe_binding(params: list[str], binding: list[str], args: dict[str, Any]) -> str:
    """The call as registered, e.g. `$q=text, $k=k, $floor=1.5`."""
    return ", ".join(f"${p}={json.dumps(args[b[4:]]) if b.startswith('arg:') else b}" for p, b in zip(params, binding))
