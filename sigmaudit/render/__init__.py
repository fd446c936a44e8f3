"""Renderers: one module per output format behind one interface.

A result object (a frozen dataclass) offers two things to renderers:

- ``to_dict()``: the JSON contract (plain types, ``schema_version`` first);
- ``view()``: a :class:`View` — titled sections of text lines and tables of
  already-computed values — which the terminal, markdown and csv renderers lay
  out. Renderers format numbers; they never compute them.

Choose a renderer with :func:`render` and a :class:`Format`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

SCHEMA_VERSION = 1
"""Version of every JSON contract; bumped (and noted in CHANGELOG.md) on any breaking change."""


class Format(StrEnum):
    """Output formats a command can produce."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


@dataclass(frozen=True)
class Table:
    """A table of raw values (float, int, str, bool or None); renderers format them."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str | None = None
    """A line shown under the table (estimator, ε, G, ...)."""
    digits: int = 4
    """Decimals for floats."""


@dataclass(frozen=True)
class Section:
    """A titled block: text lines, then tables."""

    title: str
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()


@dataclass(frozen=True)
class View:
    """What a result looks like to a reader: a title and its sections."""

    title: str
    sections: tuple[Section, ...] = field(default_factory=tuple)
    csv_table: str | None = None
    """Title of the table written by ``--format csv`` (default: the first table)."""

    def tables(self) -> list[Table]:
        """Every table, in order."""
        return [t for s in self.sections for t in s.tables]


class Renderable(Protocol):
    """What every result object offers to the renderers."""

    def to_dict(self) -> dict[str, Any]: ...

    def view(self) -> View: ...


def render(result: Renderable, fmt: Format, *, color: bool = False, width: int | None = None) -> str:
    """Render ``result`` in ``fmt`` and return the text (ending with a newline)."""
    if fmt is Format.json:
        from .json import render_json

        return render_json(result)
    if fmt is Format.markdown:
        from .markdown import render_markdown

        return render_markdown(result.view())
    if fmt is Format.csv:
        from .csv import render_csv

        return render_csv(result.view())
    from .terminal import render_terminal

    return render_terminal(result.view(), color=color, width=width)
