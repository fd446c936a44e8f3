"""Formatting of raw values for the text renderers (shared, no computation)."""

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
