"""One self-contained HTML page of the history: trend, latest run, per-question matrix, slices.

    write_report(db, path, runs=None, metric=None)   writes the page, returns its path
    render_report(db, runs=None, metric=None)        the page as a string

The charts are plotly figures; plotly.js is embedded inline once (no CDN, no network), so the
file opens anywhere. Sections:

1. trend: each retriever's mean of every metric@k over the runs (a dropdown picks the metric),
   with a marker where the golden set or the corpus changed between two runs;
2. the latest run: its means per retriever and k with 95% bootstrap intervals, and what it
   recorded (parameters, golden and corpus fingerprints, harness checksum, git commit);
3. the per-question matrix of the latest run on `metric` (questions x retrievers, a heatmap
   coloured by score), with the questions fixed and broken since the previous run outlined,
   and the comparison with that run (difference, interval, paired p-value);
4. slices of the latest run by category, language and source (`slices.slices`), with real and
   synthetic questions side by side when the golden set has both.

`runs` limits the page to those runs (ids, `latest`, `previous`); the last of them is "the latest".
`metric` (NAME@K) drives the matrix and the slices; default recall@5, or recall at the latest
run's deepest k when it did not measure k = 5.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from surrealdb import RecordID

from .compare import Comparison, compare_reports, load_for_comparison, resolve_run
from .connection import Database, record_str
from .errors import ConfigError, InputError, NotFound
from .evaluation import load_run
from .history import history
from .metrics import METRICS, MetricSpec, parse_metric
from .models import RunReport, RunSummary
from .slices import Slice, slices

__all__ = ["render_report", "write_report"]

#: The matrix shows at most this many questions (changed ones first, then the lowest scoring).
MATRIX_ROWS = 300
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}
_SLICE_BY = ("category", "language", "source")

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
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _short(question: str) -> str:
    return question.split(":", 1)[-1]


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, names: int = 1) -> str:
    """An HTML table; the first `names` columns are left-aligned text, every cell escaped."""
    head = "".join(f'<th class="{"name" if i < names else ""}">{_e(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"name" if i < names else ""}">{_e(c)}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure_html(figure: Any, div_id: str) -> str:
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=_PLOT_CONFIG)


def _run_name(run: RunSummary | RunReport) -> str:
    return run.label or run.run.split(":", 1)[-1]


# ---------------------------------------------------------------------------------------------
# The charts
# ---------------------------------------------------------------------------------------------


def _specs(runs: Sequence[RunSummary]) -> list[MetricSpec]:
    ks = sorted({k for run in runs for k in run.ks})
    return [MetricSpec(name, k) for name in METRICS for k in ks]


def trend_figure(runs: Sequence[RunSummary], shown: MetricSpec) -> Any:
    """Lines of every retriever's mean per run, one set per metric@k, a dropdown choosing the set."""
    import plotly.graph_objects as go

    retrievers: list[str] = []
    for run in runs:
        retrievers += [r for r in run.retrievers if r not in retrievers]
    specs = _specs(runs)
    if shown not in specs:
        shown = specs[0]
    x = [run.run for run in runs]
    customdata = [
        [_run_name(run), run.created_at.strftime("%Y-%m-%d %H:%M:%S"), run.questions, run.trigger or ""] for run in runs
    ]
    figure = go.Figure()
    for spec in specs:
        for retriever in retrievers:
            figure.add_trace(
                go.Scatter(
                    x=x,
                    y=[run.mean(retriever, spec.name, spec.k) for run in runs],
                    name=retriever,
                    mode="lines+markers",
                    visible=spec == shown,
                    customdata=customdata,
                    meta=str(spec),
                    hovertemplate=(
                        f"{_e(retriever)} %{{meta}} = %{{y:.3f}}<br>%{{customdata[0]}} · %{{customdata[1]}}"
                        "<br>%{customdata[2]} questions · %{customdata[3]}<extra></extra>"
                    ),
                )
            )
    buttons = [
        {
            "label": str(spec),
            "method": "update",
            "args": [
                {"visible": [s == spec for s in specs for _ in retrievers]},
                {"yaxis": {"title": {"text": str(spec)}, "range": [-0.02, 1.02]}},
            ],
        }
        for spec in specs
    ]
    for i in range(1, len(runs)):
        notes = []
        if (runs[i].golden or {}).get("fingerprint") != (runs[i - 1].golden or {}).get("fingerprint"):
            notes.append("golden set changed")
        if (runs[i].corpus or {}).get("fingerprint") != (runs[i - 1].corpus or {}).get("fingerprint"):
            notes.append("corpus changed")
        if notes:
            figure.add_vline(x=i - 0.5, line={"dash": "dot", "color": "#888"})
            figure.add_annotation(
                x=i - 0.5, y=1.0, yref="paper", text=", ".join(notes), showarrow=False, yanchor="bottom", font={"size": 10}
            )
    figure.update_layout(
        template="plotly_white",
        height=440,
        margin={"t": 70, "l": 60, "r": 20, "b": 80},
        updatemenus=[{"buttons": buttons, "active": specs.index(shown), "x": 0, "xanchor": "left", "y": 1.22, "yanchor": "top"}],
        xaxis={"type": "category", "tickmode": "array", "tickvals": x, "ticktext": [_run_name(r) for r in runs], "title": {"text": "run"}},
        yaxis={"title": {"text": str(shown)}, "range": [-0.02, 1.02]},
        legend={"title": {"text": "retriever"}},
    )
    return figure


def _matrix_rows(report: RunReport, spec: MetricSpec, changed: set[str]) -> tuple[list[str], str | None]:
    scores: dict[str, list[float]] = {}
    for row in report.per_question or []:
        if row.k == spec.k:
            scores.setdefault(row.question, []).append(getattr(row, spec.name))
    questions = sorted(scores)
    if len(questions) <= MATRIX_ROWS:
        return questions, None
    keep = [q for q in questions if q in changed][:MATRIX_ROWS]
    rest = sorted((q for q in questions if q not in changed), key=lambda q: (sum(scores[q]) / len(scores[q]), q))
    keep += rest[: MATRIX_ROWS - len(keep)]
    note = (
        f"showing {len(keep)} of {len(questions)} questions: those fixed or broken since the previous run, "
        f"then the lowest scoring"
    )
    return sorted(keep), note


def matrix_figure(report: RunReport, spec: MetricSpec, comparison: Comparison | None) -> tuple[Any, str | None]:
    """Heatmap of `spec` per question (rows) and retriever (columns); fixed and broken cells outlined."""
    import plotly.graph_objects as go

    marks: dict[tuple[str, str], tuple[str, float]] = {}
    for row in comparison.rows if comparison else []:
        for delta in row.fixed:
            marks[(delta.question, row.retriever)] = ("fixed", delta.before)
        for delta in row.broken:
            marks[(delta.question, row.retriever)] = ("broken", delta.before)
    questions, note = _matrix_rows(report, spec, {q for q, _ in marks})
    cells = {(r.question, r.retriever): getattr(r, spec.name) for r in report.per_question or [] if r.k == spec.k}
    retrievers = report.retrievers
    z, text, hover = [], [], []
    for question in questions:
        z.append([cells.get((question, r)) for r in retrievers])
        text_row, hover_row = [], []
        for retriever in retrievers:
            value = cells.get((question, retriever))
            mark = marks.get((question, retriever))
            symbol = {"fixed": " ▲", "broken": " ▼"}.get(mark[0], "") if mark else ""
            text_row.append("" if value is None else f"{value:.2f}{symbol}")
            hover_row.append(f"{mark[0]}: was {mark[1]:.3f} in the previous run" if mark else "")
        text.append(text_row)
        hover.append(hover_row)
    labels = [_short(q) for q in questions]
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=retrievers,
            y=labels,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            zmin=0,
            zmax=1,
            colorscale="RdYlGn",
            colorbar={"title": {"text": str(spec)}},
            hovertemplate="%{y} · %{x}<br>" + str(spec) + " = %{z:.3f}<br>%{customdata}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    for (question, retriever), (kind, _) in marks.items():
        if question not in questions:
            continue
        x, y = retrievers.index(retriever), questions.index(question)
        figure.add_shape(
            type="rect",
            x0=x - 0.5, x1=x + 0.5, y0=y - 0.5, y1=y + 0.5,
            line={"color": "#1b6fd1" if kind == "fixed" else "#111111", "width": 3, "dash": "solid" if kind == "fixed" else "dot"},
        )
    figure.update_layout(
        template="plotly_white",
        height=max(320, 26 * len(questions) + 140),
        margin={"t": 30, "l": 140, "r": 20, "b": 40},
        xaxis={"side": "top", "type": "category"},
        yaxis={"autorange": "reversed", "type": "category"},
    )
    return figure, note


def _slice_value(value: str | None) -> str:
    return "(not set)" if value is None else value


def slice_figure(field: str, rows: Sequence[Slice]) -> Any:
    """Grouped bars: one group per value of `field`, one bar per retriever, with the bootstrap interval."""
    import plotly.graph_objects as go

    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    values = list(dict.fromkeys(_slice_value(r.value) for r in rows))
    figure = go.Figure()
    for retriever in retrievers:
        mine = {_slice_value(r.value): r for r in rows if r.retriever == retriever}
        figure.add_trace(
            go.Bar(
                name=retriever,
                x=values,
                y=[mine[v].mean if v in mine else None for v in values],
                error_y={
                    "type": "data",
                    "array": [mine[v].high - mine[v].mean if v in mine else 0 for v in values],
                    "arrayminus": [mine[v].mean - mine[v].low if v in mine else 0 for v in values],
                },
                customdata=[[mine[v].questions, mine[v].low, mine[v].high] if v in mine else [0, 0, 0] for v in values],
                hovertemplate=(
                    f"{_e(retriever)} · %{{x}}<br>mean %{{y:.3f}} [%{{customdata[1]:.2f}}, %{{customdata[2]:.2f}}]"
                    "<br>%{customdata[0]} questions<extra></extra>"
                ),
            )
        )
    metric = rows[0].metric if rows else ""
    figure.update_layout(
        template="plotly_white",
        barmode="group",
        height=380,
        margin={"t": 40, "l": 60, "r": 20, "b": 60},
        title={"text": f"{metric} by {field}"},
        yaxis={"title": {"text": metric}, "range": [0, 1.05]},
        xaxis={"type": "category", "title": {"text": field}},
    )
    return figure


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------


def _choose_metric(metric: str | None, report: RunReport) -> MetricSpec:
    if metric is not None:
        spec = parse_metric(metric)
        if spec.k not in report.ks:
            raise ConfigError(
                f"the latest run {report.run} measured k = {', '.join(map(str, report.ks))}, not {spec}"
            )
        return spec
    return MetricSpec("recall", 5 if 5 in report.ks else max(report.ks))


def _select_runs(db: Database, runs: Iterable[str | RecordID] | None) -> list[RunSummary]:
    summaries = history(db)
    if runs is not None:
        wanted = {record_str(resolve_run(db, ref)) for ref in runs}
        summaries = [s for s in summaries if s.run in wanted]
    if not summaries:
        raise NotFound("no finished run to report: `surreal-eval evaluate` records one")
    return summaries


def _latest_section(report: RunReport) -> str:
    headers = ["retriever", "k", *METRICS]
    rows = []
    for row in report.results:
        cells = []
        for metric in METRICS:
            bounds = (row.intervals or {}).get(metric)
            value = _f(getattr(row, metric))
            cells.append(value if bounds is None else f"{value} [{bounds.low:.2f}, {bounds.high:.2f}]")
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
    ]
    parts = [
        "<h2>Latest run</h2>",
        '<p class="muted">mean per retriever and k, with its 95% bootstrap interval over questions</p>',
        _table(headers, rows, names=1),
        _table(["", ""], facts, names=2),
    ]
    if report.warning:
        parts.append(f'<p class="warning">{_e(report.warning)}</p>')
    return "\n".join(parts)


def _fingerprint(recorded: dict | None, count: str) -> str:
    if not recorded:
        return "not recorded"
    return f"{recorded.get(count)} {count}, fingerprint {str(recorded.get('fingerprint', ''))[:12]}"


def _comparison_section(comparison: Comparison | None, note: str | None, spec: MetricSpec) -> str:
    if comparison is None:
        return f'<p class="muted">{_e(note or "no earlier run to compare with")}</p>'
    parts = [
        f'<p class="muted">against the previous run {_e(comparison.run_a)}'
        f'{" (" + _e(comparison.label_a) + ")" if comparison.label_a else ""}: '
        f'<span class="fixed">▲ fixed</span> (score rose, blue outline) and '
        f'<span class="broken">▼ broken</span> (score fell, dotted black outline), paired over '
        f"{comparison.shared} questions</p>"
    ]
    parts += [f'<p class="warning">{_e(w)}</p>' for w in comparison.warnings if w.startswith("WARNING")]
    rows = []
    for row in comparison.rows:
        rows.append([
            row.retriever,
            _f(row.mean_a),
            _f(row.mean_b),
            f"{row.difference:+.3f} [{row.low:+.2f}, {row.high:+.2f}]",
            f"{row.p_value:.3f}",
            ", ".join(f"{_short(d.question)} {d.before:.2f}→{d.after:.2f}" for d in row.fixed) or "-",
            ", ".join(f"{_short(d.question)} {d.before:.2f}→{d.after:.2f}" for d in row.broken) or "-",
        ])
    parts.append(_table(["retriever", f"previous {spec}", f"latest {spec}", "difference [95% CI]", "p", "fixed", "broken"], rows, names=1))
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
    for field in _SLICE_BY:
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
            [[_slice_value(r.value), r.retriever, r.questions, _f(r.mean), f"[{r.low:.2f}, {r.high:.2f}]"] for r in mine],
            names=2,
        ))
    sources = {r.value for r in rows if r.by == "source"}
    if {"real", "synthetic"} <= sources:
        parts.append("<h3>real and synthetic questions side by side</h3>")
        by_retriever: dict[str, dict[str, Slice]] = {}
        for r in rows:
            if r.by == "source" and r.value in {"real", "synthetic"}:
                by_retriever.setdefault(r.retriever, {})[r.value] = r
        table_rows = []
        for retriever, pair in by_retriever.items():
            real, synthetic = pair.get("real"), pair.get("synthetic")
            table_rows.append([
                retriever,
                *(f"{_f(s.mean)} [{s.low:.2f}, {s.high:.2f}] (n = {s.questions})" if s else "-" for s in (real, synthetic)),
                f"{synthetic.mean - real.mean:+.3f}" if real and synthetic else "-",
            ])
        parts.append(_table(["retriever", "real", "synthetic", "synthetic - real"], table_rows, names=1))
    if empty:
        parts.append(
            f'<p class="muted">no question has a {" or ".join(empty)}: set '
            f"{'it' if len(empty) == 1 else 'them'} in the golden set to slice by {'it' if len(empty) == 1 else 'them'}</p>"
        )
    return "\n".join(parts)


def render_report(
    db: Database, *, runs: Iterable[str | RecordID] | None = None, metric: str | None = None
) -> str:
    """The report page as one HTML string (see the module docstring)."""
    from plotly.offline import get_plotlyjs

    summaries = _select_runs(db, runs)
    latest = load_run(db, summaries[-1].run, per_question=True)
    spec = _choose_metric(metric, latest)
    comparison, note = None, None
    if len(summaries) > 1:
        previous = load_for_comparison(db, summaries[-2].run)
        try:
            comparison = compare_reports(previous, latest, metrics=[str(spec)])
        except ConfigError as error:
            note = f"not compared with the previous run {previous.run}: {error}"
    figures: list[str] = []
    trend = _figure_html(trend_figure(summaries, spec), "trend")
    figures.append("trend")
    matrix, matrix_note = matrix_figure(latest, spec, comparison)
    matrix_html = _figure_html(matrix, "matrix")
    figures.append("matrix")
    slices_html = _slices_section(slices(db, latest.run, str(spec), by=_SLICE_BY), spec, figures)

    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = [
        "<h1>surreal-eval report</h1>",
        f'<p class="muted">{len(summaries)} run{"s" if len(summaries) != 1 else ""} in '
        f"{_e(db.settings.describe())}; latest {_e(latest.run)}"
        f'{" (" + _e(latest.label) + ")" if latest.label else ""}; generated {generated}</p>',
        "<h2>Trend</h2>",
        '<p class="muted">each retriever\'s mean per run; pick the metric in the menu. A dotted line marks a '
        "change of golden set or corpus between two runs: means either side of it are not directly comparable.</p>",
        trend,
        _latest_section(latest),
        f"<h2>Per question: {_e(spec)}</h2>",
        _comparison_section(comparison, note, spec),
        f'<p class="muted">{_e(matrix_note)}</p>' if matrix_note else "",
        matrix_html,
        slices_html,
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>surreal-eval report: {_e(_run_name(latest))}</title>"
        f"<style>{_CSS}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script>'
        f'</head><body data-figures="{_e(" ".join(figures))}">\n'
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
