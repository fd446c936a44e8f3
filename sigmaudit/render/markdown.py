"""Markdown renderer: sections as headings, tables as pipe tables."""

from __future__ import annotations

from ..fmt import printable
from ..views import Table, View


def _table(t: Table) -> list[str]:
    out = [f"**{t.title}**", ""] if t.title else []
    out.append("| " + " | ".join(t.columns) + " |")
    out.append("|" + "|".join("---" for _ in t.columns) + "|")
    for row in t.cells():
        cells = [printable(c).replace("|", "\\|") for c in row]
        out.append("| " + " | ".join(cells) + " |")
    if t.note:
        out += ["", f"_{t.note}_"]
    out.append("")
    return out


def render_markdown(view: View) -> str:
    """Markdown text of a view."""
    lines = [f"# {view.title}", ""]
    for s in view.sections:
        lines += [f"## {s.title}", ""]
        for text in s.lines:
            lines += [printable(text), ""]
        for t in s.tables:
            lines += _table(t)
    return "\n".join(lines).rstrip() + "\n"
