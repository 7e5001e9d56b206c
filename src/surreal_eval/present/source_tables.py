"""Means per question source, real first with the gap beside each other source (analysis.sources), as rich
tables for slices, evaluate, compare and gate, and as cells the HTML report reuses; and the headline those
commands and the report lead with when the questions mix sources: each retriever's figure on the real
questions first, every other source beside it. The library never prints."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..analysis.sources import REFERENCE, SourceDelta, SourceMean
from .fit_tables import Column, print_table

__all__ = ["mean_cell", "delta_cell", "source_grid", "headline_lines", "delta_headline_lines", "mixed", "mixed_note",
           "show_headline", "headline_and_notes", "show_delta_headline", "chosen_metric", "show_source_means", "show_source_deltas"]


def mean_cell(row: SourceMean) -> str:
    """`0.650 [0.40, 0.90] n=4`, and for a source other than real its gap: `, gap -0.150`."""
    gap = "" if row.gap is None else f", gap {row.gap:+.3f}"
    return f"{row.mean:.3f} [{row.low:.2f}, {row.high:.2f}] n={row.questions}{gap}"


def delta_cell(row: SourceDelta) -> str:
    """`0.500→0.750 +0.250 [+0.00, +0.50] n=2`."""
    return f"{row.mean_a:.3f}→{row.mean_b:.3f} {row.difference:+.3f} [{row.low:+.2f}, {row.high:+.2f}] n={row.questions}"


def headline_lines(rows: list[SourceMean]) -> list[str]:
    """Per retriever, its real figure first and every other source beside it:
    `bm25 recall@5 on the 5 real questions 0.800 [0.40, 1.00]; synthetic 0.667 [0.00, 1.00] (n=3), gap -0.133`.
    Empty when no question is real or the questions hold one source (`rows` empty)."""
    lines = []
    for retriever in dict.fromkeys(r.retriever for r in rows):
        mine = [r for r in rows if r.retriever == retriever]
        real = next((r for r in mine if r.source == REFERENCE), None)
        if real is None:
            continue
        others = "; ".join(f"{r.source} {r.mean:.3f} [{r.low:.2f}, {r.high:.2f}] (n={r.questions}), gap {r.gap:+.3f}"
                           for r in mine if r is not real)
        lines.append(f"{retriever} {real.metric} on the {real.questions} real question{'s' if real.questions != 1 else ''} "
                     f"{real.mean:.3f} [{real.low:.2f}, {real.high:.2f}]" + (f"; {others}" if others else ""))
    return lines


def delta_headline_lines(rows: list[SourceDelta], metric: str) -> list[str]:
    """Per retriever, B - A of `metric` on the real questions first and every other source beside it:
    `vector recall@3 on the 5 real questions 0.800→0.600 -0.200 [-0.40, +0.00]; synthetic 0.500→0.500 ...`."""
    lines = []
    mine = [r for r in rows if r.metric == metric]
    for retriever in dict.fromkeys(r.retriever for r in mine):
        real = next((r for r in mine if r.retriever == retriever and r.source == REFERENCE), None)
        if real is None:
            continue
        others = "; ".join(f"{r.source} {delta_cell(r)}" for r in mine if r.retriever == retriever and r is not real)
        lines.append(f"{retriever} {metric} on the {real.questions} real question{'s' if real.questions != 1 else ''} "
                     f"{delta_cell(real).rsplit(' n=', 1)[0]}" + (f"; {others}" if others else ""))
    return lines


def mixed_note(sources: list[str]) -> str:
    """Why there is no real headline when the questions hold several sources and none is real."""
    return (f"no question is real: every figure is over {', '.join(sources)} questions, not the questions of real users "
            f"(a question whose source is not set counts as {REFERENCE})")


def show_headline(console: Console, rows: list[SourceMean]) -> None:
    """Before the main table: the real figure per retriever with every other source beside it, and what the
    main table mixes. Nothing when the questions hold one source."""
    lines, notes = headline_and_notes(rows)
    for line in lines:
        console.print(f"headline: {line}", markup=False, highlight=False, soft_wrap=True)
    for note in notes:
        console.print(note, markup=False)


def headline_and_notes(rows: list[SourceMean]) -> tuple[list[str], list[str]]:
    """What `show_headline` prints, for --json too: the headline lines (without `headline: `) and the note after
    them (what the all-question means mix, or that no question is real). Both empty when the questions hold one source."""
    if not rows:
        return [], []
    lines = headline_lines(rows)
    if not lines:
        return [], [mixed_note(list(dict.fromkeys(r.source for r in rows)))]
    return lines, [f"quote the real figure: the means below are over {mixed(rows)}"]


def mixed(rows: list[SourceMean]) -> str:
    """`all 8 questions, mixing sources (real 5, synthetic 3)`: what an all-question mean is over."""
    first = [r for r in rows if r.retriever == rows[0].retriever]
    return (f"all {sum(r.questions for r in first)} questions, mixing sources ("
            + ", ".join(f"{r.source} {r.questions}" for r in first) + ")")


def source_grid(rows: list, cell) -> tuple[list[str], list[tuple[str, str, list[str]]]]:
    """The sources (real first, as the rows give them) and, per (retriever, metric), one cell per source."""
    sources = list(dict.fromkeys(r.source for r in rows))
    keyed: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        keyed.setdefault((row.retriever, row.metric), {})[row.source] = cell(row)
    return sources, [(retriever, metric, [cells.get(s, "-") for s in sources]) for (retriever, metric), cells in keyed.items()]


def show_source_means(console: Console, rows: list[SourceMean]) -> None:
    """Each retriever's mean per question source: real first, each other source with its gap to real."""
    if not rows:
        return
    sources, grid = source_grid(rows, mean_cell)
    gap = f", gap = source - {REFERENCE}" if REFERENCE in sources else ""
    _print_grid(console, f"{rows[0].metric} by question source [95% interval]{gap} (source not set counts as {REFERENCE})",
                sources, grid)


def _print_grid(console: Console, title: str, sources: list[str], grid) -> None:
    """One row per retriever, one column per question source."""
    print_table(console, [Column("retriever", key=True), *(Column(escape(source), "right", stack=True) for source in sources)],
                [[escape(retriever), *cells] for retriever, _, cells in grid], title=title)


def chosen_metric(rows: list[SourceDelta], metric: str | None = None) -> str:
    """The metric the per-source tables and headlines show: `metric` if compared, else recall@5, else the first."""
    metrics = list(dict.fromkeys(r.metric for r in rows))
    return metric if metric in metrics else ("recall@5" if "recall@5" in metrics else metrics[0])


def show_delta_headline(console: Console, rows: list[SourceDelta], metric: str | None = None) -> None:
    """Before the B - A table: per retriever, the difference on the real questions first, every other source beside it."""
    if not rows:
        return
    chosen = chosen_metric(rows, metric)
    lines = delta_headline_lines(rows, chosen)
    if not lines:
        console.print(mixed_note(list(dict.fromkeys(r.source for r in rows))), markup=False)
        return
    for line in lines:
        console.print(f"headline: {line}", markup=False, highlight=False, soft_wrap=True)
    n = sum(r.questions for r in rows if r.metric == chosen and r.retriever == rows[0].retriever)
    console.print(f"quote the real figure: the table below pairs all {n} questions, mixing sources", markup=False)


def show_source_deltas(console: Console, rows: list[SourceDelta], metric: str | None = None) -> None:
    """B - A per question source for `metric` (default: recall@5 if compared, else the first metric)."""
    if not rows:
        return
    metrics = list(dict.fromkeys(r.metric for r in rows))
    chosen = chosen_metric(rows, metric)
    mine = [r for r in rows if r.metric == chosen]
    sources, grid = source_grid(mine, delta_cell)
    more = " (--json has every metric)" if len(metrics) > 1 and metric is None else ""
    _print_grid(console, f"{chosen} by question source: A→B, B - A [95% interval]{more}", sources, grid)
