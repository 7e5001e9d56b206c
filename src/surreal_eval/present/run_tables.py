"""Terminal rendering of reports for the CLI (rich tables). The library never prints."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import one_line
from ..models import RunReport, RunSummary, SourceMean
from ..runs.diagnose import Diagnosis
from ..store.migrate_prefix import MigrationReport
from ..store.record_ids import record_str
from ..store.registry import Retriever
from .fit_tables import Column, print_table
from .source_tables import headline_and_notes, mixed, show_headline, show_source_means
from .writing import command_lines

__all__ = ["report_json", "show_report", "show_rerank", "show_history", "show_registry", "show_diagnosis", "migration_lines"]


def _plain(value: object) -> str:
    """Data (ids, titles, labels) as rich prints it literally: markup escaped, control characters shown as escapes."""
    return escape(one_line(str(value)))


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def show_sweep(console: Console, result) -> None:
    """A tune's sweep, one line per value, the best marked, then why the values cannot change the metric (if so)."""
    where = "ALL questions (forced)" if result.forced else "the dev split"
    console.print(f"{result.param} swept on {where} by {result.metric}:", markup=False, emoji=False)
    for row in result.sweep:
        mark = "  <- best" if row["value"] == result.best else "  (tied)" if row["value"] in result.tied else ""
        console.print(f"  {result.param} = {row['value']}: {row['mean']:.4f} ({row['questions']} questions){mark}", markup=False, emoji=False)
    if result.inert:
        console.print(f"note: {result.inert}", markup=False, emoji=False)


def _fuses(report: RunReport) -> bool:
    """Whether the run ranked with the database's retrievers (so its fusion parameters apply), not only with rankings
    supplied from outside (a run file, an endpoint), which it scores as they are."""
    supplied = set((report.params.get("supplied") or {}).get("names") or [])
    return not supplied or any(row.retriever not in supplied for row in report.results)


def show_report(console: Console, report: RunReport, *, per_question: bool = False, sources: Sequence[SourceMean] | None = None) -> None:
    """The means per retriever and k, then (optionally) where each question's labels landed, then the sweep.
    `sources` (the run's means per question source, runs/sources.py; default the report's `by_source`): when the
    questions hold several, the real figure comes first as the headline, the table says it mixes sources, and the
    means per source close the report."""
    sources = (report.by_source or []) if sources is None else sources
    title = (f"run {report.run}" if report.recorded else "run not recorded (--no-record)") + (f" ({report.label})" if report.label else "") \
        + (f" [tags: {', '.join(report.tags)}]" if report.tags else "")
    p = report.params
    console.print(f"[bold]{_plain(title)}[/bold]: {report.questions} questions, corpus {_plain(p.get('corpus'))}, depth {p.get('depth')}"
                  + (f", RRF constant {p.get('rrf_k')}, floor {p.get('floor')}" if _fuses(report) else ""))
    if isinstance(chunking := p.get("chunking"), dict):
        console.print(f"chunks of {chunking.get('source')}: size {chunking.get('size')} {chunking.get('unit')}, overlap "
                      f"{chunking.get('overlap')} {chunking.get('unit')}; k counts chunks (documents in top k: the mean "
                      "number of distinct documents they belong to)", markup=False)
    show_headline(console, list(sources))
    over = f" over {mixed(list(sources))}" if sources else ""
    columns = [Column("retriever", key=True), Column("k", "right", key=True),
               *(Column(metric, "right", stack=True) for metric in report.metrics)]
    chunks = any(row.documents is not None for row in report.results)  # a chunk table: k counts chunks
    if chunks:
        columns.append(Column("documents in top k", "right"))
    rows = [[_plain(row.retriever), str(row.k), *(_with_interval(row, m) for m in report.metrics),
             *([f"{row.documents:.1f}" if row.documents is not None else ""] if chunks else [])]
            for row in report.results]
    if report.results:
        print_table(console, columns, rows, title=f"mean per retriever and k{over} [95% bootstrap interval over questions]")
    else:
        console.print("no question is judged: no mean to show; `surreal-eval compare RUN --retriever A --retriever B` "
                      "shows how far two rankings differ", markup=False)
    steps = next((r.resolution for r in report.results if r.resolution and r.k == max(report.ks)), None)
    if steps:
        console.print(
            f"resolution at k={max(report.ks)} (the smallest change one question can make): "
            + ", ".join(f"{m} {v:.4f}" for m, v in steps.items())
        )
    if report.retrieval:
        console.print(retrieval_line(report), markup=False)
    if report.since:
        console.print(incremental_line(report), markup=False)
    if report.warning:
        console.print(f"[yellow]warning: {escape(report.warning)}[/yellow]")
    for line in golden_notes(report):
        console.print(line, markup=False)
    if report.ann:
        _show_ann(console, report)
    if report.checks:
        console.print("engine checks: " + "; ".join(f"{c.check} {c.status} ({_plain(c.note)})" for c in report.checks))

    if per_question and report.per_question:
        deepest = max(report.ks)
        cells: dict[str, dict[str, str]] = defaultdict(dict)
        for r in report.per_question:
            if r.k == deepest:
                ranks = ",".join(str(r.ranked.index(x) + 1) if x in r.ranked else "-" for x in r.relevant)
                cells[r.question][r.retriever] = f"{r.recall:.2f} [{ranks}]"
        print_table(console, [Column("question", key=True), *(Column(_plain(n), stack=True) for n in report.retrievers)],
                    [[_plain(question.split(":", 1)[-1]), *(cells[question].get(n, "") for n in report.retrievers)]
                     for question in sorted(cells)],
                    title=f"per question: recall@{deepest} and the ranks of the labels (- = not in the top {deepest})")

    if report.sweep:
        table = Table(title="floor sweep: the floored hybrid at each BM25 floor")
        table.add_column("floor", justify="right")
        for k in report.ks:
            table.add_column(f"recall@{k}", justify="right")
        table.add_column(f"mrr@{max(report.ks)}", justify="right")
        by_floor: dict[float, dict[int, float]] = defaultdict(dict)
        mrr: dict[float, float] = {}
        for row in report.sweep:
            by_floor[row.floor or 0.0][row.k] = row.recall
            if row.k == max(report.ks):
                mrr[row.floor or 0.0] = row.mrr
        for floor in sorted(by_floor):
            table.add_row(f"{floor:g}", *(_fmt(by_floor[floor].get(k)) for k in report.ks), _fmt(mrr.get(floor)))
        console.print(table)
    if (report.params.get("supplied") or {}).get("rerank"):
        show_rerank(console, report)
    show_source_means(console, list(sources))


#: The metrics the rerank table sets side by side.
RERANK_METRICS = ("recall", "ndcg", "mrr")


def show_rerank(console: Console, report: RunReport) -> None:
    """Each reranked retriever: its first stage's recall at the rerank depth N (all a reranker can
    reorder into the top k), then at each k the first stage's metrics beside the reranked list's."""
    rerank = report.params["supplied"]["rerank"]
    depth = rerank["depth"]
    means = {(r.retriever, r.k): r.scores for r in report.results}
    table = Table(title=f"rerank of the top {depth} by {_plain(rerank['by'])}: first stage -> reranked")
    for column in ("retriever", f"first stage recall@{depth}", "k", *RERANK_METRICS):
        table.add_column(column, justify="left" if column == "retriever" else "right")
    for first, reranked in rerank["of"].items():
        for k in [k for k in report.ks if k <= depth]:
            cells = [f"{_fmt(means.get((first, k), {}).get(m))} -> {_fmt(means.get((reranked, k), {}).get(m))}"
                     for m in RERANK_METRICS]
            table.add_row(_plain(first), _fmt(means.get((first, depth), {}).get("recall")), str(k), *cells)
    console.print(table)


def sweep_floors_note(report: RunReport) -> str | None:
    """Where the run's floor sweep took its floors from (params.floors_from): as given, from the data (0 and percentiles
    of the BM25 scores of its candidate lists, fn::seval::floor_grid, as tune's grid), or kept from the run it follows
    when they were taken before the corpus changed (params.floors_fingerprint is not the corpus's fingerprint); None
    without a sweep, or for a run recorded before floors_from."""
    source = report.params.get("floors_from")
    if not report.sweep or source not in ("given", "data"):
        return None
    if source == "given":
        return "the floor sweep tries the floors the run was given (params.floors), not floors from the data"
    if report.params.get("floors_fingerprint") == (report.corpus or {}).get("fingerprint"):
        return ("the floor sweep's floors come from the data: 0 and the 10th, 25th, 50th, 75th and 90th percentiles of the "
                "BM25 scores of the questions' candidate lists, as `surreal-eval tune --param floor` takes them")
    return ("the floor sweep's floors are those of the run this one follows, taken from the BM25 scores before the corpus "
            "changed, so the two sweeps compare floor by floor (`surreal-eval evaluate --fresh` takes them anew)")


def golden_notes(report: RunReport) -> list[str]:
    """One line each for what the run found in its golden set (questions with no judgment, stale labels, labels gone),
    when the floored hybrid measured as the hybrid did at every k (a floor that removed nothing that counted), and where
    the floor sweep's floors came from (sweep_floors_note)."""
    golden = report.golden or {}
    notes = []
    means = {(row.retriever, row.k): row for row in report.results}
    pairs = [(means.get(("hybrid", k)), means.get(("hybrid_floor", k))) for k in report.ks]
    if pairs and all(a is not None and b is not None and all(a.score(m) == b.score(m) for m in report.metrics) for a, b in pairs):
        notes.append(f"hybrid_floor measured as hybrid at every k: the BM25 floor {report.params.get('floor')} removed no candidate that "
                     "counted (`surreal-eval tune --param floor` sweeps floors from the scores)")
    if (floors := sweep_floors_note(report)) is not None:
        notes.append(floors)
    if golden.get("unlabelled") and golden["unlabelled"] < report.questions:
        notes.append(f"{golden['unlabelled']} of the {report.questions} questions have no judgment: ranked (compare shows how two "
                     f"rankings overlap) and left out of every mean")
    if golden.get("judgments") == "human+model":
        notes.append(f"scored on human plus model judgments: {golden.get('model') or 0} judgments of `golden judge` merged "
                     f"(without --judgments human+model a run reads the human ones only)")
    if golden.get("stale"):
        notes.append(f"{golden['stale']} labels are stale: their document changed since they were labelled "
                     f"(surreal-eval golden stale lists them)")
    if golden.get("dangling"):
        notes.append(f"{golden['dangling']} labels name records that no longer exist, each counted as a miss "
                     f"(surreal-eval golden dangling lists them)")
    return notes


def report_json(report: RunReport, *, per_question: bool = False) -> dict:
    """The run as `evaluate --json` prints it: the report's own fields (`per_question` only when asked for; `by_source`,
    each retriever's mean per question source with its interval and gap to real, and when it is empty `by_source_note`
    saying why), and what `show_report` prints beside them: `headline` (its lines), `notes` (every note line) and, in
    `retrieval`, how many lists were `retrieved`; with `per_question`, each result's `ranks`: the rank of each of its
    `relevant` records in `ranked` (null: not in the top k), as the per-question table shows them."""
    data = json.loads(report.model_dump_json(exclude=None if per_question else {"per_question"}))
    for row in data.get("per_question") or []:
        row["ranks"] = [row["ranked"].index(x) + 1 if x in row["ranked"] else None for x in row["relevant"]]
    headline, notes = headline_and_notes(list(report.by_source or []))
    if isinstance(data.get("retrieval"), dict) and "lists" in data["retrieval"]:
        used = data["retrieval"]
        used["retrieved"] = used["lists"] - used.get("reused", 0) - used.get("merged", 0) - used.get("certified", 0)
    data.update(headline=headline, notes=notes + golden_notes(report))
    return data


def _show_ann(console: Console, report: RunReport) -> None:
    """The ANN check: per k, the share of the exact top k the HNSW index returned, and the indexed
    and the exact list's recall and nDCG side by side."""
    means = {(row.retriever, row.k): row for row in report.results}
    shown = [m for m in ("recall", "ndcg") if m in report.metrics]
    table = Table(title="ANN check: the HNSW index (vector) against an exact scan of every record (vector_exact)")
    table.add_column("k", justify="right")
    table.add_column("ann_recall [95% interval]", justify="right")
    for metric in shown:
        table.add_column(f"{metric} vector", justify="right")
        table.add_column(f"{metric} vector_exact", justify="right")
    for row in report.ann:
        share = f"{row.ann_recall:.3f}" + (f" [{row.interval.low:.2f}, {row.interval.high:.2f}]" if row.interval else "")
        cells = []
        for metric in shown:
            for name in ("vector", "vector_exact"):
                found = means.get((name, row.k))
                cells.append(_fmt(found.score(metric)) if found else "-")
        table.add_row(str(row.k), share, *cells)
    console.print(table)


def _with_interval(row, metric: str) -> str:
    value = _fmt(row.score(metric))
    bounds = (row.intervals or {}).get(metric)
    return value if bounds is None else f"{value} [{bounds.low:.2f}, {bounds.high:.2f}]"


def retrieval_line(report: RunReport) -> str:
    """How the run got its candidate lists: read as kept, certified unchanged by the corpus's changes, brought up to
    date with them, retrieved."""
    used = report.retrieval or {}
    merged, certified = used.get("merged", 0), used.get("certified", 0)
    return (f"candidate lists: {used['reused']} of {used['lists']} read from earlier runs (inputs unchanged), "
            + (f"{certified} shown unchanged at the top by the corpus's changes, " if certified else "")
            + (f"{merged} brought up to date with the corpus's changes, " if merged else "")
            + f"{used['lists'] - used['reused'] - merged - certified} retrieved")


def incremental_line(report: RunReport) -> str:
    """What an incremental run was made after, and how many questions it scored again."""
    since, used = report.since or {}, report.retrieval or {}
    changed = [f"{since.get(key, 0)} {what}" for key, what in (("added", "added"), ("text_changed", "with new text"),
               ("embedding_changed", "with new embeddings"), ("removed", "removed")) if since.get(key)]
    base = since.get("base")
    scored = (f"; {used.get('rescored', report.questions)} of {report.questions} questions scored again, the rest as in {record_str(base)}"
              if base else "; every question scored (no earlier run with the same settings)")
    named = (f" (read only the {since['named']} record{'s' if since['named'] != 1 else ''} its ingests named, not every record)"
             if since.get("named") is not None else
             f" (read only the {since['written']} record{'s' if since['written'] != 1 else ''} written since the last run read the corpus, "
             "not every record)" if since.get("written") is not None else "")
    return f"incremental: after {', '.join(changed) or 'no change'} records{named}{scored}"


def show_history(console: Console, runs: list[RunSummary], metric: str, k: int | None, ingests: list | None = None) -> None:
    """One line per run: when, label, questions, and `metric`@k per retriever (k given, else each run's deepest k:
    in the title when every run shares it, else in a column k beside the figures, so no two k read as one); a run
    made incrementally after ingests is marked; an ingest no run settled (failed, pending) has a line in its place."""
    from ..runs.history import shown

    retrievers: list[str] = []
    for run in runs:
        retrievers += [r for r in run.retrievers if r not in retrievers]
    figures = [{f.retriever: f for f in shown(run, metric, k)} for run in runs]
    depths = sorted({max(run.ks) for run in runs}) if k is None else [k]
    by_row = len(depths) > 1
    if by_row:
        title = f"history: {metric} at each run's deepest k (column k) per retriever"
    elif k is None:
        title = f"history: {metric}@{depths[0] if depths else 'deepest k'} per retriever (each run's deepest k)"
    else:
        title = f"history: {metric}@{k} per retriever"
    columns = [Column("run", key=True), Column("tags"), Column("time", stack=True), Column("note"), Column("questions"),
               *([Column("k", "right", key=True)] if by_row else []), *(Column(_plain(name), "right") for name in retrievers)]
    rows = []
    for run, row in zip(runs, figures, strict=True):
        rows.append((run.created_at, [
            _plain(run.run), _plain(", ".join(run.tags)), run.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            _plain(run.label or "") + (escape(" [FORCED: tuned and reported on the same questions]")
                                       if run.tuning and run.tuning.get("forced") else "")
            + (escape(" [incremental]") if run.incremental else ""),
            str(run.questions),
            *([str(max(run.ks))] if by_row else []),
            *(_fmt(row[name].value if name in row else None) for name in retrievers),
        ]))
    for ingest in ingests or []:
        said = "evaluation failed (below)" if ingest.state == "failed" else f"{ingest.state}: not evaluated yet"
        rows.append((ingest.at, [_plain(ingest.ingest), "", ingest.at.strftime("%Y-%m-%d %H:%M:%S"),
                                 _plain(f"ingest of {ingest.documents} into {ingest.corpus}: {said}"), "",
                                 *([""] if by_row else []), *("" for _ in retrievers)]))
    ordered = [r for _, r in sorted(rows, key=lambda r: r[0])]
    # a column no row fills (no run tagged, none with a note) is left out: narrow terminals get the figures
    kept = [i for i, column in enumerate(columns) if column.header not in ("tags", "note") or any(row[i] for row in ordered)]
    print_table(console, [columns[i] for i in kept], [[row[i] for i in kept] for row in ordered], title=title)
    for ingest in ingests or []:
        if ingest.state == "failed":
            console.print(f"{ingest.ingest} failed: {ingest.error}", markup=False, highlight=False, soft_wrap=True)
    if any(i.state != "failed" for i in ingests or []):
        console.print("pending ingests are evaluated by the server's event, a watched load, or `surreal-eval watch drain`")


def show_registry(console: Console, rows: list[Retriever]) -> None:
    """One line per registry row, in report order."""
    table = Table(title="retrievers (table seval_retriever)")
    for column in ("retriever", "kind", "lists", "fusion", "params", "default", "sweep", "tunes", "owner"):
        table.add_column(column)
    for r in rows:
        lists = (f"{r.function_name} on {r.corpus}" + "".join(f", {n}={json.dumps(v)}" for n, v in r.args.items())
                 + (", per k" if r.per_k else "")) if r.function_name else " + ".join(r.lists)
        table.add_row(_plain(r.name), r.kind, _plain(lists), r.fusion, _plain(json.dumps(r.params, sort_keys=True)) if r.params else "",
                      "yes" if r.by_default else "", _plain(r.sweep or ""), ", ".join(r.tunes), "harness" if r.harness else "user")
    console.print(table)


def _said(title: str | None, snippet: str | None) -> str:
    """A record as diagnose shows it: its title and the start of its text (either alone when the other is empty)."""
    return ": ".join(part for part in (title, snippet) if part)


def show_diagnosis(console: Console, diagnosis: Diagnosis) -> None:
    """The question, its labelled titles, and each retriever's top k with scores; labels marked."""
    console.print(f"[bold]{_plain(diagnosis.question)}[/bold]: {escape(repr(diagnosis.text))}")
    for label in diagnosis.labels:
        if label.get("dangling"):
            console.print(f"  label {_plain(label['id'])} (grade {label['grade']}): [yellow]DANGLING: the record no longer exists[/yellow] "
                          "(it can never be retrieved; `surreal-eval golden dangling` lists such labels)")
        else:
            console.print(f"  label {_plain(label['id'])} (grade {label['grade']}): {_plain(_said(label.get('title'), label.get('snippet')))}")
    for view in diagnosis.retrievers:
        table = Table(title=f"{view.retriever}: top {diagnosis.k}")
        for column in ("rank", "relevant", "id", "title: text", "score"):  # relevant: ✔ yes, blank judged no, ? not judged
            table.add_column(column)
        for hit in view.hits:
            table.add_row(str(hit.rank), "✔" if hit.relevant else "" if hit.judged else "?", _plain(hit.id), _plain(_said(hit.title, hit.snippet)),
                          f"{hit.score:.4f}")
        if not view.hits:
            table.add_row("", "", "(nothing retrieved)", "", "")
        console.print(table)
    if diagnosis.label_commands:
        console.print(f"unjudged in the top {diagnosis.k} (no judgment for this question, marked ?): label one that answers it "
                      "with its command (add --not if it does not, --grade G for a grade):")
        for command in diagnosis.label_commands.values():  # at most the terminal's width, pasted as printed it runs
            for line in command_lines(command, console.width):
                console.print(line, markup=False, highlight=False, soft_wrap=True)


def migration_lines(report: MigrationReport, where: str) -> list[str]:
    """What `migrate` did, a few lines: moved, carried over, dropped, removed and kept."""
    if not report.migrated:
        return [f"nothing to migrate: {where} holds no surreal-eval 0.1 harness (a current store, or one already migrated)"]

    def listed(names: list[str]) -> str:
        return ", ".join(names) if names else "none"

    kinds = Counter(entry.split(" ", 1)[0] for entry in report.removed)
    tables = [entry.split(" ", 1)[1] for entry in report.removed if entry.startswith("table ")]
    corpora = [f"{report.articles} articles (BM25 analyzer {report.analyzer})"] + [f"{t}: {n} chunks" for t, n in report.chunk_tables.items()]
    splits = ", ".join(f"{'no split' if name == 'none' else name} {n}" for name, n in sorted(report.splits.items()))
    lines = [
        f"migrated surreal-eval 0.1's store in {where} to the seval_ names:",
        f"  history: {report.runs} runs and {report.rankings} rankings, same keys, labels, times and means; "
        f"{report.golden_carried} runs of the golden set as it is carry its fingerprint under the new names"
        + (f", {report.golden_other} of another golden set keep theirs" if report.golden_other else ""),
        f"  golden set: {report.questions} questions ({splits}); "
        f"corpus: {'; '.join(corpora)}; attached in place: {listed(report.attached)}",
        f"  retrievers: {listed(report.retrievers)}; endpoints: {listed(report.endpoints)}; watch: {'on' if report.watch else 'off'}; "
        f"ingests: {report.ingests}",
        f"  evaluator accounts: {listed(report.evaluators)}"
        + (f" (passwords kept; they now sign in with --access {report.access})" if report.access else ""),
    ]
    lines += [f"  index {old} -> {new}" for old, new in report.indexes.items()]
    lines.append("  dropped caches, rebuilt when needed: " + listed([f"{n} {what}" for what, n in report.dropped.items()]))
    lines.append("  removed 0.1's definitions: " + ", ".join(f"{n} {kind if n == 1 else kind + ('es' if kind == 'index' else 's')}"
                                                      for kind, n in sorted(kinds.items()))
                 + f" (tables {listed(tables)})")
    lines += [f"  kept {why}" for why in report.kept]
    return lines
