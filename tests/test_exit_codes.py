"""Every ending of the CLI is a documented exit code: errors, --debug, permission refusals, the
embedded engine's shutdown; global options after the command; exports all or nothing; p-values."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.analysis.gate import _verdict
from surreal_eval.present.cli import EXIT_CODES, app, invoked_name, only_invoked, run_cli
from surreal_eval.stats import format_p

from .test_access import PASSWORD, store  # noqa: F401 - store is a fixture

runner = CliRunner()
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def demo_store(path: Path, runs: int = 0) -> str:
    url = f"surrealkv://{path}"
    assert run_cli(["--url", url, "init", "--demo"]) == 0
    for _ in range(runs):
        assert run_cli(["--url", url, "evaluate", "--k", "1,3,5"]) == 0
    return url


def test_a_permission_refusal_exits_with_its_own_code_not_the_gate_code(store, monkeypatch):
    url = store  # the demo and an evaluator account `ci` (test_access's fixture)
    monkeypatch.setenv("SURREAL_EVAL_PASS", PASSWORD)
    code = run_cli(["--url", url, "--access", "seval_evaluator", "--user", "ci", "init", "--dimension", "4"])
    assert code == 5 and EXIT_CODES[5].startswith("permission denied")


@pytest.mark.parametrize("args", [["diagnose", "nosuch"], ["compare", "nosuch", "latest"], ["evaluate", "--k", "0"]])
def test_debug_prints_the_traceback_and_keeps_the_exit_code(tmp_path, capfd, args):
    url = demo_store(tmp_path / "store", runs=1)
    plain = run_cli(["--url", url, *args])
    capfd.readouterr()
    debug = run_cli(["--url", url, "--debug", *args])
    assert plain == debug == 2
    assert "Traceback" in capfd.readouterr().err


def test_a_usage_error_exits_2():
    assert run_cli(["evaluate", "--no-such-option"]) == 2


@pytest.mark.parametrize(("args", "line"), [
    (["evaluate", "--kk", "3"], "error: no such option --kk (did you mean --k?); see surreal-eval evaluate --help"),
    (["--url", "mem://", "gate", "--max-dropp", "0.1"],
     "error: no such option --max-dropp (did you mean --max-drop?); see surreal-eval gate --help"),
    (["load", "golden"], "error: missing argument 'path'; see surreal-eval load golden --help"),
    (["runs", "lst"], "error: no such command 'lst' (did you mean 'list'?); see surreal-eval runs --help"),
])
def test_a_usage_error_is_one_line_like_every_other_error(args, line, capsys):
    assert run_cli(args) == 2
    printed = capsys.readouterr()
    assert printed.err.strip() == line, printed.err
    assert printed.out == ""


def test_help_is_still_printed_whole():
    assert run_cli(["evaluate", "--help"]) == 0
    assert run_cli(["--help"]) == 0


def test_golden_dangling_exits_1_when_it_lists_labels_and_0_when_none(tmp_path, capsys):
    import json

    url = f"surrealkv://{tmp_path / 'store'}"
    docs, golden = tmp_path / "docs.jsonl", tmp_path / "golden.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "title": i, "content": "parcel", "embedding": [0, 0, 1, 0]}) + "\n"
                            for i in ("d1", "d2")))
    question = {"id": "q1", "text": "parcel", "embedding": [0, 0, 1, 0], "relevant": ["d1", "d2"]}
    golden.write_text(json.dumps(question) + "\n")
    assert run_cli(["--url", url, "load", "corpus", str(docs)]) == 0
    assert run_cli(["--url", url, "load", "golden", str(golden)]) == 0
    capsys.readouterr()
    assert run_cli(["--url", url, "golden", "dangling"]) == 0
    assert "names a record that exists" in capsys.readouterr().out
    db = connect(Settings(url=url))
    try:
        db.query("DELETE seval_article:d2")  # a label never blocks the application's delete
    finally:
        db.close()
    assert run_cli(["--url", url, "golden", "dangling"]) == 1
    assert "q1 -> seval_article:d2" in capsys.readouterr().out
    assert run_cli(["--url", url, "golden", "dangling", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == [{"question": "seval_question:q1", "label": "seval_article:d2"}]
    assert "golden dangling" in EXIT_CODES[1]
    row = next(line for line in (ROOT / "docs" / "exit-codes.md").read_text().splitlines() if line.startswith("| 1 |"))
    assert "`golden dangling`" in row


ROOT = Path(__file__).resolve().parents[1]


def test_the_startup_section_gives_one_account_of_the_targets():
    """docs/exit-codes.md once said the targets were met and, a paragraph later, that its figures did not show them."""
    text = (ROOT / "docs" / "exit-codes.md").read_text()
    section = text[text.index("**Startup.**"):text.index("## Bad input")]
    figures = {row.split("|")[1].strip(): float(row.split("|")[2]) for row in section.splitlines()
               if row.startswith("| `surreal-eval")}
    assert figures["`surreal-eval --help`"] < 0.5
    assert all(seconds < 1.5 for seconds in figures.values())
    assert "both targets are met" in section and "not shown by these figures" not in section


def test_global_options_work_after_the_command_name(tmp_path):
    url = demo_store(tmp_path / "store")
    done = runner.invoke(app, ["evaluate", "--url", url, "--k", "1", "--json"])
    assert done.exit_code == 0, done.output
    assert '"questions": 8' in done.stdout
    done = runner.invoke(app, ["runs", "list", "--json", f"--url={url}", "--ns", "surreal_eval", "--debug"])
    assert done.exit_code == 0, done.output and done.stdout.count('"run"') == 1


def test_export_takes_latest_and_previous_and_a_failed_export_leaves_no_file(tmp_path):
    url = demo_store(tmp_path / "store", runs=2)
    for name in ("latest", "previous"):
        target = tmp_path / f"{name}.trec"
        assert run_cli(["--url", url, "runs", "export", name, "-o", str(target)]) == 0
        assert target.read_text().count(" Q0 ") > 0
    assert run_cli(["--url", url, "golden", "export", str(tmp_path / "q.txt"), "--format", "qrels", "--from-run", "latest"]) == 0
    missing = tmp_path / "missing.trec"
    assert run_cli(["--url", url, "runs", "export", "nosuch", "-o", str(missing)]) == 2
    assert not missing.exists()
    kept = tmp_path / "latest.trec"
    before = kept.read_text()
    assert run_cli(["--url", url, "runs", "export", "nosuch", "-o", str(kept)]) == 2
    assert kept.read_text() == before and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "latest.trec", "previous.trec", "q.txt"]


@pytest.mark.parametrize("p", [0.049995, 0.0499999, 0.05, 0.050004, 0.0123, 0.00001, 1.0])
def test_a_printed_p_value_compares_with_alpha_as_the_exact_value_does(p):
    text = format_p(p, 0.05)
    if text.startswith("<"):
        assert p < float(text[1:])
    else:
        assert (float(text) < 0.05) == (p < 0.05) and (float(text) == 0.05) == (p == 0.05)
    passed, reason = _verdict(0.1, p, 20, metric="recall@5", max_drop=0.02, alpha=0.05)
    assert passed == (p >= 0.05)
    shown = reason.split("p = ")[1].split()[0] if "p = " in reason else None
    if shown is not None:
        assert (float(shown) < 0.05) == (p < 0.05)
    assert "0.0500 < 0.05" not in reason


#: The commands that aborted at exit in issue 15, each run this many times in fresh processes.
COMMANDS = (["split", "--dev", "0.5"], ["diagnose", "money_back"], ["slices", "latest"], ["gate"],
            ["diagnose", "nosuch"])
RUNS = 55


def test_no_command_ever_exits_with_an_undocumented_code_or_a_panic(tmp_path):
    stores = [demo_store(tmp_path / f"store{i}", runs=2) for i in range(4)]
    jobs = [(stores[i % len(stores)], COMMANDS[i % len(COMMANDS)]) for i in range(RUNS)]

    def invoke(job):
        url, args = job
        done = subprocess.run([sys.executable, "-m", "surreal_eval", "--url", url, *args],
                              capture_output=True, text=True, env=ENV, timeout=120)
        return args[0], done.returncode, done.stderr

    by_store: dict[str, list] = {}
    for job in jobs:
        by_store.setdefault(job[0], []).append(job)
    with ThreadPoolExecutor(len(stores)) as pool:  # one process at a time per store (it is locked)
        results = [r for batch in pool.map(lambda js: [invoke(j) for j in js], by_store.values()) for r in batch]
    assert len(results) == RUNS
    for name, code, stderr in results:
        assert "panicked" not in stderr and code in EXIT_CODES, (name, code, stderr[-500:])
        assert code == (2 if name == "diagnose" and "nosuch" in stderr else 0), (name, code, stderr[-300:])


def test_init_on_an_unchanged_store_applies_nothing_but_a_changed_config_applies_again(tmp_path, capfd):
    url = demo_store(tmp_path / "store")
    capfd.readouterr()
    assert run_cli(["--url", url, "init"]) == 0
    assert "up to date" in capfd.readouterr().out
    assert run_cli(["--url", url, "init", "--knn-ef", "50"]) == 0
    said = capfd.readouterr().out
    assert "imported" in said and "retrievers" in said
    db = connect(Settings(url=url))
    try:
        assert db.value("SELECT VALUE knn_ef FROM ONLY seval_config:current") == 50
    finally:
        db.close()


@pytest.mark.parametrize("args, name", [
    (["--url", "mem://", "--debug", "evaluate", "--k", "1"], "evaluate"),
    (["--url=mem://", "--ns", "a", "runs", "list"], "runs"),
    (["evaluate", "--url", "mem://"], "evaluate"),
    (["--debug", "--", "evaluate"], None),
    (["--help"], None),
    (["--version"], None),
    (["--url"], None),
    ([], None),
])
def test_the_command_a_line_invokes_is_its_first_word_after_the_global_options(args, name):
    assert invoked_name(args) == name


def test_a_command_line_builds_only_the_command_it_invokes_and_one_naming_none_finds_them_all(capsys):
    everything = (list(app.registered_commands), list(app.registered_groups))
    with only_invoked(["--url", "mem://", "load", "corpus", "docs.jsonl"]):
        assert app.registered_commands == [] and [g.name for g in app.registered_groups] == ["load"]
    with only_invoked(["--url", "mem://", "evaluate"]):
        assert [c.name or c.callback.__name__ for c in app.registered_commands] == ["evaluate"] and app.registered_groups == []
    assert (app.registered_commands, app.registered_groups) == everything
    for args in (["evalute"], ["--help"]):
        with only_invoked(args):
            assert (app.registered_commands, app.registered_groups) == everything
    # a misspelt command is told the name near it; help lists every command, in order
    assert run_cli(["evalute"]) == 2
    assert "did you mean 'evaluate'?" in capsys.readouterr().err
    assert run_cli(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("demo", "evaluate", "compare", "watch", "golden", "runs"))
    assert listed.index(" demo ") < listed.index(" evaluate ") < listed.index(" compare ")
    assert (app.registered_commands, app.registered_groups) == everything


def test_the_console_script_collects_garbage_rarely_once_its_imports_are_done(monkeypatch):
    import gc

    from surreal_eval.present import cli
    from surreal_eval.store.process import YOUNG_THRESHOLD
    from surreal_eval.store import shutdown

    before = gc.get_threshold()
    ended: list[tuple[int, int]] = []
    monkeypatch.setattr(shutdown, "end_process", lambda code: ended.append((code, gc.get_threshold()[0])))
    monkeypatch.setattr(sys, "argv", ["surreal-eval", "--version"])
    try:
        cli.main()
    finally:
        gc.set_threshold(*before)
    assert ended == [(0, YOUNG_THRESHOLD)] and before[0] != YOUNG_THRESHOLD
