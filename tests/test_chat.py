"""The chat model over an OpenAI-compatible API (golden/chat.py), against a real local server speaking the
protocol (tests/chat_server.py), and the plain-text rules its answers are read by (golden/wording.py)."""

from __future__ import annotations

import logging
import time

import pytest

from surreal_eval.errors import ConfigError, EndpointFailed
from surreal_eval.golden.chat import ChatCache, OpenAIChat, chat_from_env, chat_from_spec, default_cache_dir
from surreal_eval.golden.wording import judgment_in, looks_english, overlap, question_in

from .chat_server import ChatServer, chat_server, check_request

KEY = "sk-chat-test-0123456789-very-secret"


pytestmark = pytest.mark.usefixtures("chat_env")  # no chat model or key from the environment, a cache of its own


@pytest.fixture
def server():
    with chat_server() as running:
        yield running


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Write a question.\nTitle: T\nDocument:\n{text}"}]


def make(server: ChatServer, tmp_path, **options) -> OpenAIChat:
    options.setdefault("backoff", 0)
    return chat_from_spec(f"openai:tiny@{server.url}", cache=ChatCache(tmp_path / "chat"), **options)


def test_requests_are_valid_for_the_openai_client_types_and_answers_are_read(server, tmp_path):
    with make(server, tmp_path) as chat:
        answers = chat.answer_all([ask("Library catalogues list holdings."), ask("Indexing uses thesauri.")])
    assert answers == ["Sure, here it is:\nWhere can I get help with catalogues?\n",
                       "Sure, here it is:\nWhere can I get help with thesauri?\n"]
    assert server.bad_requests == [] and server.requests == 2


def test_the_wire_check_refuses_a_body_the_client_would_not_send():
    check_request({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.0})
    with pytest.raises(Exception):
        check_request({"model": "m", "messages": [{"role": "reader", "content": "hi"}]})


def test_a_rerun_sends_no_request_the_answers_come_from_the_cache(server, tmp_path):
    with make(server, tmp_path) as chat:
        first = chat.answer_all([ask("one document"), ask("another document")])
    with make(server, tmp_path) as again:
        second = again.answer_all([ask("another document"), ask("one document")])
        assert again.sent == 0
    assert server.requests == 2 and second == first[::-1]
    assert len(list((tmp_path / "chat").rglob("*.json"))) == 2


def test_another_model_or_prompt_is_another_cache_entry(server, tmp_path):
    make(server, tmp_path).answer(ask("one document"))
    chat_from_spec(f"openai:bigger@{server.url}", cache=ChatCache(tmp_path / "chat")).answer(ask("one document"))
    make(server, tmp_path).answer(ask("one document, edited"))
    assert server.requests == 3


def test_without_a_cache_every_call_asks(server):
    chat = chat_from_spec(f"openai:tiny@{server.url}")
    chat.answer(ask("x")), chat.answer(ask("x"))
    assert server.requests == 2


@pytest.mark.parametrize("status", [500, 429])
def test_a_transient_failure_is_retried_then_succeeds(server, tmp_path, status):
    server.fail_first, server.fail_status = 2, status
    with make(server, tmp_path, max_retries=3) as chat:
        assert chat.answer(ask("Catalogues.")).endswith("catalogues?\n")
    assert server.requests == 3


def test_persistent_failure_is_one_endpoint_error_naming_the_status(server, tmp_path):
    server.status = 500
    with make(server, tmp_path, max_retries=2) as chat, pytest.raises(EndpointFailed, match=r"failed after 3 attempts: 500"):
        chat.answer(ask("x"))
    assert server.requests == 3 and EndpointFailed.exit_code == 4


def test_a_slow_answer_times_out(server, tmp_path):
    server.rules = {"slow": "timeout"}
    with make(server, tmp_path, timeout=0.3, max_retries=0) as chat, pytest.raises(EndpointFailed, match="no answer within 0.3s"):
        chat.answer(ask("a slow one"))


def test_at_most_concurrency_requests_are_in_flight(server, tmp_path):
    server.delay = 0.15
    with make(server, tmp_path, concurrency=2) as chat:
        started = time.monotonic()
        chat.answer_all([ask(f"document {i}") for i in range(6)])
    assert server.most_in_flight == 2 and time.monotonic() - started >= 3 * 0.15


def test_the_key_is_sent_but_never_printed(server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SURREAL_EVAL_CHAT_KEY", KEY)
    server.status = 500
    chat = make(server, tmp_path, max_retries=1)
    with caplog.at_level(logging.WARNING), pytest.raises(EndpointFailed) as failed:
        chat.answer(ask("x"))
    assert server.authorization == [f"Bearer {KEY}"] * 2
    assert KEY not in str(failed.value) and KEY not in repr(chat) and KEY not in caplog.text
    assert "SURREAL_EVAL_CHAT_KEY set" in repr(chat)
    assert all(KEY not in p.read_text() for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.parametrize("spec, says", [
    ("tiny@http://x/v1", "not a spec"), ("local:tiny", "not a spec"), ("openai:@http://x/v1", "names no model"),
    ("openai:tiny@ftp://x", "not an http"),
])
def test_bad_specs_are_config_errors(spec, says):
    with pytest.raises(ConfigError, match=says):
        chat_from_spec(spec)


def test_the_spec_comes_from_the_environment_and_defaults_to_openai(tmp_path):
    assert chat_from_env({}) is None
    chat = chat_from_env({"SURREAL_EVAL_CHAT": "openai:gpt-4o-mini"})
    assert chat.name == "openai:gpt-4o-mini@https://api.openai.com/v1"
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "surreal-eval"


# -- the plain-text rules ----------------------------------------------------------------------------


@pytest.mark.parametrize("answer, question", [
    ("How do I reset my password?", "How do I reset my password?"),
    ("Sure! Here is one:\n\n  What is a thesaurus for?  \nWhy?", "What is a thesaurus for?"),
    ("The document explains indexing.", None),
    ("Is it this? No, it is that.", None),  # the line does not end with ?
    ("", None),
])
def test_a_question_is_the_first_line_ending_with_a_question_mark(answer, question):
    assert question_in(answer) == question


@pytest.mark.parametrize("answer, grade", [
    ("2", 2), ("Grade: 3 (highly relevant)", 3), ("I would say 0.", 0), ("10 then 1", 1), ("2.5, so 2", 2),
    ("-1 or 3", 3), ("relevant", None), ("7", None),
])
def test_a_judgment_is_the_first_whole_number_from_0_to_3(answer, grade):
    assert judgment_in(answer) == grade


def test_overlap_is_the_share_of_the_questions_content_words_found_in_the_passage():
    # content words of the question: libraries, index, scientific, journals (how, do: stopwords);
    # the passage's words hold only "journals" of them (library and indexes are other words)
    assert overlap("How do libraries index scientific journals?", "The library indexes journals by subject.") == 0.25
    assert overlap("What is it?", "anything") == 0.0  # no content word: nothing copied
    assert overlap("Journals, indexed?", "indexed JOURNALS") == 1.0


@pytest.mark.parametrize("text, english", [
    ("How does pollution affect health in cities?", True),
    ("Where can I get help with catalogues?", True),
    ("Où puis-je trouver de l'aide à ce sujet ?", False),
    ("Quels sont les effets de la pollution sur la santé?", False),
    ("Wie finde ich die Antwort auf diese Frage?", False),
    ("¿Cuáles son los efectos de la contaminación?", False),
])
def test_the_english_heuristic(text, english):
    assert looks_english(text) is english
