"""The one place values become text: table cells, percentages, NaN -> None; and text made safe to show
or to open: control characters escaped (:func:`printable`), spreadsheet formulas defused
(:func:`csv_cell`). Every layer uses it.

- The number style (one for every command and format a person reads; see the block above
  :data:`RATE`): counts with thousands separators, rates with :data:`RATE` decimals, expected
  counts and ratios with :data:`AMOUNT` decimals, shares in sentences via :func:`pct`.

- :func:`printable`: a file name, column name or prompt id from a hostile log can hold terminal
  escape sequences (``\x1b[2J`` clears the screen, OSC 8 makes a link, a forged line could say
  "all checks passed"). Every C0/C1 control character (and the bidirectional overrides that
  reorder text) is shown as a visible escape (``\x1b``) before it reaches a terminal, stderr or Rich.
- :func:`csv_cell`: a text cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return
  is run as a formula by spreadsheet programs (OWASP "CSV injection"); such cells get a leading
  ``'``, which spreadsheets display as text. Numbers are written as numbers.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

# --------------------------------------------------------------------------- the number style
# One style for every number a person reads (terminal tables, markdown, HTML, text lines), whatever
# the command; JSON and CSV keep raw numbers (no separators, full precision) for machines.
#
# - counts, group sizes, steps, budgets (int): thousands separators, no decimals -- 240,000
# - rates, probabilities, shares, pass rates, fidelity φ, E[σ], scores (Brier, log loss, R², an
#   error): RATE decimals -- 0.5990; an interval bound has the decimals of its point
# - expected counts and ratios of counts (expected silent groups, effective rollouts, signal
#   prompts per batch, rollouts per signal prompt, groups drawn per kept group, Σ E[σ], a
#   difficulty weight): AMOUNT decimals with thousands separators -- 2,395.80
# - a share in a sentence: pct(), one decimal -- 59.9%
# - a value the user typed (ε, a limit, p in calc) is echoed as typed (``:g``)
# - a float of LARGE or more: scientific notation with the same decimals -- 1.2500e+293
# A table says which quantity each column (or, for a quantity/value table, each row) holds by its
# decimals (views.Table.digits / row_digits); renderers call format_value with them.

RATE = 4
"""Decimals of a rate, probability, share, fidelity, E[σ] or score (and of an interval bound of one)."""
PERCENT = -1
"""Digits marker of a share shown as a percentage with one decimal (:func:`pct`): the terminal, markdown
and HTML show ``60.2%``, CSV and JSON keep the fraction."""
AMOUNT = 2
"""Decimals of an expected count or a ratio of counts."""
LARGE = 1e15
"""Floats at least this large are shown in scientific notation (beyond it every digit of a fixed
notation would be noise: a double holds about 16 significant digits)."""


def format_value(value: Any, digits: int = RATE, none: str = "—") -> str:
    """Format one number for a person: integers with thousands separators (``240,000``), floats to
    ``digits`` decimals with separators (``2,395.80``), None/NaN as ``none``, booleans as yes/no.

    0 or 1 is shown only when exactly true (a rate of 3e-11 is ``<0.0001``, not ``0.0000``).
    """
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return none
        if digits == PERCENT:
            return pct(value)
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if abs(value) >= LARGE:  # 1.2500e+293, not 294 digits
            return f"{value:.{digits}e}"
        text = f"{value:,.{digits}f}"
        shown = float(text.replace(",", ""))
        if value != 0.0 and shown == 0.0:
            return f"<{10.0**-digits:.{digits}f}" if value > 0 else f">-{10.0**-digits:.{digits}f}"
        if value != 1.0 and shown == 1.0 and value < 1.0:
            return f">{1 - 10.0**-digits:.{digits}f}"
        return text
    return str(value)


def format_count(x: float) -> str:
    """A count-like number (a median of counts): an integer when whole, else AMOUNT decimals."""
    return format_value(int(x)) if float(x).is_integer() else format_value(float(x), AMOUNT)


def plural(n: int, word: str, words: str | None = None) -> str:
    """A count with its noun, grouped and grammatical: ``plural(1, "file")`` is "1 file",
    ``plural(4000, "group")`` is "4,000 groups"; ``words`` for an irregular plural ("1 prompt has",
    "2 prompts have" by ``plural(n, "prompt has", "prompts have")``)."""
    return f"{format_value(int(n))} {word if n == 1 else (words if words is not None else word + 's')}"


def pct(x: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage with ``digits`` decimals; "—" for None/NaN.

    0% and 100% are shown only when exactly true (0.0004 is "<0.1%", 0.99996 is ">99.9%"): the
    one percent formatter of sigmaudit (tables, notes, reasons, HTML captions).
    """
    if x is None or math.isnan(x):
        return "—"
    text = f"{100.0 * x:.{digits}f}%"
    step = 10.0 ** -digits
    if x != 0.0 and float(text[:-1]) == 0.0:
        return f"<{step:.{digits}f}%" if x > 0 else f">-{step:.{digits}f}%"
    if x != 1.0 and float(text[:-1]) == 100.0:
        return f">{100.0 - step:.{digits}f}%"
    return text


def none_if_nan(x: Any) -> float | None:
    """A float, or None for None/NaN/±inf (the one NaN -> None rule, for JSON and tables)."""
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) or math.isinf(value) else value


def mean_or_none(values: Any) -> float | None:
    """Mean of the values that are not None (None when there are none)."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_TAB = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    c = match.group(0)
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, keep_tabs: bool = False) -> str:
    """``text`` with control characters shown as escapes (``\\x1b``, ``\\n``-as-``\\x0a``, ``\\u202e``).

    >>> printable("run\\x1b[2J.csv")
    'run\\\\x1b[2J.csv'
    """
    s = str(text)
    return (_CONTROL if keep_tabs else _CONTROL_OR_TAB).sub(_escape, s)


def csv_cell(value: object) -> object:
    """A CSV cell with a leading ``'`` when it is text a spreadsheet would run as a formula.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("-2+3"), csv_cell(-2.5), csv_cell("p17")
    ("'=HYPERLINK(1)", "'-2+3", -2.5, 'p17')
    """
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def display_pair(value: float, limit: float, digits: int = RATE) -> tuple[str, str]:
    """``value`` and ``limit`` with ``digits`` decimals, or more until two different numbers print
    differently (a failing 0.50004 never shows as ``0.5000 > 0.5000``)."""
    for d in range(digits, 17):
        a, b = format_value(float(value), d), format_value(float(limit), d)
        if a != b or value == limit:
            return a, b
    return repr(float(value)), repr(float(limit))


def display_pct_pair(value: float, limit: float, digits: int = 1) -> tuple[str, str]:
    """:func:`display_pair` for shares: percentages (:func:`pct`) with ``digits`` decimals, or more until two
    different numbers print differently (a failing 50.004 % never shows as ``50.0% > 50.0%``)."""
    for d in range(digits, 15):
        a, b = pct(float(value), d), pct(float(limit), d)
        if a != b or value == limit:
            return a, b
    return repr(float(value)), repr(float(limit))


def toml_text(value: Any) -> str:
    """A config value as TOML writes it (for notes and errors): ``true``, ``0.5``, ``"logs/"``, ``[8, 16]``."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{…}"
    return str(value)


def settings_line(file: str, values: Any) -> str:
    """What a config file set for a run, in one line: ``settings from ./sigmaudit.toml: quiet = true; [check]
    last-steps = 1, max-silent = 0.1`` (``values``: (table, key, value) as written; table "" for top-level keys)."""
    tables: dict[str, list[str]] = {}
    for table, key, value in values:
        tables.setdefault(table, []).append(f"{key} = {toml_text(value)}")
    parts = [(f"{table} " if table else "") + ", ".join(keys) for table, keys in tables.items()]
    return f"settings from {file}: " + "; ".join(parts)
