"""Means per question source, real first with the gap beside each other source (analysis.sources), as rich
tables for slices, evaluate and compare, and as cells the HTML report reuses. The library never prints."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.sources import REFERENCE, SourceDelta, SourceMean

__all__ = ["mean_cell", "delta_cell", "source_grid", "show_source_means", "show_source_deltas"]


def mean_cell(row: SourceMean) -> str:
    """`0.650 [0.40, 0.90] n=4`, and for a source other than real its gap: `, gap -0.150`."""
    gap = "" if row.gap is None else f", gap {row.gap:+.3f}"
    return f"{row.mean:.3f} [{row.low:.2f}, {row.high:.2f}] n={row.questions}{gap}"


def delta_cell(row: SourceDelta) -> str:
    """`0.500→0.750 +0.250 [+0.00, +0.50] n=2`."""
    return f"{row.mean_a:.3f}→{row.mean_b:.3f} {row.difference:+.3f} [{row.low:+.2f}, {row.high:+.2f}] n={row.questions}"


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
    table = Table(title=title)
    table.add_column("retriever")
    for source in sources:
        table.add_column(escape(source), justify="right")
    for retriever, _, cells in grid:
        table.add_row(escape(retriever), *cells)
    console.print(table)


def show_source_deltas(console: Console, rows: list[SourceDelta], metric: str | None = None) -> None:
    """B - A per question source for `metric` (default: recall@5 if compared, else the first metric)."""
    if not rows:
        return
    metrics = list(dict.fromkeys(r.metric for r in rows))
    chosen = metric if metric in metrics else ("recall@5" if "recall@5" in metrics else metrics[0])
    mine = [r for r in rows if r.metric == chosen]
    sources, grid = source_grid(mine, delta_cell)
    more = " (--json has every metric)" if len(metrics) > 1 else ""
    _print_grid(console, f"{chosen} by question source: A→B, B - A [95% interval]{more}", sources, grid)
