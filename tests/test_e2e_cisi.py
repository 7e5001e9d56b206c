"""Issue 5 end to end on CISI, through the CLI: load, evaluate, change a parameter, ingest more
documents (which records a run by itself), then compare, gate and report show the change."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from surreal_eval.present.cli import app

from .datasets import cisi

CISI = cisi()  # shipped in tests/data
pytestmark = pytest.mark.slow

runner = CliRunner()


def test_history_guards_quality_on_cisi(tmp_path):
    url = ["--url", f"surrealkv://{tmp_path / 'store'}"]

    def cli(*args, code=0):
        result = runner.invoke(app, [*url, *args])
        assert result.exit_code == code, result.output
        return result.stdout

    assert "1460 articles" in cli("load", "beir", str(CISI)).replace(",", "")
    baseline = json.loads(cli("evaluate", "--k", "1,5,10", "--note", "baseline", "--json"))
    changed = json.loads(cli("evaluate", "--k", "1,5,10", "--rrf-k", "1", "--floor", "0", "--note", "rrf 1", "--json"))
    assert changed["params"]["rrf_k"] == 1 and baseline["params"]["rrf_k"] == 60

    # ingest more documents: copies of ten CISI abstracts under new ids; the ingest evaluates by itself
    cli("watch", "set", "--k", "1,5,10")
    extra = tmp_path / "extra.jsonl"
    with (CISI / "corpus.jsonl").open() as corpus, (CISI / "embeddings" / "corpus.jsonl").open() as vectors:
        rows = [(json.loads(d), json.loads(v)) for d, v, _ in zip(corpus, vectors, range(10))]
    extra.write_text("".join(json.dumps({"id": f"extra-{d['_id']}", "title": d["title"], "content": d["text"],
                                         "embedding": v["embedding"]}) + "\n" for d, v in rows))
    assert "the ingest recorded run" in cli("load", "corpus", str(extra))
    runs = json.loads(cli("runs", "list", "--json"))
    assert [r["label"] for r in runs][:2] == ["baseline", "rrf 1"]
    assert runs[-1]["trigger"] == "ingest" and runs[-1]["corpus"]["documents"] == 1470

    # compare: the parameter change, with fixed and broken questions and p-values
    comparison = json.loads(cli("compare", baseline["run"], changed["run"], "--metric", "recall@10", "--json"))
    text = json.dumps(comparison)
    assert "rrf_k" in text and "p_value" in text
    # the ingest's run against the one before: the corpus change is listed
    assert "1470" in cli("compare", "previous", "latest", "--metric", "recall@10", "--json")

    junit = tmp_path / "gate.xml"
    gated = runner.invoke(app, [*url, "gate", "--baseline", baseline["run"], "--candidate", changed["run"],
                                "--metric", "recall@10", "--junit", str(junit)])
    assert gated.exit_code in (0, 1), gated.output
    cases = ET.parse(junit).getroot().iter("testcase")
    assert {c.get("classname") for c in cases} >= {"gate.bm25", "gate.hybrid"}

    page = tmp_path / "report.html"
    cli("report", "--html", str(page))
    html = page.read_text()
    assert "baseline" in html and "rrf 1" in html and "plotly" in html.lower()
