"""Names shown to readers, each derived once from the constant it names."""

from __future__ import annotations

from ..core.weighting import EXTREME, MIDDLE

EXTREME_LABEL = EXTREME.describe("p")
"""``p < 0.1 or p > 0.9``: the extreme band of :data:`sigmaudit.core.weighting.EXTREME`."""
MIDDLE_LABEL = MIDDLE.describe("p")
"""``0.4 ≤ p ≤ 0.6``: the middle band of :data:`sigmaudit.core.weighting.MIDDLE`."""
QUANTILE_NAMES = {0.25: "lower quartile", 0.5: "median", 0.75: "upper quartile"}
"""How the quantiles of p̂ are named in captions, legends and tables."""
