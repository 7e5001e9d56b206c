"""Stand-in for your search API: GET /search?q=TEXT&k=K answers {"hits": [{"id", "score"}]}, the
documents of documents.jsonl ranked by how many of the query's words they share (ties by id).

    python search_api.py [PORT]     (default 8765; serves on 127.0.0.1 until stopped)
"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DOCUMENTS = {row["id"]: set(re.findall(r"\w+", row["body"].lower())) for row in map(
    json.loads, (Path(__file__).parent / "documents.jsonl").read_text(encoding="utf-8").splitlines())}


def search(text: str, k: int) -> dict:
    words = set(re.findall(r"\w+", text.lower()))
    scored = sorted((-len(words & terms), d) for d, terms in DOCUMENTS.items() if words & terms)
    return {"hits": [{"id": d, "score": -s} for s, d in scored[:k]]}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        found = url.path == "/search" and "q" in query
        body = json.dumps(search(query["q"][0], int(query.get("k", ["10"])[0])) if found else {"error": "GET /search?q=&k="})
        self.send_response(200 if found else 404)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


def server(port: int) -> ThreadingHTTPServer:
    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    server(int(sys.argv[1]) if len(sys.argv) > 1 else 8765).serve_forever()
