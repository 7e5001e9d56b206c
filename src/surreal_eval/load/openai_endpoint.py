"""The HTTP plumbing shared by the clients of OpenAI-compatible endpoints (embeddings, chat completions).

`OpenAIEndpoint` checks the base URL and the model, reads the API key from the environment (sent as a
bearer token, blanked out of every log line and message), POSTs a JSON body to `{base_url}{path}` over
one httpx client and returns the decoded answer. A 408, 429, 5xx, timeout or broken connection is tried
again (tenacity) up to `max_retries` times, waiting `backoff`, then twice that, and so on, or what a
numeric Retry-After header asks, never more than `max_wait` seconds; any other status than 200, an
answer that is not JSON, or retries exhausted raise the subclass's `failure` (exit 4) naming the
endpoint. A subclass names its `kind` ("embedding", "chat": "chat endpoint ..." in messages), its
`path`, its `failure` class, the message for each refusal (`_refusal`), and builds bodies and reads
answers itself.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any, ClassVar, Self

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from ..errors import ConfigError, EmbeddingFailed, EndpointFailed
from .embedding import one_line

__all__ = ["OPENAI_BASE_URL", "OpenAIEndpoint"]

#: Where `openai:MODEL` without `@BASE_URL` goes.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: Hosts that always ask for an API key: with none set, a request there is not even sent.
KEY_REQUIRED_HOSTS = frozenset({"api.openai.com"})


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


class OpenAIEndpoint:
    """A model at an OpenAI-compatible endpoint: `_send(body)` is the decoded JSON answer of one request."""

    #: names the endpoint and the model in messages: "embedding" -> "embedding endpoint ...", "embedding model ..."
    kind: ClassVar[str]
    #: what is posted to, after the base URL: "/embeddings", "/chat/completions"
    path: ClassVar[str]
    #: what a failure raises (exit 4)
    failure: ClassVar[type[EmbeddingFailed | EndpointFailed]]
    #: a base URL shown as an example when one is not an http(s) URL
    example_url: ClassVar[str]
    #: whether the message refusing an answer that is not JSON names its content type
    names_content_type: ClassVar[bool] = False
    #: where retries are logged (the subclass's module)
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(self, base_url: str, model: str, *, api_key_env: str, timeout: float, max_retries: int,
                 backoff: float, max_wait: float, client: httpx.Client | None) -> None:
        url = base_url.strip().rstrip("/")
        try:
            host = httpx.URL(url).host
        except httpx.InvalidURL:
            host = ""
        if not url.startswith(("http://", "https://")) or not host:
            raise ConfigError(f"{self.kind} endpoint {base_url!r} is not an http(s) URL, e.g. {self.example_url}")
        if not model or model != model.strip():
            raise ConfigError(f"{self.kind} model {model!r} must be a non-empty name")
        self.base_url = url
        self.host = host
        self.model = model
        self.name = f"openai:{model}@{url}"
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._api_key = os.environ.get(api_key_env) or None
        self._client = client
        self._owns_client = client is None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"{type(self).__name__}({self.base_url!r}, {self.model!r}, {self.api_key_env} {key})"

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}{self.path}"

    @property
    def where(self) -> str:
        """How messages name this endpoint: "chat endpoint http://…/v1"."""
        return f"{self.kind} endpoint {self.base_url}"

    def close(self) -> None:
        """Close the HTTP client if this object made it."""
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def missing_key(self) -> str | None:
        """Why no request should be sent (no API key set for a host that always asks for one), or None."""
        if self._api_key or self.host not in KEY_REQUIRED_HOSTS:
            return None
        return f"{self.where} needs an API key and {self.api_key_env} is not set: set it, or name another endpoint"

    def _failed(self, message: str, status: int | None = None) -> EmbeddingFailed | EndpointFailed:
        return self.failure(message, endpoint=self.base_url, status=status)

    def _refusal(self, response: httpx.Response) -> str:
        """A one-line message for an answer other than 200 that no retry will fix."""
        raise NotImplementedError

    # -- one request, with its retries ---------------------------------------------------------------

    def _send(self, body: Any) -> Any:
        """The decoded JSON answer to `body`, retried on what another try may fix."""
        missing = self.missing_key()
        if missing:  # at once: a host that asks for a key answers 401 (or nothing, offline, after every retry)
            raise self._failed(missing)
        retrying = Retrying(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(self.max_retries + 1),
                            wait=self._wait, before_sleep=self._log_retry, reraise=True)
        try:
            return retrying(self._post, body)
        except _Transient as error:
            attempts = self.max_retries + 1
            tried = f"after {attempts} attempts" if attempts > 1 else "(no retries)"
            raise self._failed(f"{self.where} failed {tried}: {error}", error.status) from None

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return min(error.retry_after, self.max_wait)
        return min(self.backoff * 2 ** (state.attempt_number - 1), self.max_wait)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        self.log.warning("%s endpoint %s: %s; retrying in %.2fs (attempt %d of %d)",
                         self.kind, self.base_url, error, wait, state.attempt_number + 1, self.max_retries + 1)

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

    def _post(self, body: Any) -> Any:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = self._http().post(self.endpoint, json=body, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise _Transient(f"no answer within {self.timeout:g}s") from None
        except httpx.TransportError as error:
            raise _Transient(f"cannot be reached ({type(error).__name__}: {self._redact(str(error))})") from None
        status = response.status_code
        if status == 408 or status == 429 or status >= 500:
            raise _Transient(f"{status} {response.reason_phrase}{self._detail(response)}",
                             status=status, retry_after=_retry_after(response))
        if status != 200:
            raise self._failed(self._refusal(response), status)
        try:
            return response.json()
        except ValueError:
            shown = f" ({response.headers.get('content-type', 'no content type')})" if self.names_content_type else ""
            raise self._failed(f"{self.where} answered with something that is not JSON{shown}: "
                               f"{one_line(self._redact(response.text), 80)!r}", status) from None
