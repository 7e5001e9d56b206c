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
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from ..errors import ConfigError, EndpointFailed, on_interrupt
from ..load.openai_endpoint import OPENAI_BASE_URL, OpenAIEndpoint

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


class OpenAIChat(OpenAIEndpoint):
    """A chat model at an OpenAI-compatible endpoint; `answer_all` returns the text of each answer."""

    kind = "chat"
    path = "/chat/completions"
    failure = EndpointFailed
    example_url = "http://localhost:8080/v1"
    log = log  # retries are logged under this module's name

    def __init__(self, base_url: str, model: str, *, api_key_env: str = CHAT_KEY_ENV, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5, max_wait: float = 60.0, concurrency: int = 4,
                 temperature: float = 0.0, cache: ChatCache | None = None, client: httpx.Client | None = None) -> None:
        super().__init__(base_url, model, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                         backoff=backoff, max_wait=max_wait, client=client)
        if not timeout > 0 or max_retries < 0 or backoff < 0 or max_wait < 0:
            raise ConfigError("chat timeout must be positive, and retries, backoff and max wait 0 or more")
        if concurrency < 1:
            raise ConfigError(f"chat concurrency must be at least 1, not {concurrency}")
        self.concurrency, self.temperature = concurrency, temperature
        self.cache = cache
        #: requests sent (answers read from the cache are not counted)
        self.sent = 0

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
        futures: dict[int, Future[str]] = {}
        if todo:  # interrupted, the requests in flight are waited for (their answers kept), then it says what was kept
            with on_interrupt(lambda: self._received(futures)), ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                futures.update({i: pool.submit(self._ask_and_keep, conversations[i], keys[i]) for i in todo})
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

    def _received(self, futures: dict[int, Future[str]]) -> str:
        """What an interrupted answer_all kept: the answers that arrived, in the cache (none without one)."""
        n = sum(1 for f in futures.values() if f.done() and not f.cancelled() and f.exception() is None)
        if self.cache is None:
            return f"the {n} answers received are not kept (--no-cache)"
        return f"the {n} answers received are kept in the chat cache {self.cache.folder}: the same command asks only for the rest"

    # -- one request ---------------------------------------------------------------------------

    def _ask_and_keep(self, messages: Messages, key: str) -> str:
        """The answer, cached as soon as it arrives (an answer received before another request fails is kept)."""
        answer = self._ask(messages)
        if self.cache is not None:
            self.cache.put(key, answer, self.name)
        return answer

    def _ask(self, messages: Messages) -> str:
        return self._content(self._send(self.body(messages)))

    def _post(self, body: Any) -> Any:
        self.sent += 1
        return super()._post(body)

    def _refusal(self, response: httpx.Response) -> str:
        """A one-line message for an answer other than 200 that no retry will fix."""
        status, where, detail = response.status_code, self.where, self._detail(response)
        if status in (401, 403):
            return f"{where} refused the request ({status}): check the key in {self.api_key_env}{detail}"
        if status == 404:
            return f"{where} has no chat endpoint or no model {self.model!r} (404): the URL should end in /v1{detail}"
        return f"{where} refused the request ({status} {response.reason_phrase}){detail}"

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
