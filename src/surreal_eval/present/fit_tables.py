"""Tables that fit the terminal without cutting a value.

Rich shortens cells that do not fit (`hybr…`, `[0.3…`). A table printed here never does: when one
line per cell is wider than the console, the stackable cells put their first word over the rest
(`0.750` over `[0.38, 1.00]`), and the value columns are split over several tables that each repeat
the key columns (retriever, k), whichever of the two takes fewer lines. A cell is only ever folded
(never shortened) when even the key columns and one value column cannot fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["Column", "print_table", "fitted_tables"]


@dataclass(frozen=True)
class Column:
    """One column: its header (rich markup), alignment, whether it is repeated in every part of a split
    table (`key`), and whether its cells may put their first word over the rest when space is short (`stack`)."""

    header: str
    justify: str = "left"
    key: bool = False
    stack: bool = False


#: Lines a table takes beside its rows: the title, the top rule, the header, the rule under it, the bottom rule.
_FRAME_LINES = 5


def _text(console: Console, cell: object) -> Text:
    return cell.copy() if isinstance(cell, Text) else console.render_str(str(cell), emoji=False, highlight=False)


def _stacked(cell: Text) -> Text:
    """`cell` with its first space turned into a line break (the value over its interval)."""
    at = cell.plain.find(" ")
    return cell if at < 0 else Text.assemble(cell[:at], "\n", cell[at + 1:])


def _width(cell: Text) -> int:
    return max((Text(line).cell_len for line in cell.plain.split("\n")), default=0)


def _header_width(header: Text) -> int:
    """A header may wrap between its words: its widest word."""
    return max((Text(word).cell_len for word in header.plain.split()), default=0)


def _needed(widths: Sequence[int]) -> int:
    """The width of a rich table with the default box and padding whose columns are `widths` wide."""
    return sum(w + 2 for w in widths) + len(widths) + 1


def _plan(columns: Sequence[Column], cells: list[list[Text]], headers: list[Text], room: int) -> list[list[int]]:
    """The column indexes of each part: everything in one if it fits in `room`, else the key columns
    with as many value columns as fit, part after part (at least one value column each)."""
    widths = [max([_header_width(headers[i]), *(_width(row[i]) for row in cells)]) for i in range(len(columns))]
    keys = [i for i, c in enumerate(columns) if c.key]
    values = [i for i, c in enumerate(columns) if not c.key]
    if _needed(widths) <= room or not values:
        return [list(range(len(columns)))]
    parts: list[list[int]] = []
    current: list[int] = []
    for i in values:
        if current and _needed([widths[j] for j in keys + current + [i]]) > room:
            parts.append(current)
            current = []
        current.append(i)
    parts.append(current)
    return [sorted(keys + part) for part in parts]


def _lines(parts: list[list[int]], cells: list[list[Text]]) -> int:
    """How many lines the parts take on screen (a row is as tall as its tallest cell)."""
    return sum(_FRAME_LINES + sum(max(row[i].plain.count("\n") + 1 for i in part) for row in cells) for part in parts)


def fitted_tables(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[object]], *,
                  title: str | None = None, caption: str | None = None) -> list[Table]:
    """The tables that show `rows` under `columns` within `console.width`: one table when it fits, else
    parts titled `(1 of n)`, `(2 of n)`, ... Every column is as wide as its widest cell (no cut, no wrap),
    unless even one value column beside the keys is wider than the console (then cells fold)."""
    headers = [_text(console, c.header) for c in columns]
    flat = [[_text(console, cell) for cell in row] for row in rows]
    room = console.width
    layouts = [(flat, _plan(columns, flat, headers, room))]
    if any(c.stack for c in columns) and len(layouts[0][1]) > 1:
        stacked = [[_stacked(cell) if columns[i].stack else cell for i, cell in enumerate(row)] for row in flat]
        layouts.append((stacked, _plan(columns, stacked, headers, room)))
    cells, parts = min(layouts, key=lambda layout: (_lines(layout[1], layout[0]), len(layout[1])))
    tables = []
    for number, part in enumerate(parts, 1):
        named = title if len(parts) == 1 or title is None else f"{title} ({number} of {len(parts)})"
        table = Table(title=named, caption=caption if number == len(parts) else None)
        widths = {i: max([_header_width(headers[i]), *(_width(row[i]) for row in cells)]) for i in part}
        fits = _needed(list(widths.values())) <= room  # else rich wraps and folds the cells: nothing is cut
        for i in part:
            table.add_column(headers[i], justify=columns[i].justify, no_wrap=fits,  # type: ignore[arg-type]
                             overflow="fold", min_width=widths[i] if fits else None)
        for row in cells:
            table.add_row(*(row[i] for i in part))
        tables.append(table)
    return tables


def print_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[object]], *,
                title: str | None = None, caption: str | None = None) -> None:
    """Print `rows` under `columns` as `fitted_tables` lays them out."""
    for table in fitted_tables(console, columns, rows, title=title, caption=caption):
        console.print(table)
