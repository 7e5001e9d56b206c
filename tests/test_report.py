"""report --html: one self-contained page; headless Chromium checks that every chart rendered."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from surreal_eval import NotFound, evaluate, write_report
from surreal_eval.present.cli import app

runner = CliRunner()
CHROMIUM = shutil.which("chromium")
FIGURE = re.compile(r'<div id="([\w-]+)" class="plotly-graph-div[^"]*"')


@pytest.fixture
def history(seeded):
    """The seed with some synthetic questions, evaluated at floor 3 then floor 0 (money_back breaks at k = 3)."""
    seeded.query("UPDATE seval_question SET source = IF record::id(id) IN ['signin', 'new_card'] { 'synthetic' } ELSE { 'real' }")
    evaluate(seeded, ks=[1, 3, 5], label="floor 3")
    evaluate(seeded, ks=[1, 3, 5], params={"floor": 0.0}, label="</script><b>floor 0</b>")
    return seeded


def test_the_page_is_self_contained_and_has_every_section(history, tmp_path):
    path = write_report(history, tmp_path / "report.html", metric="recall@3")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script src" not in page and "<link" not in page  # nothing fetched: plotly.js is inline
    assert "Plotly.newPlot" in page and len(page) > 1_000_000
    assert re.search(r'<body data-figures="trend matrix slices-category slices-source">', page)
    assert FIGURE.findall(page) == ["trend", "matrix", "slices-category", "slices-source"]
    for heading in ("Trend", "Latest run", "Per question: recall@3", "Slices", "by question source, side by side"):
        assert heading in page
    # the comparison with the previous run names the broken question, and what changed
    assert "money_back 1.00→0.00" in page and "params.floor" in page
    # user text is escaped everywhere: the label cannot close a script or open a tag
    assert "<b>floor 0</b>" not in page and "&lt;/script&gt;&lt;b&gt;floor 0&lt;/b&gt;" in page
    assert "no question has a language" in page


def test_a_run_without_a_previous_run_and_without_slices(seeded, tmp_path):
    seeded.query("UPDATE seval_question SET category = NONE")
    evaluate(seeded, ks=[3])
    page = write_report(seeded, tmp_path / "one.html").read_text(encoding="utf-8")
    assert FIGURE.findall(page) == ["trend", "matrix"]  # recall@3: the run has no k = 5
    assert "no earlier run to compare with" in page
    assert "no question has a category or language or source" in page


def test_a_previous_run_without_the_metric_is_noted_not_compared(seeded, tmp_path):
    first = evaluate(seeded, ks=[3])
    evaluate(seeded, ks=[5], label="deeper")
    page = write_report(seeded, tmp_path / "two.html").read_text(encoding="utf-8")
    assert f"not compared with the previous run {first.run}" in page and "recall@5" in page
    only_first = write_report(seeded, tmp_path / "first.html", runs=["previous"]).read_text(encoding="utf-8")
    assert "1 run in" in only_first and "Per question: recall@3" in only_first


def test_no_run_to_report(db, tmp_path):
    with pytest.raises(NotFound, match="no finished run to report"):
        write_report(db, tmp_path / "none.html")


def test_cli_report_writes_the_page(tmp_path):
    store, page = tmp_path / "store", tmp_path / "page.html"
    url = ["--url", f"surrealkv://{store}"]
    assert runner.invoke(app, [*url, "init", "--demo"]).exit_code == 0
    assert runner.invoke(app, [*url, "evaluate", "--k", "1,5"]).exit_code == 0
    result = runner.invoke(app, [*url, "report", "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert f"wrote the report to {page}" in result.stdout and page.stat().st_size > 1_000_000
    bad = runner.invoke(app, [*url, "report", "--html", str(page), "--metric", "recall@3"])
    assert bad.exit_code == 2 and "not recall@3" in bad.stderr


def rendered_dom(page, profile) -> str:
    """The page's DOM after its scripts ran, from headless Chromium (no network, fresh profile)."""
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--virtual-time-budget=15000", "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=180, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def figures(dom: str) -> dict[str, str]:
    """Each chart's rendered markup, by the id of its div."""
    starts = [(m.start(), m.group(1)) for m in FIGURE.finditer(dom)]
    return {name: dom[start: starts[i + 1][0] if i + 1 < len(starts) else len(dom)] for i, (start, name) in enumerate(starts)}


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `apt-get install chromium` (.ci/run installs it)")
def test_chromium_renders_every_chart(history, tmp_path):
    page = write_report(history, tmp_path / "report.html", metric="recall@3")
    dom = rendered_dom(page, tmp_path / "profile")
    charts = figures(dom)
    assert list(charts) == ["trend", "matrix", "slices-category", "slices-source"]
    for name, markup in charts.items():
        # plotly adds js-plotly-plot and draws its SVG layers only when the script ran
        assert "js-plotly-plot" in markup[:200], name
        assert markup.count('class="main-svg"') >= 2, name
    # trend: one line per retriever for the metric shown, drawn through the two runs
    assert charts["trend"].count('class="trace scatter') == 4
    lines = re.findall(r'<path class="js-line" d="(M[\d.]+,[\d.]+L[^"]+)"', charts["trend"])
    assert len(lines) == 4  # (the legend's samples are short strokes, "M5,0h30")
    assert 'class="updatemenu-header"' in charts["trend"]  # the metric menu
    # matrix: the heatmap image, and one outlined cell: money_back x hybrid_floor broken
    assert re.search(r'<g class="hm"><image [^>]*href="data:image/png;base64,', charts["matrix"])
    outlines = re.findall(r'<g class="shape-group"[^>]*><path [^>]*style="([^"]*)"', charts["matrix"])
    assert len(outlines) == 1 and "stroke: rgb(17, 17, 17)" in outlines[0]
    # slices: grouped bars, one trace per retriever, each bar drawn
    for name in ("slices-category", "slices-source"):
        assert charts[name].count('class="trace bars"') == 4
        assert len(re.findall(r'<g class="point"><path d="M[^"]+"', charts[name])) >= 8


def test_the_trend_marks_a_change_of_question_count(seeded):
    from surreal_eval import history as read_history
    from surreal_eval.grammar import parse_metric
    from surreal_eval.present.figures import trend_figure
    from surreal_eval.runs.tune import assign_splits

    evaluate(seeded, ks=[3], label="all")
    sizes = assign_splits(seeded, seed=0)
    evaluate(seeded, ks=[3], params={"split": "dev"}, label="dev")
    runs = read_history(seeded)  # oldest first, as the page draws them
    figure = trend_figure(runs, parse_metric("recall@3"))
    notes = [a.text for a in figure.layout.annotations]
    assert f"8 → {sizes['dev']} questions" in notes


def test_the_matrix_sorts_question_ids_naturally():
    from surreal_eval.grammar import parse_metric
    from surreal_eval.models import QuestionResult, RunReport
    from surreal_eval.present.figures import _matrix_rows

    rows = [QuestionResult(question=f"seval_question:{n}", retriever="bm25", k=5, recall=1, hit_rate=1, precision=0.2,
                           mrr=1, ndcg=1, map=1, r_precision=1, ranked=[], relevant=[]) for n in (1, 10, 11, 2)]
    report = RunReport.model_construct(per_question=rows)
    questions, _ = _matrix_rows(report, parse_metric("recall@5"), set())
    assert questions == ["seval_question:1", "seval_question:2", "seval_question:10", "seval_question:11"]
