"""What a result looks like to a reader: a :class:`View` of titled :class:`Section` blocks of
text lines and :class:`Table` s of already-computed raw values, plus the result's JSON contract.

Views are built from audit results by the modules beside this one (``views/scan.py`` for a
:class:`~sigmaudit.audits.scan.ScanReport`, ...); renderers lay them out and format numbers
with :mod:`sigmaudit.fmt`; neither computes anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..fmt import RATE, format_value

if TYPE_CHECKING:  # the report page's classes load with the html renderer and the report, not with every view
    from .page import Page


@dataclass(frozen=True)
class Table:
    """A table of raw values (float, int, str, bool or None); renderers format them."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str | None = None
    """A line shown under the table (estimator, ε, G, ...)."""
    digits: int | tuple[int, ...] = RATE
    """Decimals for floats (:mod:`sigmaudit.fmt`'s number style: ``RATE`` for rates, ``AMOUNT`` for
    expected counts and ratios): one for the table or one per column."""
    row_digits: tuple[int | None, ...] = ()
    """Decimals per row, overriding ``digits`` (a quantity/value table mixes rates and amounts)."""

    def decimals(self, row: int, col: int) -> int:
        """Decimals of the float in cell (``row``, ``col``)."""
        if row < len(self.row_digits) and self.row_digits[row] is not None:
            return int(self.row_digits[row])  # type: ignore[arg-type]
        return self.digits if isinstance(self.digits, int) else self.digits[col]

    def cells(self) -> list[list[str]]:
        """Every cell as text in the number style (renderers escape and lay them out)."""
        return [[format_value(v, self.decimals(i, j)) for j, v in enumerate(row)] for i, row in enumerate(self.rows)]


@dataclass(frozen=True)
class Section:
    """A titled block: text lines, then tables."""

    title: str
    lines: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()


FIRST_SCREEN_LINES = 30
"""Lines a command's default terminal output fits in at 100 columns (``--full`` prints every section)."""


@dataclass(frozen=True)
class View:
    """What a result looks like to a reader: a title and its sections."""

    title: str
    sections: tuple[Section, ...] = field(default_factory=tuple)
    csv_table: str | None = None
    """Title of the table written by ``--format csv`` (default: the first table)."""
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    """The result's JSON contract (what ``--format json`` writes)."""
    parts: tuple[View, ...] = ()
    """A combined view's parts, in the order a page shows them, each with its ``heading`` and the
    sections the page shows (a report: the plan, the scan, the ``--by`` table, the trend, the backtest)."""
    heading: str | None = None
    """The heading a page puts over this view when it is a part of another (None: the view's title)."""
    fold_rows: int = 40
    """A page folds away a table of more rows than this (a ``<details>`` element)."""
    page: Page | None = None
    """The report page's cards, recommendation, charts and notes (None: a plain page of the sections)."""
    csv_records: tuple[dict[str, Any], ...] | None = None
    """The rows ``--format csv`` writes, keyed exactly as in the JSON contract (nested objects
    flattened as ``outer_inner``); None: the ``csv_table`` instead."""
    brief: tuple[Section, ...] | None = None
    """The first screen: what a terminal shows without ``--full`` (the headline and what to do, at most
    :data:`FIRST_SCREEN_LINES` lines at 100 columns); None: the whole view is the first screen. Other formats
    always carry every section."""

    def tables(self) -> list[Table]:
        """Every table, in order."""
        return [t for s in self.sections for t in s.tables]
