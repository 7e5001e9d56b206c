"""What every embedder is (the `Embedder` protocol) and the checks every embedder applies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..errors import EmbeddingFailed

__all__ = ["Embedder", "LearntDimension", "Progress", "check_texts", "dimension_of", "one_line"]

#: Called after each batch with the number of texts embedded so far (of this call).
Progress = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors of one dimension."""

    name: str

    @property
    def dimension(self) -> int | None:
        """Length of every vector, known once the first vectors came back; None before."""
        ...

    def embed(self, texts: list[str], *, progress: Progress | None = None) -> list[list[float]]:
        """One vector per text, in the order of `texts`."""
        ...


def check_texts(texts: list[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a list of texts, not one string")
    return list(texts)


def dimension_of(vectors: list[list[float]], known: int | None, where: str) -> int | None:
    """The one length of `vectors`, which must equal `known` (the dimension seen so far) if set."""
    lengths = sorted({len(v) for v in vectors})
    if len(lengths) > 1:
        raise EmbeddingFailed(f"{where} returned vectors of different dimensions ({', '.join(map(str, lengths))})")
    if not lengths:
        return known
    if lengths[0] == 0:
        raise EmbeddingFailed(f"{where} returned empty vectors")
    if known is not None and known != lengths[0]:
        raise EmbeddingFailed(f"{where} returned vectors of dimension {lengths[0]} after earlier ones of {known}")
    return lengths[0]


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class LearntDimension:
    """The `dimension` of an embedder that learns it from the first vectors it returns."""

    _dimension: int | None = None

    @property
    def dimension(self) -> int | None:
        return self._dimension
