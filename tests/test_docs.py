"""The documentation site: it builds in strict mode, its CLI reference is what the code generates, every
shell example is run by a test or says why not, and the README stays a short front door whose links resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .docs_pages import DOCS, README, ROOT, pages


def reference() -> str:
    import runpy

    return runpy.run_path(str(ROOT / "scripts" / "cli_reference.py"))["reference"]()


def shell_blocks(text: str) -> list[tuple[int, str, str, str]]:
    """Every ```sh/bash/shell/console block of a page: (line, the comment line above it, the heading it is
    under, its first line)."""
    found, lines, heading, fenced = [], text.splitlines(), "", False
    for at, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            if not fenced and line.strip() in ("```sh", "```bash", "```shell", "```console"):
                found.append((at + 1, lines[at - 1].strip() if at else "", heading, lines[at + 1].strip()))
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            heading = line.lstrip("#").strip()
    return found


def test_the_committed_cli_reference_is_what_the_code_generates():
    committed = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert committed == reference(), "docs/cli.md is stale: run `python scripts/cli_reference.py` and commit it"


def test_the_cli_reference_covers_every_command_and_option():
    from typer.main import get_command

    from surreal_eval.present.cli import app

    text = (DOCS / "cli.md").read_text(encoding="utf-8")

    def walk(group, prefix):
        for name, command in group.commands.items():
            path = f"{prefix} {name}"
            if command.hidden:  # 0.1's spellings: docs/upgrading.md
                assert f"## `{path}`" not in text, path
                continue
            assert f"## `{path}`" in text, path
            for option in command.params:
                if option.hidden:
                    continue
                for flag in getattr(option, "opts", [])[:1]:
                    if flag.startswith("--"):
                        assert flag in text.split(f"## `{path}`", 1)[1], (path, flag)
            if hasattr(command, "commands"):
                walk(command, path)

    walk(get_command(app), "surreal-eval")


def test_the_docs_build_in_strict_mode(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "cli" / "index.html").exists()


def test_every_docs_page_is_in_the_site_navigation():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert sorted(re.findall(r": (\S+\.md)$", config, flags=re.M)) == sorted(pages())


@pytest.mark.parametrize("page", [name for name in pages() if name != "cli.md"] + ["README.md"])
def test_every_shell_example_is_run_by_a_test_or_marked_not_run_with_a_reason(page):
    """`<!-- run: FILE -->` names the test file that reads this block by its section heading (a string in it that
    starts the heading), or .ci/run for the test command; `<!-- not run: REASON -->` says why not."""
    text = README.read_text(encoding="utf-8") if page == "README.md" else pages()[page]
    for line, above, heading, first in shell_blocks(text):
        where = f"{page}:{line} ({first[:40]})"
        marker = re.fullmatch(r"<!-- (run|not run): (.+) -->", above)
        assert marker, f"{where}: no <!-- run: ... --> or <!-- not run: reason --> above the block"
        if marker.group(1) == "not run":
            assert len(marker.group(2)) > 20, f"{where}: say why it is not run"
        elif marker.group(2) == ".ci/run":
            assert first in (ROOT / ".ci" / "run").read_text(encoding="utf-8"), where
        else:
            test = (ROOT / marker.group(2)).read_text(encoding="utf-8")
            named = re.findall(r'"([^"\n]{10,})"', test)  # the headings it reads blocks by (shell_commands, blocks)
            assert any(heading.startswith(prefix) for prefix in named), f"{where}: {marker.group(2)} reads no block of '{heading}'"


def test_the_readme_is_a_short_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: the manual belongs in docs/"
    text = "\n".join(lines)
    for page in pages():
        if page != "index.md":
            assert f"docs/{page}" in text, f"the README does not link docs/{page}"


def anchors(markdown: str) -> set[str]:
    """The heading anchors of a page as the site (and GitHub) make them."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), flags=re.M)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower()) for heading in headings}


def test_every_readme_link_resolves():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links, "the README links nothing"
    for link in links:
        assert not link.startswith(("http://", "https://")), f"{link}: the README links only into the repository"
        target, _, anchor = link.partition("#")
        path = ROOT / target if target else README
        assert path.exists(), f"README link {link}: no {target}"
        if anchor:
            assert anchor in anchors(path.read_text(encoding="utf-8")), f"README link {link}: no such heading"


def test_the_readme_names_every_test_that_skips_for_want_of_a_program():
    """A test that skips on a machine without some program (chromium) is in the README's skip list, so a
    reader who counts the skips finds each one explained."""
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"@pytest\.mark\.skipif\([A-Z_]+ is None,.*\n(?:@.*\n)*def (test_\w+)", text):
            assert name in README.read_text(encoding="utf-8"), f"{path.name}::{name} skips, and the README does not say so"


def test_the_after_ingest_figures_are_the_benchmarks_on_cisi_and_debian():
    """The docs' figures for evaluating after every ingest are benchmarks/watch_scale.py's on both sets it measures,
    (a) to (c) each, not an earlier release's evaluation inside the ingest."""
    page = pages()["benchmarks.md"]
    section = page[page.index("## Evaluate after every ingest"):]
    assert "benchmarks/watch_scale.py" in section
    rows = re.findall(r"^\| (CISI|Debian): [^|]*\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|", section, flags=re.M)
    assert [r[0] for r in rows] == ["CISI", "Debian"], rows
    for row in rows:
        assert all(re.search(r"= \d\.\d\d", cell) for cell in row[1:4]) and "MB" in row[4], row
    assert "the evaluation inside the ingest" not in page
    assert "tens of questions, not hundreds" not in "".join(pages().values())
