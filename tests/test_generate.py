"""Questions a model writes (`golden generate`), against a real local chat server (tests/chat_server.py):
stored with provenance, bad answers dropped and counted, all or nothing, the evaluator refused."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.errors import ConfigError, EndpointFailed, PermissionDenied
from surreal_eval.golden.chat import ChatCache, chat_from_spec
from surreal_eval.load.embedders import embedder_from_spec
from surreal_eval.golden.generate import default_prompt, generate_questions, sample_passages
from surreal_eval.present.cli import app

from .chat_server import chat_server
from .conftest import as_evaluator, assert_cli_refuses_the_evaluator, evaluator_store, snapshot
from .docs_pages import blocks

runner = CliRunner()
KEY = "sk-chat-test-0123456789-very-secret"
#: the demo's articles, by title, and how the server answers about them (every other one: a good question)
RULES = {"Title: Locked out": "empty", "Title: Request a refund": "answer", "Title: API rate limits": "copy",
         "Title: Return an item": "french", "Title: Track your order": "german"}


pytestmark = pytest.mark.usefixtures("chat_env")  # no chat model or key from the environment, a cache of its own


@pytest.fixture
def server():
    with chat_server(dimension=4) as running:
        running.rules = dict(RULES)
        yield running


def models(server, tmp_path, **options):
    chat = chat_from_spec(f"openai:tiny@{server.url}", cache=ChatCache(tmp_path / "chat"), backoff=0, **options)
    return chat, embedder_from_spec(f"openai:emb@{server.url}")


def test_generated_questions_are_stored_with_provenance_and_bad_answers_dropped_and_counted(seeded, server, tmp_path):
    chat, embedder = models(server, tmp_path)
    report = generate_questions(seeded, chat, embedder, count=10, max_overlap=0.5, by="ana")
    # empty, an answer, French and German dropped; the copy (overlap 1) and contact_support ("Where can I get
    # help with example?": help and example of get, help, example in its passage: 2/3) are above 0.5
    assert report.dropped == {"empty": 1, "not a question": 1, "other language": 2, "copies the passage": 2}
    assert (report.asked, report.requests, report.stored, report.flagged) == (10, 10, 4, 0)
    assert sorted(report.overlaps) == [0.3333] * 4 + [0.6667, 1.0]
    stored = seeded.value("SELECT record::id(id) AS id, text, source, language, relevant, array::len(embedding) AS dim "
                          "FROM seval_question WHERE source = 'synthetic' ORDER BY id")
    assert [q["id"] for q in stored] == ["gen-seval_article-cancel_subscription", "gen-seval_article-enable_2fa",
                                         "gen-seval_article-password_reset", "gen-seval_article-update_payment"]
    assert stored[1]["text"] == "Where can I get help with authentication?"
    assert all(q["dim"] == 4 and q["language"] == "en" and len(q["relevant"]) == 1 for q in stored)
    label = seeded.value("SELECT source, by, note, origin, digest FROM ONLY seval_label:[seval_question:⟨gen-seval_article-enable_2fa⟩, "
                         "seval_article:enable_2fa]")
    assert (label["source"], label["by"], label["origin"]) == ("model", chat.name, "set")
    assert report.prompt in label["note"] and label["digest"]
    made = seeded.value("SELECT model, prompt, overlap, flagged, by, at FROM ONLY seval_generated:[seval_question:⟨gen-seval_article-enable_2fa⟩]")
    assert (made["model"], made["prompt"], made["overlap"], made["flagged"], made["by"]) == (chat.name, report.prompt, 0.3333, False, "ana")
    assert server.bad_requests == []


def test_flag_overlap_keeps_the_copies_flagged(seeded, server, tmp_path):
    chat, embedder = models(server, tmp_path)
    report = generate_questions(seeded, chat, embedder, count=10, max_overlap=0.5, flag_overlap=True)
    assert (report.stored, report.flagged, report.dropped["copies the passage"]) == (6, 2, 0)
    assert sorted(seeded.value("SELECT VALUE record::id(doc) FROM seval_generated WHERE flagged")) == ["api_rate_limits", "contact_support"]


def test_a_rerun_skips_the_records_used_and_asks_nothing_it_asked_before(seeded, server, tmp_path):
    chat, embedder = models(server, tmp_path)
    first = generate_questions(seeded, chat, embedder, count=10)
    again = generate_questions(seeded, chat, embedder, count=10)
    # without --max-overlap the copy and contact_support are stored: 6 records used, 4 left, all asked before
    assert (first.stored, again.available, again.asked, again.requests, again.stored) == (6, 4, 4, 0, 0)
    assert server.requests == 10


def test_an_endpoint_failure_leaves_the_database_as_it_was_and_the_retry_pays_only_what_failed(seeded, server, tmp_path):
    server.rules["Title: Reset your password"] = "500"
    before = snapshot(seeded)
    chat, embedder = models(server, tmp_path, max_retries=1, concurrency=10)  # every request in flight at once
    with pytest.raises(EndpointFailed, match="chat endpoint .* failed after 2 attempts: 500"):
        generate_questions(seeded, chat, embedder, count=10)
    assert snapshot(seeded) == before
    del server.rules["Title: Reset your password"]
    asked = server.requests
    answered = asked - 2  # the failing record was asked twice (one retry); every other request got its answer
    report = generate_questions(seeded, chat, embedder, count=10)
    # the answers received beside the failure come from the cache: only the failed record, and any the
    # failure stopped before they were sent (on a busy machine), are asked again
    assert report.stored == 6 and report.requests == server.requests - asked == 10 - answered >= 1


def test_the_sample_is_stratified_seeded_and_complete():
    passages = [{"id": f"a{i}", "title": "", "text": "w", "stratum": "A"} for i in range(6)]
    passages += [{"id": f"b{i}", "title": "", "text": "w", "stratum": "B"} for i in range(2)]
    chosen = sample_passages(passages, 4, seed=1, by_field=True)
    # shares 4 * 6/8 = 3 and 4 * 2/8 = 1
    assert sorted(p["stratum"] for p in chosen) == ["A", "A", "A", "B"]
    assert chosen == sample_passages(list(reversed(passages)), 4, seed=1, by_field=True)
    assert len(sample_passages(passages, 50, by_field=True)) == 8
    lengths = [{"id": f"d{n}", "title": "", "text": " ".join(["w"] * n)} for n in range(1, 9)]
    assert {p["stratum"] for p in sample_passages(lengths, 4)} == {"length q1", "length q2", "length q3", "length q4"}


def test_refusals_before_any_request(seeded, server, tmp_path):
    chat, embedder = models(server, tmp_path)
    with pytest.raises(ConfigError, match="--embedder"):
        generate_questions(seeded, chat, None, count=3)
    with pytest.raises(Exception, match="must hold \\{passage\\}"):
        generate_questions(seeded, chat, embedder, count=3, prompt="Write a question.")
    assert server.requests == 0
    assert "{passage}" in default_prompt() and "has NOT read" in default_prompt()


@pytest.fixture
def store(tmp_path):
    return evaluator_store(tmp_path / "store")


def test_the_cli_generates_and_prints_drops_and_the_overlap_distribution(store, server):
    result = runner.invoke(app, ["--url", store, "golden", "generate", "--count", "10", "--chat", f"openai:tiny@{server.url}",
                                 "--embedder", f"openai:emb@{server.url}", "--max-overlap", "0.5"])
    assert result.exit_code == 0, result.output
    assert "stored 4 synthetic questions" in result.output
    assert "dropped: 1 empty, 1 not a question, 2 other language, 2 copies the passage" in result.output
    assert "min / q1 / median / q3 / max: 0.33 / 0.33 / 0.33 / 0.58 / 1.00" in result.output


def test_the_cli_exits_4_on_a_failing_endpoint_in_one_line_without_the_key_changing_nothing(store, server, monkeypatch):
    with connect(Settings(url=store)) as owner:
        before = snapshot(owner)
    server.status = 503
    result = runner.invoke(app, ["--url", store, "golden", "generate", "--count", "2", "--chat", f"openai:tiny@{server.url}",
                                 "--embedder", f"openai:emb@{server.url}"], env={"SURREAL_EVAL_CHAT_KEY": KEY})
    assert result.exit_code == 4, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "chat endpoint" in result.stderr
    assert KEY not in result.output and KEY not in result.stderr
    with connect(Settings(url=store)) as owner:
        assert snapshot(owner) == before


def test_an_evaluator_may_not_generate_exit_5_no_request_nothing_changed(store, server):
    assert_cli_refuses_the_evaluator(store, ["golden", "generate", "--count", "3", "--chat", f"openai:tiny@{server.url}",
                                             "--embedder", f"openai:emb@{server.url}"])
    assert server.requests == 0
    with pytest.raises(PermissionDenied):  # the write itself is refused too, whatever the caller checks
        with as_evaluator(store) as ci:
            ci.value("RETURN fn::seval::add_generated([], 'm', 'p', NONE)")


def test_the_readme_shows_the_default_prompt_as_shipped():
    assert blocks("Questions a model writes", "text")[0].strip() == default_prompt().strip()
