"""Terminal renderer: Rich panels (one per section) holding text and tables; control characters
in any text (file, column and prompt names come from the logs) are shown escaped.

The only module that imports Rich for rendering results. No cell or header is ever cut: each
column is at least as wide as its widest cell and its longest header word (headers wrap at
spaces), and a table wider than the screen is split column-wise into stacked parts that repeat
the first (key) column. The key column takes at most half the screen and a lone column what is
left beside it: a longer cell there (a prompt's text) folds over lines, every character kept. Without
a terminal the width is ``COLUMNS`` when set, else :data:`PIPE_WIDTH`. PASS/FAIL cells are green/red on a
colour terminal (``--color``, ``NO_COLOR``, ``FORCE_COLOR``).
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

from ..fmt import printable
from ..views import Table, View

if TYPE_CHECKING:
    from rich.console import RenderableType

_PANEL = 4
"""Columns a panel takes around its content (border and padding, both sides)."""
_CELL = 3
"""Columns a table takes per column beyond its content (padding and one border)."""
_RESULT_STYLES = {"pass": "green", "PASS": "green", "PASSED": "green", "FAIL": "bold red", "FAILED": "bold red"}


def _needs(col: str, cells: list[str]) -> int:
    """The narrowest width that shows every cell whole and breaks the header only at spaces."""
    words = col.split() or [""]
    return max([len(w) for w in words] + [len(c) for c in cells] + [1])


def _natural(col: str, cells: list[str]) -> int:
    return max([len(col)] + [len(c) for c in cells] + [1])


def _widths(t: Table, cells: list[list[str]], room: int) -> list[int]:
    """Each column's least width. A column shows every cell whole on one line and breaks its header only at
    spaces, except where that cannot fit beside the key column: the key column (repeated in every part) takes
    at most half the room, and any other column at most what is left beside it; such a column's long
    cells fold over lines (every character kept, none cut)."""
    needs = [_needs(c, [r[i] for r in cells]) for i, c in enumerate(t.columns)]
    key = min(needs[0], max(room // 2, 8))
    beside = max(room - 1 - 2 * _CELL - key, 8)
    return [key, *(min(n, beside) for n in needs[1:])]


def _chunks(t: Table, cells: list[list[str]], room: int, least: list[int]) -> list[dict[int, int]]:
    """Each stacked part: its columns (column 0 in every part, the others in order while they fit) and the width
    each gets. A column takes its natural width (widest cell and header) when the part has room, else at least
    ``least`` and a header of 12 or its longest word; the part's widths never add up past the room (Rich cannot
    shrink a column under its least width, so a part that did not fit would be cut at the panel's edge)."""
    cols = list(range(len(t.columns)))
    natural = [max(least[i], _natural(t.columns[i], [r[i] for r in cells])) for i in cols]
    whole = [max(n, _needs(t.columns[i], [r[i] for r in cells])) for i, n in enumerate(natural)]
    if sum(n + _CELL for n in whole) + 1 <= room or len(cols) <= 1:
        return [dict(zip(cols, whole, strict=True))]  # fits as it is: the key column whole too
    natural[0] = least[0] if natural[0] > least[0] else natural[0]
    need = [max(least[i], min(natural[i], max(_needs(t.columns[i], [r[i] for r in cells]), 12))) for i in cols]
    need[0] = natural[0]
    parts: list[list[int]] = []
    current = [0]
    used = 1 + need[0] + _CELL
    for i in cols[1:]:
        if len(current) > 1 and used + need[i] + _CELL > room:
            parts.append(current)
            current, used = [0], 1 + need[0] + _CELL
        current.append(i)
        used += need[i] + _CELL
    parts.append(current)
    out = []
    for part in parts:
        widths = {i: need[i] for i in part}
        spare = room - 1 - sum(w + _CELL for w in widths.values())
        for i in part:  # what room is left widens the columns, left to right, up to their natural width
            grow = max(0, min(spare, natural[i] - widths[i]))
            widths[i] += grow
            spare -= grow
        out.append(widths)
    return out


def _rich_tables(t: Table, room: int, color: bool) -> list[RenderableType]:
    from rich.table import Table as RichTable
    from rich.text import Text

    cells = [[printable(c) for c in row] for row in t.cells()]
    least = _widths(t, cells, room)
    parts = _chunks(t, cells, room, least)
    out: list[RenderableType] = []
    for n, idx in enumerate(parts):
        title = t.title if n == 0 else f"{t.title} (continued, {n + 1} of {len(parts)})"
        if len(parts) > 1 and n == 0:
            title = f"{t.title} (1 of {len(parts)})"
        # title and note as lines of the panel, not Rich's title/caption: those wrap at the table's
        # width, and a narrow table (a stacked part of two columns) would break them after a word or two
        if title:
            out.append(Text(printable(title), style="italic"))
        rt = RichTable()
        for i, w in idx.items():
            rt.add_column(printable(t.columns[i]), justify="left" if i == 0 else "right", min_width=least[i],
                          max_width=w, overflow="fold")
        for r in cells:
            rt.add_row(*(Text(r[i], style=_RESULT_STYLES.get(r[i], "")) if color else r[i] for i in idx))
        out.append(rt)
        if t.note and n == len(parts) - 1:
            out.append(Text(printable(t.note), style="dim italic"))
    return out


def _fills(parts: list[RenderableType], width: int) -> bool:
    """Whether a panel's text fills the ``width`` columns by itself (one of its lines as wide as the room
    inside the border and padding). Such a panel is as wide as the screen whatever its tables, and drawn
    expanded it is the same text: Rich need not measure every cell of every table only to find that out."""
    from rich.cells import cell_len
    from rich.text import Text

    room = width - _PANEL
    return any(isinstance(p, Text) and any(cell_len(line) >= room for line in p.plain.splitlines()) for p in parts)


PIPE_WIDTH = 100
"""Columns of terminal text written to a pipe or a file without ``COLUMNS``: what the docs show, and what a
terminal of the usual width shows (tables wider than that continue below, as on a terminal)."""


def render_terminal(view: View, *, color: bool = False, width: int | None = None, full: bool = True) -> str:
    """Rich text of a view; ANSI colours only when ``color`` (the caller decides: the CLI's ``--color``,
    ``NO_COLOR`` and ``FORCE_COLOR``, :mod:`sigmaudit.cli.settings`). ``width`` None: ``COLUMNS`` when set,
    else :data:`PIPE_WIDTH` (a pipe or a file reads as a terminal of the usual width would). ``full`` False:
    the view's first screen (``View.brief``) and a line naming what ``--full`` adds."""
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.text import Text

    if width is None:
        env = os.environ.get("COLUMNS", "")
        width = int(env) if env.isdigit() and int(env) > 0 else PIPE_WIDTH
    room = max(width - _PANEL, 20)
    buf = io.StringIO()
    # markup and emoji codes off: a cell is the log's text (a prompt "[bold]p1" kept whole, ":fire:" not an emoji)
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False, markup=False,
                      emoji=False)
    console.print(Text(printable(view.title), style="bold"))
    sections = view.sections if full or view.brief is None else view.brief
    for s in sections:
        parts: list[RenderableType] = [Text(printable(line)) for line in s.lines]
        for t in s.tables:
            parts += _rich_tables(t, room, color)
        console.print(Panel(Group(*parts), title=Text(printable(s.title)), title_align="left",
                            expand=_fills(parts, width)))
    if sections is not view.sections:
        hidden = [s.title for s in view.sections if s.title not in {b.title for b in sections}]
        if hidden:
            console.print(Text(printable(f"--full adds: {'; '.join(hidden)}"), style="dim"))
    return buf.getvalue()
