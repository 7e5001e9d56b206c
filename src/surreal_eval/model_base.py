"""The base of every pydantic model of the package."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Model"]


class Model(BaseModel):
    """A pydantic model whose validator and serializer are built when it is first used, not when its module is
    imported: a command imports some ninety models and uses a few (building them all cost about 50 ms of every
    command's start)."""

    model_config = ConfigDict(defer_build=True)
