"""Markdown renderer: sections as headings, tables as pipe tables.

Text from a log (a prompt id, a ``--by`` value, a file or column name) reaches GitHub's step summary
through this renderer, so it is made inert: an HTML tag (``<img …>``) has its ``<`` written ``&lt;``,
a link or image (``[x](javascript:…)``) its ``]`` escaped, an @mention gets a zero-width space after
the ``@``; a ``<`` before a digit or a space (``<0.0001``, ``p < 0.1``) and brackets of an interval
(``[0.55, 0.65]``) are left as they are.
"""

from __future__ import annotations

import re

from ..fmt import printable
from ..views import Table, View

_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_LINK = re.compile(r"\](?=[(\[])")
_MENTION = re.compile(r"@(?=[\w-])")


def inert(text: str) -> str:
    """``text`` (control characters escaped) that GitHub markdown shows as written: no HTML, no link
    or image, no @mention, no cell break."""
    text = _TAG.sub("&lt;", printable(text))
    text = _LINK.sub(r"\\]", text)
    return _MENTION.sub("@\u200b", text).replace("|", "\\|")


def _table(t: Table) -> list[str]:
    out = [f"**{inert(t.title)}**", ""] if t.title else []
    out.append("| " + " | ".join(inert(c) for c in t.columns) + " |")
    out.append("|" + "|".join("---" for _ in t.columns) + "|")
    out.extend("| " + " | ".join(inert(c) for c in row) + " |" for row in t.cells())
    if t.note:
        out += ["", f"_{inert(t.note)}_"]
    out.append("")
    return out


def render_markdown(view: View) -> str:
    """Markdown text of a view."""
    lines = [f"# {inert(view.title)}", ""]
    for s in view.sections:
        lines += [f"## {inert(s.title)}", ""]
        for text in s.lines:
            lines += [inert(text), ""]
        for t in s.tables:
            lines += _table(t)
    return "\n".join(lines).rstrip() + "\n"
