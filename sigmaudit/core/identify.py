"""What a log with few samples per prompt can and cannot say about silent groups at G.

With n samples of a prompt, the counts k identify at most the first n moments of the
distribution of p across prompts (E[p], E[p²], ..., E[pⁿ]: the chance that m given samples
are all right is E[pᵐ]). The corpus silent rate at G, E[p^G + (1 − p)^G], needs more when
G > n: one sample per prompt gives only E[p], which fits "every p = 0.3" (silent rate at
G = 8: 0.3⁸ + 0.7⁸ = 0.0577) and "30% of prompts always right, 70% never" (silent rate 1)
equally well. A prior fitted to such counts still returns a number, but the data did not
choose it.

:func:`silent_interval` gives the sharp range of the corpus silent rate over every
distribution of p (on a fine grid) whose first moments match the log's unbiased moment
estimates to within ``Z_SLACK`` standard errors: a linear programme. :func:`thin_corpus`
says when the check is needed: when most prompts have fewer samples than the corpus prior's
parameters (point masses at 0 and 1 plus a Beta: four), so the fitted prior is not identified
either. Well-sampled corpora extrapolate through the fitted prior, as docs/theory.md describes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, as_group_size


class NotIdentifiedError(ValueError):
    """The logs cannot determine the quantity asked for (a refusal, never a guess); its message is
    one line: what is not identified, why, and what would work."""


RICH_SAMPLES = 4
"""Samples per prompt from which the corpus prior (atoms at 0 and 1 plus a Beta: four parameters)
is identified; a corpus where fewer than half the prompts have this many is *thin*."""
MAX_MOMENTS = 3
"""Moments used by the interval (a thin corpus identifies at most E[p], E[p²], E[p³] well)."""
Z_SLACK = 3.0
"""Each moment may differ from its estimate by this many standard errors."""
MAX_WIDTH = 0.05
"""Widest identified range of the corpus silent rate for which a thin corpus still gets a number."""
GRID_POINTS = 2001


def thin_corpus(n: ArrayLike, weight: ArrayLike) -> bool:
    """Fewer than half the prompts (by ``weight``) have :data:`RICH_SAMPLES` or more samples."""
    n_arr = np.asarray(n, dtype=np.int64).ravel()
    w = np.asarray(weight, dtype=np.float64).ravel()
    return float(w[n_arr >= RICH_SAMPLES].sum()) < 0.5 * float(w.sum())


def _falling(x: NDArray[np.float64], m: int) -> NDArray[np.float64]:
    out = np.ones_like(x)
    for j in range(m):
        out = out * (x - j)
    return out


def moment_estimates(
    n: ArrayLike, k: ArrayLike, weight: ArrayLike, moments: int = MAX_MOMENTS
) -> list[tuple[int, float, float]]:
    """(m, estimate of E[pᵐ], its standard error) for each m ≤ ``moments`` that at least two prompts
    with n ≥ m inform. Each prompt's unbiased estimate of pᵐ is k(k−1)…(k−m+1) / n(n−1)…(n−m+1)."""
    n_arr, k_arr = as_counts(n, k)
    nf, kf = n_arr.ravel().astype(np.float64), k_arr.ravel().astype(np.float64)
    w = np.asarray(weight, dtype=np.float64).ravel()
    out = []
    for m in range(1, moments + 1):
        use = nf >= m
        total = float(w[use].sum())
        if total < 2:
            break
        u = _falling(kf[use], m) / _falling(nf[use], m)
        mean = float(w[use] @ u / total)
        var = float(w[use] @ (u - mean) ** 2 / (total - 1))
        out.append((m, mean, float(np.sqrt(var / total))))
    return out


def silent_interval(n: ArrayLike, k: ArrayLike, weight: ArrayLike, G: int) -> tuple[float, float]:
    """(lowest, highest) corpus silent rate E[p^G + (1 − p)^G] over the distributions of p whose
    moments match :func:`moment_estimates` within ``Z_SLACK`` standard errors.

    The true distribution satisfies the constraints (up to the slack's coverage), so the true
    silent rate lies in the interval; its width is what the log leaves open.

    >>> lo, hi = silent_interval([1] * 1000, [0] * 700 + [1] * 300, [1] * 1000, 8)
    >>> round(lo, 3), round(hi, 3)   # every p = 0.3 (0.058, less the slack) ... 30% always right, 70% never
    (0.035, 1.0)
    """
    from scipy.optimize import linprog

    g = int(as_group_size(G))
    grid = np.linspace(0.0, 1.0, GRID_POINTS)
    f = grid**g + (1.0 - grid) ** g
    estimates = moment_estimates(n, k, weight)
    eq = np.ones((1, grid.size))
    for widen in (1.0, 2.0, 4.0, 8.0):  # moments from different prompt subsets may clash: widen
        rows, upper = [], []
        for m, mean, se in estimates:
            slack = widen * Z_SLACK * se + 1e-9
            power = grid**m
            rows += [power, -power]
            upper += [mean + slack, -(mean - slack)]
        a_ub = np.array(rows) if rows else None
        b_ub = np.array(upper) if rows else None
        ends = []
        for sign in (1.0, -1.0):
            res = linprog(sign * f, A_ub=a_ub, b_ub=b_ub, A_eq=eq, b_eq=[1.0], bounds=(0.0, None),
                          method="highs")
            if not res.success:
                break
            ends.append(float(np.clip(sign * res.fun, 0.0, 1.0)))
        if len(ends) == 2:
            return ends[0], ends[1]
    return 0.0, 1.0


def require_identified(n: ArrayLike, k: ArrayLike, weight: ArrayLike, G: int) -> None:
    """Raise :class:`NotIdentifiedError` when a thin corpus (:func:`thin_corpus`)
    leaves the silent rate at G open by more than :data:`MAX_WIDTH` (:func:`silent_interval`).

    A corpus where every prompt has n ≥ G never needs this (the unbiased estimate exists), and a
    well-sampled corpus extrapolates through its fitted prior.
    """
    n_arr = np.asarray(n).ravel()
    w = np.asarray(weight, dtype=np.float64).ravel()
    if not thin_corpus(n_arr, w):
        return
    lo, hi = silent_interval(n_arr, k, w, G)
    if hi - lo <= MAX_WIDTH:
        return
    order = np.argsort(n_arr)
    cum = np.cumsum(w[order])
    median = int(n_arr[order][np.searchsorted(cum, 0.5 * cum[-1])])
    known = len(moment_estimates(n_arr, k, w))
    which = "E[p]" if known <= 1 else ", ".join(f"E[p{'²³'[m - 2]}]" if m > 1 else "E[p]"
                                                  for m in range(1, known + 1))
    raise NotIdentifiedError(
        f"the silent rate at G = {int(G)} is not identified by these logs: {int(round(w.sum())):,} prompts with a "
        f"median of {median} sample{'s' if median != 1 else ''} each fix only {which}, and every silent rate "
        f"from {lo:.4f} to {hi:.4f} fits them; log at least {RICH_SAMPLES} samples per prompt ({int(G)} for the "
        "unbiased estimate), or give a pass-rate file over more samples (--rate-col with --samples N or --n-col)")
