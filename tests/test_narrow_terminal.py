"""An ordinary 80-column terminal shows every table whole: no retriever name or interval is cut to `hybr…`
or `[0.3…` (issue 26, 2). The demo runs in a real pseudo-terminal; the other commands' tables are
printed to a rich console 80 columns wide."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shlex
import struct
import subprocess
import sys
import termios

from rich.console import Console

from surreal_eval import compare_runs, evaluate, gate, history
from surreal_eval.present.analysis_tables import show_comparison, show_gate
from surreal_eval.present.fit_tables import Column, fitted_tables
from surreal_eval.present.run_tables import show_history, show_report

#: a complete interval as the tables print it
INTERVAL = re.compile(r"\[\d\.\d\d, \d\.\d\d\]")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(args: list[str], columns: int) -> str:
    """What `python -m surreal_eval ARGS` prints to a terminal `columns` wide (a pseudo-terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONWARNINGS"] = "ignore"
    process = subprocess.Popen([sys.executable, "-m", "surreal_eval", *args], stdin=slave, stdout=slave,
                               stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def narrow() -> Console:
    return Console(width=80, file=io.StringIO(), highlight=False, emoji=False, color_system=None)


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_the_demo_in_an_80_column_terminal_shows_every_retriever_name_and_interval_whole():
    report = json.loads(subprocess.run([sys.executable, "-m", "surreal_eval", "demo", "--json"], capture_output=True,
                                       text=True, check=True, timeout=120).stdout)
    text = in_terminal(["demo"], 80)
    assert widest(text) <= 80
    assert "…" not in text
    main = text.split("resolution at k=")[0]  # the table of means, before the notes under it
    cells = sum(len(row["intervals"]) for row in report["results"])
    assert len(INTERVAL.findall(main)) == cells  # every mean's interval, none cut
    for name in ("hybrid", "hybrid_floor"):
        shown = re.findall(rf"│ {name} +│", main)
        assert len(shown) >= len(report["ks"]), name  # the name whole, on its rows
    for row in report["results"]:
        low, high = row["intervals"]["recall"]["low"], row["intervals"]["recall"]["high"]
        assert f"[{low:.2f}, {high:.2f}]" in main


def test_a_table_that_fits_is_printed_as_one_table_and_one_that_does_not_repeats_its_keys():
    console = narrow()
    columns = [Column("retriever", key=True), *(Column(f"m{i}", "right", stack=True) for i in range(8))]
    rows = [["hybrid_floor", *(["0.854 [0.67, 1.00]"] * 8)]]
    assert len(fitted_tables(console, columns[:3], [row[:3] for row in rows])) == 1
    parts = fitted_tables(console, columns, rows, title="means")
    assert len(parts) > 1 and all(str(t.columns[0].header) == "retriever" for t in parts)
    assert [str(c.header) for t in parts for c in t.columns[1:]] == [f"m{i}" for i in range(8)]  # each metric once, in order
    for table in parts:
        console.print(table)
    text = console.file.getvalue()
    assert widest(text) <= 80 and "…" not in text
    assert len(INTERVAL.findall(text)) == 8 and text.count("hybrid_floor") == len(parts)


def test_evaluate_compare_gate_and_history_fit_80_columns_without_cutting_a_name(seeded):
    first = evaluate(seeded, label="a")
    second = evaluate(seeded, label="b", params={"floor": 1.0})
    console = narrow()
    show_report(console, second, per_question=True)
    show_comparison(console, compare_runs(seeded, first.run, second.run))
    show_gate(console, gate(seeded, baseline=first.run, candidate=second.run, metric="recall@1"))
    show_history(console, history(seeded), "recall", None)
    text = console.file.getvalue()
    assert widest(text) <= 80
    assert "…" not in text
    assert re.search(r"│ hybrid_floor +│ recall@10 +│", text)  # compare: the retriever and the metric whole
    assert first.run.split(":", 1)[-1] in text and second.run.split(":", 1)[-1] in text  # history: the run ids whole


def test_a_console_narrower_than_one_value_column_folds_the_cells_and_cuts_nothing():
    console = Console(width=30, file=io.StringIO(), color_system=None)
    name = "a_very_long_retriever_name_indeed"
    for table in fitted_tables(console, [Column("retriever", key=True), Column("a"), Column("b")],
                               [[name, "x" * 25, "0.854 [0.67, 1.00]"]], title="t"):
        console.print(table)
    text = console.file.getvalue()
    assert widest(text) <= 30 and "…" not in text
    letters = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert name in letters.replace(" ", "")


def test_a_label_command_wider_than_the_terminal_is_broken_with_backslashes_and_runs_as_pasted():
    from surreal_eval.present.writing import command_lines

    command = "surreal-eval golden label seval_question:rate_limit seval_article:refund_request --golden 'my set'"
    lines = command_lines(command, 40)
    assert max(len(line) for line in lines) <= 40 and all(line.endswith(" \\") for line in lines[:-1])
    assert shlex.split(" ".join(line.removesuffix("\\") for line in lines)) == shlex.split(command)  # the shell joins them
    assert command_lines("surreal-eval golden label q d", 80) == ["  surreal-eval golden label q d"]
