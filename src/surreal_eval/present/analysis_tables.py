"""Terminal rendering of comparisons, gates and slices for the CLI (rich tables). The library never prints."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from ..analysis.compare import Comparison, PairedDelta, RetrieverComparison
from ..analysis.gate import GateResult
from ..analysis.groups import ManyComparison
from ..analysis.overlap import Miss, Overlap
from ..analysis.slices import Slice
from ..analysis.sources import REFERENCE
from ..stats import format_p
from .fit_tables import Column, print_table
from .source_tables import show_delta_headline, show_source_deltas
from .writing import command_lines

__all__ = ["show_comparison", "show_gate", "show_many", "show_retriever_comparison", "show_slices"]


def _short(question: str) -> str:
    return question.split(":", 1)[-1]


def _run(run: str, label: str | None) -> str:
    return escape(run + (f" ({label})" if label else ""))


def _questions(deltas, limit: int = 12) -> str:
    shown = ", ".join(f"{_short(d.question)} {d.before:.2f}→{d.after:.2f}" for d in deltas[:limit])
    more = f" (and {len(deltas) - limit} more)" if len(deltas) > limit else ""
    return escape(shown + more)


def _warnings(console: Console, warnings: list[str]) -> None:
    for warning in warnings:
        style = "bold red" if warning.startswith("WARNING") else "yellow"
        console.print(f"[{style}]{escape(warning)}[/{style}]")


def _delta_table(console: Console, title: str, first: str, rows: list[tuple[str, PairedDelta]], a: str, b: str) -> None:
    """The paired differences, one row per retriever (or pair) and metric, fitted to the console (fit_tables)."""
    columns = [Column(escape(first), key=True), Column("metric", key=True), Column(escape(a), "right"), Column(escape(b), "right"),
               Column("difference [95% CI]", "right", stack=True),
               *(Column(name, "right") for name in ("p", "p Holm", "fixed", "broken"))]
    cells = []
    for name, row in rows:
        p = format_p(row.p_value) + ("" if row.exact else "~")
        cells.append([
            escape(name), row.metric, f"{row.mean_a:.3f}", f"{row.mean_b:.3f}",
            f"{row.difference:+.3f} [{row.low:+.3f}, {row.high:+.3f}]" + (" tied" if row.tied else ""), p,
            "-" if row.p_adjusted is None else format_p(row.p_adjusted),
            str(len(row.fixed)) if row.fixed else "-", str(len(row.broken)) if row.broken else "-",
        ])
    print_table(console, columns, cells, title=title)


def _changed_questions(console: Console, rows: list[tuple[str, PairedDelta]]) -> None:
    changed = [(name, row) for name, row in rows if row.fixed or row.broken]
    if not changed:
        console.print("no question changed its score")
        return
    console.print("[bold]questions that changed[/bold] (before→after):")
    for name, row in changed:
        if row.broken:
            console.print(f"  {escape(name)} {row.metric} [red]broken[/red]: {_questions(row.broken)}")
        if row.fixed:
            console.print(f"  {escape(name)} {row.metric} [green]fixed[/green]: {_questions(row.fixed)}")


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _overlap(console: Console, overlap: list[Overlap], misses: list[Miss], a: str = "A", b: str = "B") -> None:
    """The overlap table, the questions that moved most, and the unjudged new documents of broken questions."""
    if overlap:
        print_table(console, [Column("retriever", key=True), Column("k", "right", key=True),
                              *(Column(escape(c), "right") for c in ("questions", "overlap", "RBO", f"unjudged {a}", f"unjudged {b}"))],
                    [[escape(row.retriever), str(row.k), str(row.n), f"{row.jaccard:.3f}", f"{row.rbo:.3f}",
                      _share(row.unjudged_a), _share(row.unjudged_b)] for row in overlap],
                    title=f"how far {escape(b)}'s top k moved from {escape(a)}'s (no judgment needed)",
                    caption=f"overlap: Jaccard of the top-k ids; RBO: rank-biased overlap (p {overlap[0].p:g}); "
                            "unjudged: share of the top k nobody judged")
        for row in overlap:
            if row.k == max(r.k for r in overlap if r.retriever == row.retriever):
                moved = sorted((q for q in row.questions if q.rbo < 1), key=lambda q: (q.rbo, q.question))[:5]
                if moved:
                    console.print(f"  {escape(row.retriever)} moved most at k = {row.k} (RBO): " + escape(", ".join(
                        f"{_short(q.question)} {q.rbo:.2f}" + ("" if q.labelled else " (unlabelled)") for q in moved)))
    for miss in misses:
        more = f" (and {len(miss.metrics) - 1} more)" if len(miss.metrics) > 1 else ""
        console.print(f"{escape(miss.retriever)} fell on {escape(miss.question)} ({escape(miss.metrics[0])}{more}); new in its "
                      "top k and never judged (a miss may be a missing label; add --not if it is not relevant):")
        for command in miss.commands:  # at most the terminal's width, pasted as printed it runs
            for line in command_lines(command, console.width):
                console.print(line, markup=False, highlight=False, soft_wrap=True)


def show_culprits(console: Console, culprits: list, *, limit: int = 10) -> None:
    """For each broken question (largest fall first, `limit` of them): the records that entered its top k (or, for a
    fused ranking, the lists it fuses), the ingest that brought each in, and the relevant records that fell (analysis.blame)."""
    if not culprits:
        return
    console.print("what broke them (the records that entered each broken question's top k, or the lists it fuses, and the "
                  "relevant records that fell):")
    for culprit in culprits[:limit]:
        console.print(f"  {culprit.text}", markup=False, highlight=False)
    if len(culprits) > limit:
        console.print(f"  ... and {len(culprits) - limit} more (--json lists them all: culprits)")


def show_comparison(console: Console, comparison: Comparison) -> None:
    """What changed between the runs, the paired difference per retriever and metric, and the questions fixed and broken."""
    c = comparison
    console.print(
        f"[bold]A[/bold] {_run(c.run_a, c.label_a)} → [bold]B[/bold] {_run(c.run_b, c.label_b)}: "
        f"paired over {c.shared} question{'s' if c.shared != 1 else ''} "
        f"(A has {c.questions_a}, B has {c.questions_b})"
    )
    _warnings(console, c.warnings)
    if c.changes:
        print_table(console, [Column("recorded", key=True), Column("A"), Column("B")],
                    [[escape(change.field), escape(repr(change.a)), escape(repr(change.b))] for change in c.changes],
                    title="what changed between the runs")
    else:
        console.print("nothing recorded differs between the runs (parameters, corpus, golden set, harness, commit)")
    for note in c.notes:
        console.print(f"note: {note}", markup=False)
    if c.label_changes:
        console.print(f"the golden set changed between the runs ({len(c.label_changes)} changes, `surreal-eval golden history`):")
        for change in c.label_changes[:20]:
            who = ", ".join(x for x in (change.source, change.by) if x)
            plain_line = (f"  {change.action} {change.question}" + (f" -> {change.doc}" if change.doc else "")
                          + (f" (grade {change.grade:g})" if change.grade is not None else "") + (f" [{who}]" if who else "")
                          + (f": {change.note}" if change.note else ""))
            console.print(plain_line, markup=False)
        if len(c.label_changes) > 20:
            console.print(f"  ... and {len(c.label_changes) - 20} more")
    for note in c.skipped:
        console.print(f"not compared: {escape(note)}")
    rows = [(r.retriever, r) for r in c.rows]
    if rows or not c.overlap:
        show_delta_headline(console, c.by_source)
        _delta_table(console, "B - A per retriever and metric (p: paired randomization test; ~ sampled; "
                                   "p Holm: adjusted over every row; tied: within the mean's resolution)", "retriever", rows, "A", "B")
        show_source_deltas(console, c.by_source)
        _changed_questions(console, rows)
    else:
        console.print("no question is judged in both runs: no metric to compare, only how far the rankings moved")
    _overlap(console, c.overlap, c.misses)
    show_culprits(console, c.culprits)


def show_retriever_comparison(console: Console, comparison: RetrieverComparison) -> None:
    """Two retrievers of one run, paired by question."""
    c = comparison
    console.print(
        f"run {_run(c.run, c.label)}: [bold]A[/bold] {escape(c.retriever_a)} → [bold]B[/bold] {escape(c.retriever_b)}"
    )
    _warnings(console, c.warnings)
    rows = [(f"{c.retriever_a}→{c.retriever_b}", r) for r in c.rows]
    if rows or not c.overlap:
        _delta_table(console, "B - A per metric (p: paired randomization test; ~ sampled; p Holm: adjusted over every row)",
                     "retrievers", rows, c.retriever_a, c.retriever_b)
        _changed_questions(console, rows)
    else:
        console.print("no question is judged: no metric to compare, only how far the rankings differ")
    _overlap(console, c.overlap, c.misses, c.retriever_a, c.retriever_b)


def show_many(console: Console, many: ManyComparison) -> None:
    """Every pair with raw and Holm-adjusted p, then per metric the groups that cannot be told apart."""
    sides = ", ".join(many.sides)
    console.print(f"{len(many.sides)} {many.kind}{f' of run {escape(many.run)}' if many.run else ''}: {escape(sides)}")
    _warnings(console, many.warnings)
    rows = [((f"{r.retriever} " if r.retriever else "") + f"{r.a}→{r.b}", r) for r in many.rows]
    _delta_table(console, f"B - A for every pair (p Holm: adjusted over all {len(many.rows)} rows)", "pair", rows, "A", "B")
    console.print(f"[bold]not separable[/bold] (every pair has Holm-adjusted p >= {many.alpha:g} or is tied; best mean first):")
    for group in many.groups:
        members = ", ".join(f"{m} {v:.3f}" for m, v in zip(group.members, group.means, strict=True))
        console.print(f"  {(group.retriever + ' ') if group.retriever else ''}{group.metric}: {{{escape(members)}}}")
    if not many.groups:
        console.print("  none: every pair can be told apart")
    for key, alone in many.separable.items():
        if alone:
            console.print(f"  {escape(key)}: told apart from every other: {escape(', '.join(alone))}")


#: Broken questions a failed check lists, worst first, unless every one is asked for (gate --all); --json holds all.
BROKEN_LISTED = 10


def show_gate(console: Console, result: GateResult, *, every: bool = False) -> None:
    """Every check with its verdict, the broken questions of each failure (the worst BROKEN_LISTED and a count of the
    rest, or every one with `every`), and PASS or FAIL."""
    console.print(
        f"gate: candidate {_run(result.candidate, result.candidate_label)} against baseline "
        f"{_run(result.baseline, result.baseline_label)} (fail on a drop > {result.max_drop:g} with "
        f"{'p' if result.per_check else 'Holm-adjusted p'} < {result.alpha:g})"
    )
    console.print(f"decided on {result.decided_on}", markup=False)
    _warnings(console, result.warnings)
    if result.source is None:  # the real figure first when the questions that decide mix sources
        show_delta_headline(console, result.by_source, result.metrics[0])
    print_table(console, [Column("retriever", key=True), Column("metric", key=True),
                          *(Column(c, "right") for c in ("baseline", "candidate", "drop", "p", "p Holm", "n")), Column("verdict")],
                [[escape(check.retriever), check.metric, f"{check.baseline:.3f}", f"{check.candidate:.3f}",
                  f"{check.drop:+.3f}", format_p(check.p_value, result.alpha), format_p(check.p_adjusted, result.alpha),
                  str(check.n), "[green]pass[/green]" if check.passed else "[bold red]FAIL[/bold red]"]
                 for check in result.checks])
    for check in result.checks:
        if check.drop > result.max_drop or not check.passed:
            console.print(f"{escape(check.retriever)} {check.metric}: {escape(check.reason)}")
        if not check.passed:
            listed = check.broken if every else check.broken[:BROKEN_LISTED]
            console.print(f"  broken questions (baseline→candidate){'' if every else ', worst first'}:")
            for delta in listed:
                console.print(f"    {escape(delta.question)}: {delta.before:.4f} → {delta.after:.4f}")
            if len(check.broken) > len(listed):
                console.print(f"    and {len(check.broken) - len(listed)} more of {len(check.broken)} broken (gate --all lists every one; "
                              "--json holds them all)", markup=False)
    headlined = result.source is None and any(d.source == REFERENCE for d in result.by_source)
    for metric in (result.metrics[1:] if headlined else result.metrics) if result.by_source else ():
        show_source_deltas(console, result.by_source, metric)  # every source side by side (the headline has the first)
    if result.by_source and result.source is None and REFERENCE in result.held:
        console.print(f"the decision used {result.decided_on}; `--source {REFERENCE}` decides on the "
                      f"{result.held[REFERENCE]} {REFERENCE} questions only", markup=False)
    for note in result.skipped:
        console.print(f"skipped: {escape(note)}")
    if result.changes:
        console.print("what changed: " + escape("; ".join(f"{c.field} {c.a!r} → {c.b!r}" for c in result.changes)))
    failed = len(result.failures)
    console.print(
        "[bold green]PASS[/bold green]" if result.passed
        else f"[bold red]FAIL[/bold red]: {failed} check{'s' if failed != 1 else ''} fell significantly"
    )


def show_slices(console: Console, rows: list[Slice]) -> None:
    """One table per field: each value's question count, and per retriever the mean and interval."""
    if not rows:
        console.print("no slices")
        return
    retrievers = list(dict.fromkeys(r.retriever for r in rows))
    for field in dict.fromkeys(r.by for r in rows):
        mine = [r for r in rows if r.by == field]
        if all(r.value is None for r in mine):
            console.print(f"{field}: not set on any question")
            continue
        lines = []
        for value in dict.fromkeys(r.value for r in mine):
            cells = {r.retriever: r for r in mine if r.value == value}
            count = next(iter(cells.values())).questions
            lines.append([
                escape("(not set)" if value is None else value), str(count),
                *(f"{cells[n].mean:.3f} [{cells[n].low:.2f}, {cells[n].high:.2f}]" if n in cells else "-" for n in retrievers),
            ])
        print_table(console, [Column(escape(field), key=True), Column("questions", "right"),
                              *(Column(escape(n), "right", stack=True) for n in retrievers)],
                    lines, title=f"{mine[0].metric} by {escape(field)} [95% bootstrap interval]")
