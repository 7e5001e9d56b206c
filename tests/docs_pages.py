"""The documentation as tests read it: the pages under docs/, their sections and their code blocks."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def pages() -> dict[str, str]:
    """Every page of the site, by file name (`own-database.md`), read as written."""
    return {page.name: page.read_text(encoding="utf-8") for page in sorted(DOCS.glob("*.md"))}


def section(heading: str) -> str:
    """The section of the one docs page holding a heading that starts with `heading`, from that heading to
    the next heading of the same or a higher level (fenced code skipped when looking for headings)."""
    found = []
    for name, text in pages().items():
        lines, fenced = text.splitlines(), False
        for at, line in enumerate(lines):
            fenced = fenced != line.lstrip().startswith("```")
            match = re.match(r"(#+) (.*)", line)
            if match and not fenced and match.group(2).startswith(heading):
                level, end, inner = len(match.group(1)), len(lines), False
                for later in range(at + 1, len(lines)):
                    inner = inner != lines[later].lstrip().startswith("```")
                    deeper = re.match(r"(#+) ", lines[later])
                    if deeper and not inner and len(deeper.group(1)) <= level:
                        end = later
                        break
                found.append((name, "\n".join(lines[at:end]) + "\n"))
    assert len(found) == 1, f"{len(found)} docs sections start with {heading!r}: {[name for name, _ in found]}"
    return found[0][1]


def blocks(heading: str, language: str) -> list[str]:
    """The ```language blocks of a docs section, in order (a block indented in a list item dedented)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", section(heading), flags=re.S | re.M)
    return ["\n".join(line.removeprefix(indent) for line in body.splitlines()) + "\n" for indent, body in found]


def shell_commands(heading: str) -> list[str]:
    """The commands of the first shell block of a docs section, comment-only lines dropped, in order."""
    import shlex

    return [line for line in blocks(heading, "sh")[0].splitlines() if shlex.split(line, comments=True)]
