"""A small real search endpoint for tests: threading http.server on 127.0.0.1 searching the demo
corpus by word overlap. GET /search?q=TEXT&k=K and POST /search {"query", "k"} answer
{"hits": [{"id", "score"}]}; POST /rerank {query, documents | texts} answers as Cohere
({"results": [{index, relevance_score}]}) or TEI ([{index, score}]) by word overlap; it counts requests, the most in flight at once, and can fail on purpose."""

from __future__ import annotations

import json
import re
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, documents: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.documents = {d: set(re.findall(r"\w+", t.lower())) for d, t in documents.items()}
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = self.requests = 0
        self.seen: list[str] = []  # the query texts received, decoded
        self.delay = 0.0  # seconds each answer takes
        self.fail_first = 0  # answer 503 to this many requests first
        self.status = 200  # answer every request with this status
        self.answer = None  # answer every request with this JSON instead

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def search(self, text: str, k: int) -> dict:
        words = set(re.findall(r"\w+", text.lower()))
        scored = sorted(((len(words & terms), d) for d, terms in self.documents.items() if words & terms), reverse=True)
        return {"hits": [{"id": d, "score": s} for s, d in scored[:k]]}


    @staticmethod
    def overlap(text: str, document: str) -> float:
        """The reranker's score: the share of the query's words in the document (ties: shorter first)."""
        words, terms = set(re.findall(r"\w+", text.lower())), re.findall(r"\w+", document.lower())
        return len(words & set(terms)) / max(1, len(words)) - len(terms) / 1e6

    def rerank(self, text: str, documents: list[str], tei: bool):
        scored = sorted(((self.overlap(text, d), i) for i, d in enumerate(documents)), reverse=True)
        if tei:
            return [{"index": i, "score": s} for s, i in scored]
        return {"results": [{"index": i, "relevance_score": s} for s, i in scored]}


class Handler(BaseHTTPRequestHandler):
    server: SearchServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, text: str, k: int, rerank: list[str] | None = None, tei: bool = False) -> None:
        server = self.server
        with server.lock:
            server.requests += 1
            server.in_flight += 1
            server.most_in_flight = max(server.most_in_flight, server.in_flight)
            server.seen.append(text)
            failing = server.fail_first > 0
            server.fail_first -= 1 if failing else 0
        answered = False
        try:
            time.sleep(server.delay)
            status = 503 if failing else server.status
            found = server.search(text, k) if rerank is None else server.rerank(text, rerank, tei)
            body = json.dumps(server.answer if server.answer is not None else found).encode()
            # no longer in flight once the answer is ready: the client may send its next request as soon as it reads
            # this one, before this thread would reach `finally` (on a loaded machine that counted one request too many)
            with server.lock:
                server.in_flight -= 1
                answered = True
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass
        finally:
            if not answered:
                with server.lock:
                    server.in_flight -= 1

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        self._answer(query.get("q", [""])[0], int(query.get("k", ["10"])[0]))

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/rerank":
            self._answer(payload["query"], 0, payload.get("documents", payload.get("texts")), tei="texts" in payload)
        else:
            self._answer(payload["query"], int(payload["k"]))


@contextmanager
def serving(documents: dict[str, str]):
    server = SearchServer(documents)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
