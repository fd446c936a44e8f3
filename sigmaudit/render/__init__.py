"""Renderers: one module per output format behind one interface.

Every renderer takes a :class:`~sigmaudit.views.View` (built by
:func:`sigmaudit.views.build_view` from an audit result): titled sections of text lines and
tables of already-computed values, plus the result's JSON contract (``view.data``). Renderers
format numbers (with :mod:`sigmaudit.fmt`); they never compute them, and they import nothing
but views.

Choose a renderer with :func:`render` and a :class:`Format`.
"""

from __future__ import annotations

from enum import StrEnum

from ..views import View

SCHEMA_VERSION = 1
"""Version of every JSON contract; bumped (and noted in CHANGELOG.md) on any breaking change."""


class Format(StrEnum):
    """Output formats a command can produce."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"
    html = "html"


def render(view: View, fmt: Format, *, color: bool = False, width: int | None = None, full: bool = True) -> str:
    """Render ``view`` in ``fmt`` and return the text (ending with a newline). ``full`` False: the terminal
    shows the view's first screen (``View.brief``); every other format is always whole."""
    if fmt is Format.json:
        from .json import render_json

        return render_json(view)
    if fmt is Format.markdown:
        from .markdown import render_markdown

        return render_markdown(view)
    if fmt is Format.csv:
        from .csv import render_csv

        return render_csv(view)
    if fmt is Format.html:
        from .html import render_html

        return render_html(view)
    from .terminal import render_terminal

    return render_terminal(view, color=color, width=width, full=full)
