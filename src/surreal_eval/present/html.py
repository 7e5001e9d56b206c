"""One self-contained HTML page of the history: trend, latest run, per-question matrix, slices.

    write_report(db, path, runs=None, metric=None)   writes the page, returns its path
    render_report(db, runs=None, metric=None)        the page as a string

The charts are plotly figures; plotly.js is embedded inline once (no CDN, no network), so the
file opens anywhere. Sections:

0. when the latest run's questions hold several sources, the headline: each retriever's `metric` on
   the real questions (a question whose source is not set counts as real), every other source
   beside it with the gap, and what the all-question means below mix;
1. trend: each retriever's mean of every metric@k over the runs (a dropdown picks the metric),
   with a marker where the golden set or the corpus changed between two runs;
2. the latest run: its means per retriever and k with 95% bootstrap intervals, and what it
   recorded (parameters, golden and corpus fingerprints, harness checksum, git commit);
3. the per-question matrix of the latest run on `metric` (questions x retrievers, a heatmap
   coloured by score), with the questions fixed and broken since the previous run outlined,
   and the comparison with that run (difference, interval, paired p-value);
4. slices of the latest run by category, language and source (`slices.slices`), and, when its
   questions hold several sources, every source's mean side by side with its interval, real first
   and the gap beside each other source, and B - A per source against the previous run
   (analysis.sources);
5. the stale labels of its golden set: judgments whose document changed since they were made.

`runs` limits the page to those runs (ids, `latest`, `previous`); the last of them is "the latest".
`metric` (NAME@K) drives the matrix and the slices; default recall@5, or recall at the latest
run's deepest k when it did not measure k = 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from surrealdb import RecordID

from ..analysis.compare import Comparison
from ..analysis.report_data import SLICE_BY, report_data
from ..analysis.slices import Slice
from ..errors import InputError
from ..grammar import MetricSpec
from ..models import RunReport
from ..stats import format_p
from ..store.connection import Database
from .figures import escape, matrix_figure, run_name, short_id, slice_figure, slice_value, trend_figure
from .source_tables import delta_cell, headline_lines, mean_cell, mixed, mixed_note, source_grid

__all__ = ["render_report", "write_report"]

_PLOT_CONFIG = {"displaylogo": False, "responsive": True}

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1d2330; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #d8dde6; padding-bottom: 0.3rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d8dde6; padding: 0.25rem 0.55rem; text-align: right; }
th { background: #f1f4f9; } td.name, th.name { text-align: left; }
.muted { color: #5b6475; font-size: 0.9rem; }
.warning { background: #fff4d6; border-left: 4px solid #e0a100; padding: 0.5rem 0.8rem; margin: 0.6rem 0; }
.fixed { color: #1b6fd1; font-weight: 600; } .broken { color: #b3261e; font-weight: 600; }
code { background: #f1f4f9; padding: 0 0.2rem; }
.headline { font-size: 1.05rem; } .headline li { margin: 0.2rem 0; }
"""


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, names: int = 1) -> str:
    """An HTML table; the first `names` columns are left-aligned text, every cell escaped."""
    head = "".join(f'<th class="{"name" if i < names else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"name" if i < names else ""}">{escape(c)}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure_html(figure: Any, div_id: str) -> str:
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=_PLOT_CONFIG)


def _latest_section(report: RunReport) -> str:
    # with the ANN check, the HNSW list's ann_recall@k (the share of the exact top k it returned) is a column
    ann = {a.k: a for a in report.ann}
    headers = ["retriever", "k", *report.metrics, *(["ann_recall"] if ann else [])]
    rows = []
    for row in report.results:
        cells = []
        for metric in report.metrics:
            bounds = (row.intervals or {}).get(metric)
            value = _f(row.score(metric))
            cells.append(value if bounds is None else f"{value} [{bounds.low:.2f}, {bounds.high:.2f}]")
        if ann:
            share = ann.get(row.k) if row.retriever == "vector" else None
            cells.append("" if share is None else _f(share.ann_recall) + (
                f" [{share.interval.low:.2f}, {share.interval.high:.2f}]" if share.interval else ""))
        rows.append([row.retriever, row.k, *cells])
    p = report.params
    facts = [
        ["run", report.run],
        ["label", report.label or ""],
        ["recorded", report.created_at.strftime("%Y-%m-%d %H:%M:%S %Z") if report.created_at else ""],
        ["questions", report.questions],
        ["golden set", _fingerprint(report.golden, "questions")],
        ["corpus", f"{(report.corpus or {}).get('table', p.get('corpus'))}: " + _fingerprint(report.corpus, "documents")],
        ["parameters", ", ".join(f"{k} {v}" for k, v in sorted(p.items()))],
        ["harness checksum", (report.harness or "")[:16]],
        ["git commit", report.git_commit or ""],
        ["trigger", report.trigger or ""],
        ["engine checks", "; ".join(f"{c.check} {c.status} ({c.note})" for c in report.checks) or "not recorded"],
    ]
    parts = [
        "<h2>Latest run</h2>",
        '<p class="muted">mean per retriever and k, with its 95% bootstrap interval over questions</p>',
        _table(headers, rows, names=1),
        _table(["", ""], facts, names=2),
    ]
    if report.warning:
        parts.append(f'<p class="warning">{escape(report.warning)}</p>')
    return "\n".join(parts)


def _fingerprint(recorded: dict | None, count: str) -> str:
    if not recorded:
        return "not recorded"
    return f"{recorded.get(count)} {count}, fingerprint {str(recorded.get('fingerprint', ''))[:12]}"


def _comparison_section(comparison: Comparison | None, note: str | None, spec: MetricSpec) -> str:
    if comparison is None:
        return f'<p class="muted">{escape(note or "no earlier run to compare with")}</p>'
    parts = [
        f'<p class="muted">against the previous run {escape(comparison.run_a)}'
        f'{" (" + escape(comparison.label_a) + ")" if comparison.label_a else ""}: '
        f'<span class="fixed">▲ fixed</span> (score rose, blue outline) and '
        f'<span class="broken">▼ broken</span> (score fell, dotted black outline), paired over '
        f"{comparison.shared} questions</p>"
    ]
    parts += [f'<p class="warning">{escape(w)}</p>' for w in comparison.warnings if w.startswith("WARNING")]
    rows = []
    for row in comparison.rows:
        rows.append([
            row.retriever,
            _f(row.mean_a),
            _f(row.mean_b),
            f"{row.difference:+.3f} [{row.low:+.2f}, {row.high:+.2f}]",
            format_p(row.p_value),
            ", ".join(f"{short_id(d.question)} {d.before:.2f}→{d.after:.2f}" for d in row.fixed) or "-",
            ", ".join(f"{short_id(d.question)} {d.before:.2f}→{d.after:.2f}" for d in row.broken) or "-",
        ])
    parts.append(_table(["retriever", f"previous {spec}", f"latest {spec}", "difference [95% CI]", "p", "fixed", "broken"], rows, names=1))
    if comparison.overlap:
        parts.append("<p class=\"muted\">how far the latest top k moved from the previous (no judgment needed): overlap is the "
                     "Jaccard of the top-k ids, RBO the rank-biased overlap, unjudged the share of the top k nobody judged</p>")
        parts.append(_table(["retriever", "k", "questions", "overlap", "RBO", "unjudged previous", "unjudged latest"], [
            [o.retriever, str(o.k), str(o.n), _f(o.jaccard), f"{_f(o.rbo)} (p {o.p:g})", _f(o.unjudged_a, 2), _f(o.unjudged_b, 2)]
            for o in comparison.overlap], names=1))
    if comparison.misses:
        parts.append("<p class=\"muted\">broken questions whose new top k holds documents nobody judged "
                     "(a miss may be a missing label):</p>")
        parts.append(_table(["retriever", "metric", "question", "label it with"], [
            [m.retriever, m.metrics[0], m.question, command] for m in comparison.misses for command in m.commands], names=4))
    if comparison.culprits:
        parts.append("<p class=\"muted\">what broke them: the records that entered each broken question's top k or the lists it fuses (and the "
                     "ingest that brought each in), and the relevant records they pushed out:</p>")
        parts.append(_table(["retriever", "question", "metric", "entered", "pushed down or out", "in the lists it fuses"], [
            [c.retriever, c.question, f"{c.metric} {c.before:.2f}→{c.after:.2f}",
             "; ".join(f"{e.doc} at {e.rank} ({'not ingested' if e.how is None else e.how + (' in ' + ', '.join(e.ingests) if e.ingests else '')})"
                       for e in c.entered) or "-",
             "; ".join(f"{x.doc} {x.before}→{x.after if x.after is not None else 'out'}" for x in c.pushed) or "-",
             "; ".join(i.text for i in c.inputs) or "-"]
            for c in comparison.culprits[:50]], names=6))
    if comparison.changes:
        parts.append("<p class=\"muted\">what changed between the runs:</p>")
        parts.append(_table(["recorded", "previous", "latest"], [[c.field, c.a, c.b] for c in comparison.changes], names=3))
    return "\n".join(parts)


def _slices_section(rows: list[Slice], spec: MetricSpec, figures: list[str]) -> str:
    parts = [
        "<h2>Slices</h2>",
        f'<p class="muted">the latest run\'s {spec} per question, grouped by a field of the question; '
        "each slice with its question count and 95% bootstrap interval</p>",
    ]
    empty = []
    for field in SLICE_BY:
        mine = [r for r in rows if r.by == field]
        if not any(r.value is not None for r in mine):
            empty.append(field)
            continue
        figures_html = _figure_html(slice_figure(field, mine), f"slices-{field}")
        figures.append(f"slices-{field}")
        parts.append(f"<h3>by {field}</h3>")
        parts.append(figures_html)
        parts.append(_table(
            [field, "retriever", "questions", "mean", "95% interval"],
            [[slice_value(r.value), r.retriever, r.questions, _f(r.mean), f"[{r.low:.2f}, {r.high:.2f}]"] for r in mine],
            names=2,
        ))
    if empty:
        parts.append(
            f'<p class="muted">no question has a {" or ".join(empty)}: set '
            f"{'it' if len(empty) == 1 else 'them'} in the golden set to slice by {'it' if len(empty) == 1 else 'them'}</p>"
        )
    return "\n".join(parts)


def _headline_section(data) -> str:
    """At the top when the latest run's questions mix sources: each retriever's real figure, the others beside it."""
    if not data.sources:
        return ""
    lines = headline_lines(list(data.sources))
    if not lines:
        return f'<p class="warning">{escape(mixed_note(list(dict.fromkeys(r.source for r in data.sources))))}</p>'
    return "\n".join([
        f'<div class="headline"><p><strong>Headline: {escape(data.spec)} on the real questions</strong>, the figure to '
        f"quote; every other source beside it (gap = source - real). The tables and charts below are over "
        f"{escape(mixed(list(data.sources)))}.</p>",
        "<ul>", *(f"<li>{escape(line)}</li>" for line in lines), "</ul></div>"])


def _sources_section(data) -> str:
    """Every source's mean side by side (real first, the gap beside), and B - A per source."""
    if not data.sources:
        return ""
    sources, grid = source_grid(data.sources, mean_cell)
    parts = ["<h3>by question source, side by side</h3>",
             f'<p class="muted">{escape(data.spec)} per question source with its 95% interval; real first, the gap '
             "(source - real) beside each other source; a question whose source is not set counts as real</p>",
             _table(["retriever", *sources], [[retriever, *cells] for retriever, _, cells in grid], names=1)]
    mine = [d for d in data.source_deltas if d.metric == str(data.spec)]
    if mine:
        sources, grid = source_grid(mine, delta_cell)
        parts.append('<p class="muted">against the previous run, per source: previous→latest, latest - previous [95% interval]</p>')
        parts.append(_table(["retriever", *sources], [[retriever, *cells] for retriever, _, cells in grid], names=1))
    return "\n".join(parts)


def _stale_section(stale: list) -> str:
    """The judgments whose document changed since they were made: count, then question → document."""
    if not stale:
        return ""
    return "\n".join([
        "<h2>Stale labels</h2>",
        f'<p class="warning">{len(stale)} label{"s are" if len(stale) != 1 else " is"} stale: the document changed since it '
        "was labelled (relabel or confirm: surreal-eval golden label; surreal-eval golden stale lists them)</p>",
        _table(["question", "document", "grade", "labelled", "source", "by"],
               [[row.question, row.doc, f"{row.grade:g}", row.labelled_at.strftime("%Y-%m-%d %H:%M"), row.source, row.by or ""]
                for row in stale], names=2),
    ])


def render_report(
    db: Database, *, runs: Iterable[str | RecordID] | None = None, metric: str | None = None
) -> str:
    """The report page as one HTML string (see the module docstring)."""
    from plotly.offline import get_plotlyjs

    data = report_data(db, runs=runs, metric=metric)
    summaries, latest, spec, comparison, note = data.runs, data.latest, data.spec, data.comparison, data.note
    figures: list[str] = []
    trend = _figure_html(trend_figure(summaries, spec), "trend")
    figures.append("trend")
    matrix, matrix_note = matrix_figure(latest, spec, comparison)
    matrix_html = _figure_html(matrix, "matrix")
    figures.append("matrix")
    slices_html = _slices_section(data.slices, spec, figures)

    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = [
        "<h1>surreal-eval report</h1>",
        f'<p class="muted">{len(summaries)} run{"s" if len(summaries) != 1 else ""} in '
        f"{escape(db.settings.describe())}; latest {escape(latest.run)}"
        f'{" (" + escape(latest.label) + ")" if latest.label else ""}; generated {generated}</p>',
        _headline_section(data),
        "<h2>Trend</h2>",
        '<p class="muted">each retriever\'s mean per run; pick the metric in the menu. A dotted line marks a '
        "change of golden set or corpus between two runs: means either side of it are not directly comparable.</p>",
        trend,
        _latest_section(latest),
        f"<h2>Per question: {escape(spec)}</h2>",
        _comparison_section(comparison, note, spec),
        f'<p class="muted">{escape(matrix_note)}</p>' if matrix_note else "",
        matrix_html,
        slices_html,
        _sources_section(data),
        _stale_section(list(data.stale)),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>surreal-eval report: {escape(run_name(latest))}</title>"
        f"<style>{_CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script>'
        f'</head><body data-figures="{escape(" ".join(figures))}">\n'
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_report(
    db: Database, path: str | Path, *, runs: Iterable[str | RecordID] | None = None, metric: str | None = None
) -> Path:
    """Write the report page to `path` (see the module docstring); returns the path."""
    path = Path(path)
    page = render_report(db, runs=runs, metric=metric)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot write the report: {error.strerror}", source=str(path)) from None
    return path
