"""Terminal renderer: Rich panels (one per section) holding text and tables; control characters
in any text (file, column and prompt names come from the logs) are shown escaped.

The only module that imports Rich for rendering results.
"""

from __future__ import annotations

import io

from ..fmt import format_value, printable
from ..views import Table, View


def _rich_table(t: Table):  # noqa: ANN202 - rich type imported lazily
    from rich.table import Table as RichTable

    rt = RichTable(title=printable(t.title) if t.title else None, caption=printable(t.note) if t.note else None,
                   title_justify="left", caption_justify="left")
    for i, col in enumerate(t.columns):
        rt.add_column(printable(col), justify="left" if i == 0 else "right")
    for row in t.rows:
        rt.add_row(*(printable(format_value(v, t.digits)) for v in row))
    return rt


def render_terminal(view: View, *, color: bool = False, width: int | None = None) -> str:
    """Rich text of a view; ANSI colours only when ``color``."""
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width or 100, highlight=False)
    console.print(Text(printable(view.title), style="bold"))
    for s in view.sections:
        parts = [Text(printable(line)) for line in s.lines] + [_rich_table(t) for t in s.tables]
        console.print(Panel(Group(*parts), title=printable(s.title), title_align="left", expand=False))
    return buf.getvalue()
