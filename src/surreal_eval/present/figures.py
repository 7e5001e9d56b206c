"""The report's plotly figures: the trend over runs, the per-question matrix, the slices."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from ..analysis.compare import Comparison
from ..analysis.slices import Slice
from ..grammar import MetricSpec
from ..models import RunReport, RunSummary

__all__ = ["MATRIX_ROWS", "escape", "short_id", "run_name", "trend_figure", "matrix_figure", "slice_figure", "slice_value"]

#: The matrix shows at most this many questions (changed ones first, then the lowest scoring).
MATRIX_ROWS = 300


def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def short_id(question: str) -> str:
    return question.split(":", 1)[-1]


def natural_key(text: str) -> list[Any]:
    """Sort key putting `q2` before `q10`: runs of digits compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part]


def run_name(run: RunSummary | RunReport) -> str:
    return run.label or run.run.split(":", 1)[-1]


# ---------------------------------------------------------------------------------------------
# The charts
# ---------------------------------------------------------------------------------------------


def _specs(runs: Sequence[RunSummary]) -> list[MetricSpec]:
    ks = sorted({k for run in runs for k in run.ks})
    names = list(dict.fromkeys(name for run in runs for name in run.metrics))
    return [MetricSpec(name, k) for name in names for k in ks]


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
        [run_name(run), run.created_at.strftime("%Y-%m-%d %H:%M:%S"), run.questions, run.trigger or ""] for run in runs
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
                        escape(retriever) + " %{meta} = %{y:.3f}<br>%{customdata[0]} · %{customdata[1]}"
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
        if runs[i].questions != runs[i - 1].questions:  # a split, or a golden set that grew: not one trend
            notes.append(f"{runs[i - 1].questions} → {runs[i].questions} questions")
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
        xaxis={"type": "category", "tickmode": "array", "tickvals": x, "ticktext": [run_name(r) for r in runs], "title": {"text": "run"}},
        yaxis={"title": {"text": str(shown)}, "range": [-0.02, 1.02]},
        legend={"title": {"text": "retriever"}},
    )
    return figure


def _matrix_rows(report: RunReport, spec: MetricSpec, changed: set[str]) -> tuple[list[str], str | None]:
    scores: dict[str, list[float]] = {}
    for row in report.per_question or []:
        if row.k == spec.k:
            scores.setdefault(row.question, []).append(row.score(spec.name))
    questions = sorted(scores, key=natural_key)
    if len(questions) <= MATRIX_ROWS:
        return questions, None
    keep = [q for q in questions if q in changed][:MATRIX_ROWS]
    rest = sorted((q for q in questions if q not in changed), key=lambda q: (sum(scores[q]) / len(scores[q]), natural_key(q)))
    keep += rest[: MATRIX_ROWS - len(keep)]
    note = (
        f"showing {len(keep)} of {len(questions)} questions: those fixed or broken since the previous run, "
        f"then the lowest scoring"
    )
    return sorted(keep, key=natural_key), note


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
    cells = {(r.question, r.retriever): r.score(spec.name) for r in report.per_question or [] if r.k == spec.k}
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
    labels = [short_id(q) for q in questions]
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


def slice_value(value: str | None) -> str:
    return "(not set)" if value is None else value


def slice_figure(field: str, rows: Sequence[Slice]) -> Any:
    """Grouped bars: one group per value of `field`, one bar per retriever, with the bootstrap interval."""
    import plotly.graph_objects as go

    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    values = list(dict.fromkeys(slice_value(r.value) for r in rows))
    figure = go.Figure()
    for retriever in retrievers:
        mine = {slice_value(r.value): r for r in rows if r.retriever == retriever}
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
                    escape(retriever) + " · %{x}<br>mean %{y:.3f} [%{customdata[1]:.2f}, %{customdata[2]:.2f}]"
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
