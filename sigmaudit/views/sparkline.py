"""Compact one-line charts for the terminal (plain text, no colour, no computation beyond scaling).

>>> sparkline([0.0, 0.5, 1.0], lo=0.0, hi=1.0)
'▁▅█'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"
"""Eight levels, lowest first."""
MISSING = " "
"""Drawn for None or NaN."""


def _finite(v: float | None) -> bool:
    return v is not None and not math.isnan(v) and not math.isinf(v)


def sparkline(
    values: Sequence[float | None],
    *,
    lo: float | None = None,
    hi: float | None = None,
    width: int | None = None,
) -> str:
    """One block character per value, scaled from ``lo`` (▁) to ``hi`` (█).

    ``lo``/``hi`` default to the smallest and largest finite value (pass fixed
    bounds, e.g. 0 and 1 for rates, to make several lines comparable); values
    outside are clipped. A flat series draws at the lowest level. With
    ``width`` and more values than that, evenly spaced values are shown
    (first and last always included). None/NaN draw as a blank.
    """
    vals = list(values)
    if width is not None and width >= 1 and len(vals) > width:
        if width == 1:
            vals = [vals[-1]]
        else:
            step = (len(vals) - 1) / (width - 1)
            vals = [vals[round(i * step)] for i in range(width)]
    finite = [float(v) for v in vals if _finite(v)]
    if not finite:
        return MISSING * len(vals)
    low = min(finite) if lo is None else lo
    high = max(finite) if hi is None else hi
    span = high - low
    out = []
    top = len(BLOCKS) - 1
    for v in vals:
        if not _finite(v):
            out.append(MISSING)
            continue
        if span <= 0:
            out.append(BLOCKS[0])
            continue
        frac = min(1.0, max(0.0, (float(v) - low) / span))  # type: ignore[arg-type]
        out.append(BLOCKS[round(frac * top)])
    return "".join(out)
