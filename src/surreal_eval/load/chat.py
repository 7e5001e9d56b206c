"""A chat model over an OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, llama.cpp's
server, Ollama, LiteLLM, …), for the questions `golden generate` writes and the judgments a model makes.

Build one from a spec with `chat_from_spec`, named like the embedders:

    openai:MODEL@BASE_URL   POST {BASE_URL}/chat/completions (BASE_URL defaults to OpenAI's)

or from SURREAL_EVAL_CHAT (`chat_from_env`). The API key is read from SURREAL_EVAL_CHAT_KEY, sent as a
bearer token and never appears in a repr, a log line or an error message.

`answer_all` sends one request per conversation, at most `concurrency` at once (a thread pool over one
httpx client), each with a timeout; a 408, 429, 5xx, timeout or broken connection is tried again
(tenacity, exponential wait, or what a numeric Retry-After asks, never more than `max_wait`). Any other
failure, or retries exhausted, is an EndpointFailed (exit 4) naming the endpoint, and the pending
requests are cancelled.

Answers are cached by content: the sha256 of the endpoint's URL and the request body (model, messages,
temperature; never the key) names a file of the cache folder holding the answer, so a re-run sends no
request. The cache is a folder of the caller's (SURREAL_EVAL_CACHE_DIR, else $XDG_CACHE_HOME/surreal-eval,
else ~/.cache/surreal-eval; `chat/` under it), not a table of the database: an answer received before an
endpoint failure is kept for the next try while the database stays exactly as it was, and a read-only
account (the evaluator) writes nothing to the database by asking a model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from ..errors import ConfigError, EndpointFailed
from .embedders import OPENAI_BASE_URL, _retry_after, _Transient
from .embedding import one_line

__all__ = ["CHAT_ENV", "CHAT_KEY_ENV", "ChatCache", "OpenAIChat", "chat_from_env", "chat_from_spec", "default_cache_dir"]

log = logging.getLogger(__name__)

#: The variable holding a chat model spec, read by `chat_from_env`.
CHAT_ENV = "SURREAL_EVAL_CHAT"
#: The variable holding the chat endpoint's API key.
CHAT_KEY_ENV = "SURREAL_EVAL_CHAT_KEY"
#: The variable naming the folder of the harness's caches on this machine.
CACHE_ENV = "SURREAL_EVAL_CACHE_DIR"
SPEC_FORM = "openai:MODEL@BASE_URL"

#: One conversation: [{"role": "system" | "user" | "assistant", "content": text}, ...]
Messages = list[dict[str, str]]


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """SURREAL_EVAL_CACHE_DIR, else $XDG_CACHE_HOME/surreal-eval, else ~/.cache/surreal-eval."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "surreal-eval"


class ChatCache:
    """Answers by request digest: one small JSON file each under `folder`, written atomically."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        try:
            kept = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        answer = kept.get("answer") if isinstance(kept, dict) else None
        return answer if isinstance(answer, str) else None

    def put(self, key: str, answer: str, model: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as f:
                json.dump({"answer": answer, "model": model}, f)
            os.replace(f.name, path)
        except OSError as error:  # a cache that cannot be written costs a request next time, nothing more
            log.warning("chat cache %s not written: %s", self.folder, error)


class OpenAIChat:
    """A chat model at an OpenAI-compatible endpoint; `answer_all` returns the text of each answer."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = CHAT_KEY_ENV, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5, max_wait: float = 60.0, concurrency: int = 4,
                 temperature: float = 0.0, cache: ChatCache | None = None, client: httpx.Client | None = None) -> None:
        url = base_url.strip().rstrip("/")
        try:
            host = httpx.URL(url).host
        except httpx.InvalidURL:
            host = ""
        if not url.startswith(("http://", "https://")) or not host:
            raise ConfigError(f"chat endpoint {base_url!r} is not an http(s) URL, e.g. http://localhost:8080/v1")
        if not model or model != model.strip():
            raise ConfigError(f"chat model {model!r} must be a non-empty name")
        if not timeout > 0 or max_retries < 0 or backoff < 0 or max_wait < 0:
            raise ConfigError("chat timeout must be positive, and retries, backoff and max wait 0 or more")
        if concurrency < 1:
            raise ConfigError(f"chat concurrency must be at least 1, not {concurrency}")
        self.base_url, self.model, self.name = url, model, f"openai:{model}@{url}"
        self.api_key_env, self.timeout, self.max_retries = api_key_env, timeout, max_retries
        self.backoff, self.max_wait, self.concurrency, self.temperature = backoff, max_wait, concurrency, temperature
        self.cache = cache
        #: requests sent (answers read from the cache are not counted)
        self.sent = 0
        self._api_key = os.environ.get(api_key_env) or None
        self._client = client
        self._owns_client = client is None

    def __repr__(self) -> str:
        return f"OpenAIChat({self.base_url!r}, {self.model!r}, {self.api_key_env} {'set' if self._api_key else 'unset'})"

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "OpenAIChat":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def body(self, messages: Messages) -> dict[str, Any]:
        """The JSON request body for one conversation (what the cache key digests, with the URL)."""
        return {"model": self.model, "messages": messages, "temperature": self.temperature}

    def key(self, messages: Messages) -> str:
        text = json.dumps({"url": self.endpoint, "body": self.body(messages)}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def answer(self, messages: Messages) -> str:
        """The text of the model's answer to one conversation ('' when it has none)."""
        return self.answer_all([messages])[0]

    def answer_all(self, conversations: list[Messages], *, progress: Callable[[int], None] | None = None) -> list[str]:
        """The text of the answer to each conversation, in order: cached ones read, the rest asked,
        at most `concurrency` at once; `progress(n)` after each answer with the number done so far."""
        answers: list[str | None] = [None] * len(conversations)
        keys = [self.key(c) for c in conversations]
        todo = []
        for i, key in enumerate(keys):
            answers[i] = self.cache.get(key) if self.cache is not None else None
            if answers[i] is None:
                todo.append(i)
        done = len(conversations) - len(todo)
        if progress is not None and done:
            progress(done)
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                futures = {i: pool.submit(self._ask_and_keep, conversations[i], keys[i]) for i in todo}
                try:
                    for i, future in futures.items():
                        answers[i] = future.result()
                        done += 1
                        if progress is not None:
                            progress(done)
                except BaseException:
                    for future in futures.values():  # the first failure ends the batch
                        future.cancel()
                    raise
        return [a or "" for a in answers]

    # -- one request ---------------------------------------------------------------------------

    def _ask_and_keep(self, messages: Messages, key: str) -> str:
        """The answer, cached as soon as it arrives (an answer received before another request fails is kept)."""
        answer = self._ask(messages)
        if self.cache is not None:
            self.cache.put(key, answer, self.name)
        return answer

    def _ask(self, messages: Messages) -> str:
        retrying = Retrying(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(self.max_retries + 1),
                            wait=self._wait, before_sleep=self._log_retry, reraise=True)
        try:
            payload = retrying(self._post, messages)
        except _Transient as error:
            attempts = self.max_retries + 1
            tried = f"after {attempts} attempts" if attempts > 1 else "(no retries)"
            raise EndpointFailed(f"chat endpoint {self.base_url} failed {tried}: {error}",
                                 endpoint=self.base_url, status=error.status) from None
        return self._content(payload)

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Transient) and error.retry_after is not None:
            return min(error.retry_after, self.max_wait)
        return min(self.backoff * 2 ** (state.attempt_number - 1), self.max_wait)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        log.warning("chat endpoint %s: %s; retrying in %.2fs (attempt %d of %d)",
                    self.base_url, error, wait, state.attempt_number + 1, self.max_retries + 1)

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        return self._client

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _detail(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            body = None
        message: object = None
        if isinstance(body, dict):
            error = body.get("error")
            message = (error.get("message") if isinstance(error, dict) else error) or body.get("detail") or body.get("message")
        text = one_line(self._redact(str(message or response.text)))
        return f": {text}" if text else ""

    def _post(self, messages: Messages) -> Any:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            self.sent += 1
            response = self._http().post(self.endpoint, json=self.body(messages), headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise _Transient(f"no answer within {self.timeout:g}s") from None
        except httpx.TransportError as error:
            raise _Transient(f"cannot be reached ({type(error).__name__}: {self._redact(str(error))})") from None
        status, where = response.status_code, f"chat endpoint {self.base_url}"
        if status == 408 or status == 429 or status >= 500:
            raise _Transient(f"{status} {response.reason_phrase}{self._detail(response)}",
                             status=status, retry_after=_retry_after(response))
        if status in (401, 403):
            raise EndpointFailed(f"{where} refused the request ({status}): check the key in {self.api_key_env}{self._detail(response)}",
                                 endpoint=self.base_url, status=status)
        if status == 404:
            raise EndpointFailed(f"{where} has no chat endpoint or no model {self.model!r} (404): the URL should end in /v1"
                                 f"{self._detail(response)}", endpoint=self.base_url, status=status)
        if status != 200:
            raise EndpointFailed(f"{where} refused the request ({status} {response.reason_phrase}){self._detail(response)}",
                                 endpoint=self.base_url, status=status)
        try:
            return response.json()
        except ValueError:
            raise EndpointFailed(f"{where} answered with something that is not JSON: "
                                 f"{one_line(self._redact(response.text), 80)!r}", endpoint=self.base_url, status=status) from None

    def _content(self, payload: Any) -> str:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise EndpointFailed(f"chat endpoint {self.base_url} answered JSON without choices[0].message",
                                 endpoint=self.base_url)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise EndpointFailed(f"chat endpoint {self.base_url} answered a message whose content is not text",
                                 endpoint=self.base_url)
        return content or ""


def chat_from_spec(spec: str, *, cache: ChatCache | None = None, **options: Any) -> OpenAIChat:
    """A chat model from `openai:MODEL@BASE_URL` (BASE_URL defaults to OpenAI's); `options` go to OpenAIChat."""
    kind, colon, rest = spec.strip().partition(":")
    if not colon or kind.lower() != "openai":
        raise ConfigError(f"chat model {spec!r} is not a spec: expected {SPEC_FORM}")
    model, at, url = rest.partition("@")
    if not model.strip() or model != model.strip():
        raise ConfigError(f"chat model {spec!r} names no model: expected {SPEC_FORM}")
    return OpenAIChat(url if at else OPENAI_BASE_URL, model, cache=cache, **options)


def chat_from_env(env: Mapping[str, str] | None = None, **options: Any) -> OpenAIChat | None:
    """The chat model SURREAL_EVAL_CHAT names, or None when it is unset or empty."""
    env = os.environ if env is None else env
    spec = env.get(CHAT_ENV, "").strip()
    return chat_from_spec(spec, **options) if spec else None
