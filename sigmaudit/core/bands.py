"""Bands of difficulty p ("extreme", "middle"): defined once, with the text every label derives from.

Importing this module costs nothing (numpy is imported only when a band tests values), so help
texts and labels can name the bands without loading the numerical stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True)
class Band:
    """A band of p: ``lo <= p <= hi`` (bounds inclusive) or, when ``outside``, p < lo or p > hi."""

    name: str
    lo: float
    hi: float
    outside: bool = False

    def contains(self, p: ArrayLike) -> NDArray[np.bool_]:
        """Boolean mask of the p values inside the band."""
        import numpy as np

        pa = np.asarray(p, dtype=np.float64)
        if self.outside:
            return (pa < self.lo) | (pa > self.hi)
        return (pa >= self.lo) & (pa <= self.hi)

    def describe(self, var: str = "p") -> str:
        """The band as text, ``"p < 0.1 or p > 0.9"`` or ``"0.4 ≤ p ≤ 0.6"`` (every label derives from it)."""
        if self.outside:
            return f"{var} < {self.lo:g} or {var} > {self.hi:g}"
        return f"{self.lo:g} ≤ {var} ≤ {self.hi:g}"


EXTREME = Band("extreme", 0.1, 0.9, outside=True)
"""p < 0.1 or p > 0.9."""
MIDDLE = Band("middle", 0.4, 0.6)
"""0.4 <= p <= 0.6."""
