"""Prompt templates for the chat model (`golden generate`, `golden judge`): the ones shipped in prompts/, a user's
own checked for the places its values go, and a template filled."""

from __future__ import annotations

import re
from importlib import resources

from ..errors import InputError

__all__ = ["fill", "require", "shipped"]


def shipped(name: str) -> str:
    """The template prompts/`name`.txt shipped with the package."""
    return resources.files("surreal_eval").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8")


def require(template: str, places: dict[str, str]) -> str:
    """`template`, refused (InputError) unless it holds every {name} of `places` (name -> what goes there)."""
    missing = [name for name in places if f"{{{name}}}" not in template]
    if missing:
        raise InputError(f"the prompt must hold {' and '.join(f'{{{m}}}' for m in missing)}, where "
                         f"{' and '.join(places[m] for m in missing)} go{'es' if len(missing) == 1 else ''}")
    return template


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with each {name} of `values` replaced, in one pass (a value holding "{title}" stays as it is)."""
    if not values:
        return template
    return re.sub(r"\{(" + "|".join(map(re.escape, values)) + r")\}", lambda m: values[m[1]], template)
