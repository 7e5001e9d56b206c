"""A small real chat-completions server for tests: threading http.server on 127.0.0.1 speaking
POST /v1/chat/completions (and /v1/embeddings, so a test needs one server). Every request body is checked
against the OpenAI Python client's own request type (CompletionCreateParamsNonStreaming) and every answer
against its response type (ChatCompletion), so the wire format is the real one.

It answers deterministically from the prompt: by default a question in everyday words ("Where can I get
help with WORD?", WORD the passage's longest word), and to a judging prompt (a line "Question: ...") a
grade, `judge_grade`; a rule (a substring of the prompt -> a behaviour) makes
it answer otherwise: "empty", "answer" (a statement, no question), "copy" (the passage's first sentence
made a question), "french", "german", "grade N" (a judgment), "unsure" (no grade), "timeout" (sleeps past the client's
timeout), "500" or "429" (that status). `fail_first` answers 500 to that many requests first. It counts
requests and keeps the authorization headers it saw."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter

_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)


def check_request(body: Any) -> None:
    """Raise unless `body` is a valid non-streaming chat-completions request (the client's type)."""
    checked = _REQUEST.validate_python(body)
    messages = list(checked["messages"])  # the client types messages as an Iterable: validated as read
    if not messages or not all(isinstance(m.get("content"), str) for m in messages):
        raise ValueError("every message needs text content")


def vector_for(text: str, dim: int) -> list[float]:
    """A fixed vector per text (a hash, not a model: it says nothing of meaning)."""
    digest = hashlib.sha256(text.encode()).digest() if dim <= 32 else hashlib.shake_256(text.encode()).digest(dim)
    return [round(0.05 + digest[i] / 255, 6) for i in range(dim)]


#: Run as a script (the docs' model walkthrough (docs/golden-set.md)), how the server answers a question-writing prompt, by the sha256 of
#: its passage modulo 10, so a run over many documents meets every kind of bad answer.
MIXED = {0: "copy", 1: "answer", 2: "empty"}


def passage_of(prompt: str) -> str:
    return prompt.split("Document:\n", 1)[-1].strip()


#: A judging prompt (prompts/judge.txt) names the question on a line of its own.
JUDGE = re.compile(r"^Question: (.*)$", re.MULTILINE)


def judge_grade(prompt: str) -> int:
    """How the server grades a judging prompt by default: the number of distinct words of four letters or
    more of the question found in the passage, at most 3."""
    asked = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", JUDGE.search(prompt)[1])}
    seen = {w.lower() for w in re.findall(r"[A-Za-z]+", passage_of(prompt))}
    return min(3, len(asked & seen))


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, dimension: int = 4, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.dimension = dimension
        self.lock = threading.Lock()
        self.rules: dict[str, str] = {}
        self.mixed = False
        self.fail_first = 0
        self.fail_status = 500  # the status of those first failures (429 sends Retry-After: 0)
        self.in_flight = self.most_in_flight = 0
        self.status: int | None = None  # answer every chat request with this status
        self.delay = 0.0
        self.requests = 0
        self.embed_requests = 0
        self.authorization: list[str | None] = []
        self.bad_requests: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply_to(self, prompt: str) -> tuple[str, str | None]:
        """(behaviour, the answer's text) for `prompt`."""
        passage = passage_of(prompt)
        for needle, behaviour in self.rules.items():
            if needle in prompt:
                break
        else:
            behaviour = "judge" if JUDGE.search(prompt) else "question"
            if behaviour == "question" and self.mixed:
                behaviour = MIXED.get(hashlib.sha256(passage.encode()).digest()[0] % 10, behaviour)
        if behaviour == "judge":
            return "text", f"Grade: {judge_grade(prompt)}"

        longest = max(re.findall(r"[A-Za-z]+", passage) or ["things"], key=lambda w: (len(w), w)).lower()
        first = re.split(r"(?<=[.!?])\s", passage, maxsplit=1)[0].rstrip(".!?")
        texts = {
            "question": f"Sure, here it is:\nWhere can I get help with {longest}?\n",
            "empty": "",
            "answer": f"The document explains {longest}. It is about {first.lower()}.",
            "copy": f"{first}?",
            "french": "Où puis-je trouver de l'aide à ce sujet ?",
            "german": "Wie finde ich die Antwort auf diese Frage?",
            "unsure": "I cannot tell from this document alone.",
        }
        if behaviour == "question" and self.mixed:  # two of the passage's own words, as generated questions tend to
            second = max((w for w in re.findall(r"[A-Za-z]+", passage) if w.lower() != longest) or ["things"],
                         key=lambda w: (len(w), w)).lower()
            texts["question"] = f"Where can I get help with {longest} and {second}?"
        if behaviour.startswith("grade "):
            return "text", f"Grade: {behaviour.split()[1]}"
        return behaviour, texts.get(behaviour)


class Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: Any) -> None:
        pass

    def send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def do_POST(self) -> None:
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"null")
        if self.path == "/v1/embeddings":
            with server.lock:
                server.embed_requests += 1
            data = [{"object": "embedding", "index": i, "embedding": vector_for(t, server.dimension)}
                    for i, t in enumerate(body["input"])]
            return self.send(200, {"object": "list", "data": data, "model": body["model"]})
        if self.path != "/v1/chat/completions":
            return self.send(404, {"error": {"message": f"no route {self.path}"}})
        try:
            check_request(body)
        except Exception as error:  # noqa: BLE001 - any invalid request is recorded and refused
            server.bad_requests.append(str(error))
            return self.send(400, {"error": {"message": "invalid request"}})
        prompt = body["messages"][-1]["content"]
        with server.lock:
            server.requests += 1
            server.authorization.append(self.headers.get("authorization"))
            failing = server.fail_first > 0
            server.fail_first -= 1 if failing else 0
            server.in_flight += 1
            server.most_in_flight = max(server.most_in_flight, server.in_flight)
        try:
            self.answer(body, prompt, failing)
        finally:
            with server.lock:
                server.in_flight -= 1

    def answer(self, body: dict, prompt: str, failing: bool) -> None:
        server = self.server
        time.sleep(server.delay)
        behaviour, text = server.reply_to(prompt)
        if failing or server.status is not None:
            status = server.status or server.fail_status
            return self.send(status, {"error": {"message": "the model is overloaded"}},
                             {"retry-after": "0"} if status == 429 else None)
        if behaviour in ("500", "429"):
            return self.send(int(behaviour), {"error": {"message": "try later"}}, {"retry-after": "0"})
        if behaviour == "timeout":
            time.sleep(2.0)
            text = "Too late?"
        answer = {
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len((text or "").split()),
                      "total_tokens": len(prompt.split()) + len((text or "").split())},
        }
        ChatCompletion.model_validate(answer)  # the client's own response type
        self.send(200, answer)


@contextmanager
def chat_server(dimension: int = 4) -> Iterator[ChatServer]:
    server = ChatServer(dimension)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":  # the docs' model walkthrough (docs/golden-set.md): python tests/chat_server.py --port 8765 &
    import argparse

    parser = argparse.ArgumentParser(description="The tests' chat-completions and embeddings server, on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--dimension", type=int, default=384, help="the length of the vectors /v1/embeddings returns")
    options = parser.parse_args()
    running = ChatServer(options.dimension, options.port)
    running.mixed = True
    print(f"serving {running.url} (chat and embeddings; not a model: answers follow fixed rules)", flush=True)
    running.serve_forever()
