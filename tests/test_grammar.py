"""The command line follows one grammar (docs/cli-grammar.md): the rules walk the typer app, and each rule fails on
a command planted to break it."""

from __future__ import annotations

from typing import Annotated, Optional

import pytest
import typer

from surreal_eval.present.app import CorpusOpt, KsOpt, MetricOpt, RunArg
from surreal_eval.present.cli import app
from surreal_eval.present.grammar_check import violations


def test_the_command_line_breaks_no_rule_of_its_grammar():
    assert violations(typer.main.get_command(app)) == []


def test_every_hidden_command_is_an_old_spelling_kept_for_one_release():
    from surreal_eval.present.deprecated import OLD_SPELLINGS
    from surreal_eval.present.grammar_check import walk

    olds = " | ".join(old for old, _ in OLD_SPELLINGS)
    root = typer.main.get_command(app)
    hidden = [(path, name) for path, command in walk(root) for name, sub in (getattr(command, "commands", None) or {}).items()
              if getattr(sub, "hidden", False)]
    assert hidden
    for path, name in hidden:
        spelled = " ".join((*path, name))
        assert spelled in olds, f"{spelled} is hidden but no old spelling"
    for path, command in walk(root):
        for param in getattr(command, "params", []):
            if getattr(param, "hidden", False):
                assert any(flag in olds for flag in param.opts), f"{' '.join(path)} {param.opts}: hidden but no old spelling"


def test_a_groups_verbs_and_the_top_level_verbs_are_those_of_the_grammar_page():
    from tests.docs_pages import DOCS

    page = (DOCS / "cli-grammar.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        if getattr(command, "hidden", False):
            continue
        assert f"`{name}`" in page or f"`{name} " in page, f"{name}: not on docs/cli-grammar.md"
        for verb, sub in (getattr(command, "commands", None) or {}).items():
            if not getattr(sub, "hidden", False):
                assert f"{name} {verb}" in page or f"{verb}" in page.split(f"`{name}`", 1)[-1][:400], f"{name} {verb}: not on the page"


def planted(**commands) -> typer.Typer:
    """A typer app holding only `commands` (name -> function), each with an example in its help."""
    planted_app = typer.Typer()
    group = typer.Typer()
    planted_app.add_typer(group, name="things")
    group.command("list", help="List things: `things list`.")(lambda: None)
    for name, function in commands.items():
        planted_app.command(name, help=f"Do it: `{name} x`.")(function)
    return planted_app


def _run_option(run: Annotated[str, typer.Option("--run", help="A run.")] = "latest") -> None: ...
def _int_k(k: Annotated[int, typer.Option("--k", help="Cutoffs, a comma list such as 1,3,5,10.")] = 5) -> None: ...
def _k_other_help(k: Annotated[str, typer.Option("--k", help="How many.")] = "5") -> None: ...
def _bare_metric(metric: Annotated[str, typer.Option("--metric", help="A metric name, e.g. recall.")] = "recall") -> None: ...
def _table(table: Annotated[Optional[str], typer.Option("--table", help="Corpus table.")] = None) -> None: ...
def _label(label: Annotated[Optional[str], typer.Option("--label", help="A label for the run.")] = None) -> None: ...
def _run_argument_without_references(run: Annotated[str, typer.Argument(help="The run id.")]) -> None: ...
def _revoke(name: str, revoke: Annotated[bool, typer.Option("--revoke", help="Undo.")] = False) -> None: ...
def _fine(run: RunArg, k: KsOpt = "1", metric: MetricOpt = None, corpus: CorpusOpt = None) -> None: ...


@pytest.mark.parametrize("name, function, broken", [
    ("report", _run_option, "--run"),
    ("diagnose", _int_k, "--k"),
    ("judge", _k_other_help, "--k"),
    ("history", _bare_metric, "--metric"),
    ("load", _table, "--table"),
    ("evaluate", _label, "--label"),
    ("detach", _fine, "`detach`"),
    ("slices", _run_argument_without_references, "RUN"),
    ("grant", _revoke, "--revoke"),
])
def test_each_rule_fails_on_a_command_planted_to_break_it(name, function, broken):
    found = violations(typer.main.get_command(planted(**{name: function, "fine": _fine})))
    assert found, f"{name}: the planted violation went unseen"
    assert all(line.startswith(f"{name} ") or line.startswith(f"{name}:") for line in found), found
    assert any(broken in line for line in found), found


def test_a_command_whose_help_shows_no_example_breaks_the_grammar():
    bare = planted(fine=_fine)
    bare.command("quiet", help="Does something.")(_fine)
    assert violations(typer.main.get_command(bare)) == ["quiet: its help shows no example (`quiet ...`)"]


def test_a_noun_and_its_plural_side_by_side_break_the_grammar():
    found = violations(typer.main.get_command(planted(retriever=_fine, retrievers=_fine)))
    assert any("plural" in line for line in found), found
