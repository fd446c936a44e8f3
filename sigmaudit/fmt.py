"""The one place numbers become text: table cells, percentages, NaN -> None (every layer uses it)."""

from __future__ import annotations

import math
from typing import Any


def format_value(value: Any, digits: int = 4, none: str = "—") -> str:
    """Format one table cell: floats to ``digits`` decimals, None/NaN as ``none``."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return none
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        text = f"{value:.{digits}f}"
        # Show 0 or 1 only when exactly true (a rate of 3e-11 is not 0).
        if value != 0.0 and float(text) == 0.0:
            return f"<{10.0**-digits:.{digits}f}" if value > 0 else f">-{10.0**-digits:.{digits}f}"
        if value != 1.0 and float(text) == 1.0 and value < 1.0:
            return f">{1 - 10.0**-digits:.{digits}f}"
        return text
    return str(value)


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
