"""Argument checks shared by the formula modules (ValueError quoting the bad value)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _first_bad(arr: NDArray, bad: NDArray) -> object:
    return arr[bad].flat[0].item() if np.any(bad) else None


def as_prob(p: ArrayLike, name: str = "p") -> NDArray[np.float64]:
    """p as a float array, every value in [0, 1]."""
    arr = np.asarray(p, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0)
    if np.any(bad):
        raise ValueError(f"{name} must lie in [0, 1], got {_first_bad(arr, bad)!r}")
    return arr


def as_group_size(G: ArrayLike, name: str = "G", minimum: int = 1) -> NDArray[np.int64]:
    """G as an int64 array of whole numbers >= ``minimum``."""
    raw = np.asarray(G)
    if raw.dtype.kind == "O" and all(isinstance(x, int) and x > 2**62 for x in raw.flat[:1]):
        raise ValueError(f"{name} must be at most 2**62, got {raw.flat[0]!r}")  # an int too large for int64
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {raw.flat[0]!r}")
    if raw.dtype.kind in "iu" and raw.size and minimum <= int(raw.min()) and int(raw.max()) <= 2**62:
        return raw.astype(np.int64)  # whole numbers in range: no float round trip (a million counts: 8 ms less)
    arr = raw.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (arr < minimum)
    if np.any(bad):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {_first_bad(arr, bad)!r}")
    # int64 conversion of larger values wraps to negative numbers (1e20 -> -2**63)
    huge = arr > 2.0**62
    if np.any(huge):
        raise ValueError(f"{name} must be at most 2**62, got {_first_bad(arr, huge)!r}")
    return arr.astype(np.int64)


def as_counts(n: ArrayLike, k: ArrayLike, n_name: str = "n") -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(n, k) as int64 arrays with 0 <= k <= n and n >= 1 (``n_name`` names n in messages)."""
    n_arr = as_group_size(n, n_name)
    k_int = np.asarray(k)
    if k_int.dtype.kind in "iu" and k_int.size and 0 <= int(k_int.min()) and int(k_int.max()) <= 2**62:
        k_arr = k_int.astype(np.int64)  # whole numbers in int64's range: no float round trip
    else:
        k_raw = np.asarray(k, dtype=np.float64)
        bad = ~np.isfinite(k_raw) | (k_raw != np.round(k_raw)) | (k_raw < 0)
        if np.any(bad):
            raise ValueError(f"k must be a whole number >= 0, got {_first_bad(k_raw, bad)!r}")
        huge = k_raw > 2.0**62  # above every n (as_group_size's bound), and would wrap around in int64
        if np.any(huge):
            raise ValueError(f"k must not exceed {n_name}, got k={_first_bad(k_raw, huge)!r}")
        k_arr = k_raw.astype(np.int64)
    n_arr, k_arr = np.broadcast_arrays(n_arr, k_arr)
    over = k_arr > n_arr
    if np.any(over):
        i = np.flatnonzero(over.ravel())[0]
        raise ValueError(f"k must not exceed {n_name}, got k={k_arr.flat[i]} > {n_name}={n_arr.flat[i]}")
    return n_arr, k_arr


EPS_MIN = 1e-6
"""Smallest ε the exact group-size search accepts. Below it the answer runs past 10^8 samples per
group, and 1 − φ (summed in double precision to about 1e-9 at G ~ 10^6) can no longer be told from
ε: the "smallest G" would be rounding noise. The closed form takes any ε in (0, 1)."""


def as_eps(eps: ArrayLike, minimum: float = 0.0) -> NDArray[np.float64]:
    """ε as a float array, every value in the open interval (0, 1) and at least ``minimum``
    (:data:`EPS_MIN` wherever ε feeds the exact group-size search)."""
    arr = np.asarray(eps, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr <= 0.0) | (arr >= 1.0)
    if np.any(bad):
        raise ValueError(f"eps must lie in (0, 1), got {_first_bad(arr, bad)!r}")
    small = arr < minimum
    if np.any(small):
        raise ValueError(f"eps must be at least {minimum:g} (the exact group-size search cannot resolve a "
                         f"smaller ε), got {_first_bad(arr, small)!r}")
    return arr


def scalar_or_array(x: NDArray, like: tuple[ArrayLike, ...]) -> NDArray | float:
    """Return a Python float when every input was a scalar, else the array."""
    if all(np.ndim(v) == 0 for v in like):
        return float(x)
    return x
