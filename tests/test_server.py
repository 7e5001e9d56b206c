"""The same harness on a real SurrealDB 3 server (docker compose up); skipped without one."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from urllib.parse import urlsplit

import pytest

from surreal_eval import (
    AuthenticationFailed,
    ConnectionFailed,
    HarnessConfig,
    Settings,
    connect,
    evaluate,
    import_harness,
)

from .conftest import SERVER_URL, needs_server, seed_own

pytestmark = needs_server


def server_settings(**overrides) -> Settings:
    return Settings(
        url=SERVER_URL or "",
        namespace="surreal_eval_test",
        database=f"t_{uuid.uuid4().hex[:12]}",
        user=os.environ.get("SURREAL_EVAL_TEST_USER", "root"),
        password=os.environ.get("SURREAL_EVAL_TEST_PASS", "root"),
        **overrides,
    )


def test_harness_runs_the_lesson_on_a_server():
    settings = server_settings()
    db = connect(settings)
    try:
        import_harness(db, HarnessConfig(dimension=4))
        seed_own(db)
        report = evaluate(db, ks=[1, 3, 5])
        recall3 = {r.retriever: r.recall for r in report.results if r.k == 3}
        assert recall3["hybrid_floor"] > max(recall3["bm25"], recall3["vector"], recall3["hybrid"])
    finally:
        db.close()


def test_wrong_password_on_a_server_is_refused_clearly():
    with pytest.raises(AuthenticationFailed, match="refused the credentials"):
        connect(server_settings(password="certainly-not-the-password"))


class DroppingProxy:
    """A TCP proxy to the test server whose `drop()` cuts every connection and refuses new ones:
    to the client, the server is gone mid-conversation (the server itself keeps running)."""

    def __init__(self, url: str) -> None:
        target = urlsplit(url)
        self.upstream = (target.hostname or "localhost", target.port or 8000)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = [self.listener]
        self.dropped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.dropped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self) -> None:
        self.dropped.set()
        for end in self.sockets:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()


def test_a_connection_dropped_mid_run_fails_in_one_line_and_records_no_run():
    settings = server_settings()
    direct = connect(settings)
    try:
        import_harness(direct, HarnessConfig(dimension=4))
        seed_own(direct)
        proxy = DroppingProxy(settings.url)
        scheme = settings.url.split("://", 1)[0]
        proxied = connect(settings.model_copy(update={"url": f"{scheme}://127.0.0.1:{proxy.port}"}))
        with pytest.raises(ConnectionFailed) as failure:
            # the first batch of questions is scored, then the connection goes before the next statement
            evaluate(proxied, ks=[1, 3, 5], concurrency=1, progress=lambda done, total: proxy.drop())
        assert failure.value.exit_code == 3 and "\n" not in str(failure.value)
        try:
            proxied.close()
        except ConnectionFailed:
            pass
        assert direct.value("SELECT VALUE id FROM seval_run WHERE finished_at != NONE") == []
        assert evaluate(direct, ks=[1, 3, 5]).questions > 0  # the store still evaluates (the dead run stays unfinished, unseen)
    finally:
        direct.close()


def _settled(db, ingest, seconds: float = 120.0) -> dict:
    """The ingest row once the server's event settled it (done or failed), waiting up to `seconds`."""
    import time

    end = time.monotonic() + seconds
    while True:
        row = db.value("SELECT state, error, run FROM ONLY $i", {"i": ingest})
        if row["state"] in ("done", "failed") or time.monotonic() > end:
            return row
        time.sleep(0.5)


def test_on_a_server_the_async_event_evaluates_after_the_writers_commit():
    """docs/watch.md: the ingest's transaction commits whatever the evaluation does; the server's ASYNC event
    evaluates afterwards, records a refusal it foresees on the ingest, and records a run otherwise."""
    from surreal_eval.runs.watch import set_watch

    settings = server_settings()
    db = connect(settings)
    try:
        import_harness(db, HarnessConfig(dimension=4))
        assert "WHEN 1 = 1 AND " in db.value("INFO FOR TABLE seval_ingest")["events"]["seval_evaluate_after_ingest"]  # armed
        seed_own(db)
        set_watch(db, ks=[1, 3])
        db.query("CREATE seval_question:ghost CONTENT { text: 'ghost order', embedding: [0.1, 0.2, 0.3, 0.4], relevant: [seval_article:contact_support] }")
        db.query("DELETE seval_article:contact_support")  # now a label names a record that is gone
        db.query("BEGIN; CREATE seval_article:new1 CONTENT { title: 'Gift cards', content: 'Gift cards never expire.', "
                 "embedding: [0.1, 0.6, 0.1, 0.1] }; CREATE seval_ingest CONTENT { corpus: 'seval_article', documents: 1 }; COMMIT;")
        assert db.value("RETURN record::exists(seval_article:new1)")  # the write committed
        (ingest,) = db.value("SELECT VALUE id FROM seval_ingest")
        failed = _settled(db, ingest)
        assert failed["state"] == "failed" and "seval_article:contact_support" in failed["error"]
        db.query("DELETE seval_question:ghost")
        db.query("CREATE seval_ingest CONTENT { corpus: 'seval_article', documents: 0 }")
        (second,) = db.value("SELECT VALUE id FROM seval_ingest WHERE id != $i", {"i": ingest})
        done = _settled(db, second)
        assert done["state"] == "done" and done["run"] is not None
    finally:
        db.close()
