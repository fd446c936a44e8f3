"""Expected update size E[σ](p, G), fidelity φ and its large-G attenuation.

docs/theory.md, "Expected update, fidelity and the group-size law":

    E[σ](p, G) = Σ_k Binom(k; G, p) · sqrt(k (G − k)) / G        (exact)
    φ(p, G)    = E[σ] / sqrt(p (1 − p))          ∈ [0, 1], → 1 as G → ∞
    attenuation  φ ≈ 1 − 1 / (8 G p (1 − p))     (large G; in range while (G + 1) p (1 − p) > 7/16)

The sum runs over log-binomial weights (lgamma plus a log-ratio recurrence,
so importing this module costs no scipy start-up) restricted to the
window of k holding all but ~1e-30 of the binomial mass, so it is exact to
double precision and stays cheap and stable up to G = 100,000 and beyond, and
for p near 0 or 1. Every function is evaluated once per distinct (p, G) pair.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_group_size, as_prob, scalar_or_array

_CHUNK_ELEMENTS = 1 << 21  # cells of the (pairs × k-window) matrix sharing one width
_BLOCK_ELEMENTS = 1 << 15  # cells computed at once within a chunk (its temporaries stay in the CPU's cache: 2x faster)
_WINDOW_SD = 13.0  # half-width of the k window in binomial standard deviations
_WINDOW_PAD = 12  # ...plus this many k on each side (Poisson-like tails at tiny p)


_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _log_binom_coef(G: NDArray[np.float64], k: NDArray[np.float64]) -> NDArray[np.float64]:
    """log C(G, k) elementwise from the standard library's lgamma (no scipy import needed)."""
    return np.asarray(_lgamma(G + 1.0) - _lgamma(k + 1.0) - _lgamma(G - k + 1.0), dtype=np.float64)


DENSE_G_MAX = 64
"""Up to this G the sum runs densely over k = 0..G from a cached table of log C(G, k)."""


@functools.cache
def _dense_tables() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """log C(G, k) and σ(k, G) for 0 <= k <= G <= DENSE_G_MAX (rows G, columns k; -inf/0 beyond G)."""
    g = np.arange(DENSE_G_MAX + 1, dtype=np.float64)[:, None]
    k = np.arange(DENSE_G_MAX + 1, dtype=np.float64)[None, :]
    valid = k <= g
    kk = np.where(valid, k, 0.0)
    log_c = np.where(valid, _log_binom_coef(np.broadcast_to(g, kk.shape), kk), -np.inf)
    with np.errstate(invalid="ignore"):
        sigma = np.where(valid & (g > 0), np.sqrt(np.maximum(kk * (g - kk), 0.0)) / np.maximum(g, 1.0), 0.0)
    return log_c, sigma


def _expected_sigma_dense(p: NDArray[np.float64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    """E[σ] for pairs with 0 < p < 1 and G <= DENSE_G_MAX: one vectorised sum over k."""
    log_c, sigma = _dense_tables()
    width = int(G.max()) + 1
    k = np.arange(width, dtype=np.float64)[None, :]
    g = G[:, None].astype(np.float64)
    log_pmf = log_c[G, :width] + k * np.log(p)[:, None] + (g - k) * np.log1p(-p)[:, None]
    return np.sum(np.exp(log_pmf) * sigma[G, :width], axis=1)


def expected_sigma_pairs(p: NDArray[np.float64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    """E[σ] for 1-D arrays of pairs with 0 < p < 1 (no validation, no de-duplication)."""
    small = G <= DENSE_G_MAX
    if np.all(small):
        return _expected_sigma_dense(p, G) if p.size else np.zeros(0)
    out = np.empty(p.size)
    if np.any(small):
        out[small] = _expected_sigma_dense(p[small], G[small])
    out[~small] = _expected_sigma_windowed(p[~small], G[~small])
    return out


def _expected_sigma_windowed(p: NDArray[np.float64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    """E[σ] for pairs with 0 < p < 1, summing only the window of k holding the binomial mass.

    Log-binomial weights: log C(G, lo) from lgamma once per pair, then the
    recurrence log C(G, k+1) = log C(G, k) + log(G − k) − log(k + 1) summed
    along the window of k (rounding error ~1e-12 relative even at G = 10^5).
    """
    n = p.size
    out = np.zeros(n)
    if n == 0:
        return out
    Gf = G.astype(np.float64)
    mu = Gf * p
    sd = np.sqrt(Gf * p * (1.0 - p))
    lo = np.clip(np.floor(mu - _WINDOW_SD * sd) - _WINDOW_PAD, 0, Gf)
    hi = np.clip(np.ceil(mu + _WINDOW_SD * sd) + _WINDOW_PAD, 0, Gf)
    width = (hi - lo + 1).astype(np.int64)
    log_c_lo = _log_binom_coef(Gf, lo)
    order = np.argsort(width, kind="stable")
    log_p, log_q = np.log(p), np.log1p(-p)
    i = 0
    while i < n:
        j = min(n, i + max(1, _CHUNK_ELEMENTS // int(width[order[i]])))
        while j - i > 1 and (j - i) * int(width[order[j - 1]]) > _CHUNK_ELEMENTS:
            j = i + max(1, _CHUNK_ELEMENTS // int(width[order[j - 1]]))
        w = int(width[order[i:j]].max())
        # a chunk's rows share its width w (each row's sum runs over w cells, its own window then zeros: the
        # pairwise sum's order, hence the last bits, depend on w); they are computed a few at a time
        rows = max(1, _BLOCK_ELEMENTS // w)
        for a in range(i, j, rows):
            idx = order[a:min(j, a + rows)]
            out[idx] = _window_sums(idx, w, Gf, lo, hi, log_c_lo, log_p, log_q)
        i = j
    return out


def _window_sums(idx: NDArray[np.int64], w: int, Gf: NDArray[np.float64], lo: NDArray[np.float64],
                 hi: NDArray[np.float64], log_c_lo: NDArray[np.float64], log_p: NDArray[np.float64],
                 log_q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_k Binom(k; G, p) σ(k, G) over the windows [lo, hi] of the pairs ``idx``, each row w cells wide.

    In place, into two buffers (a quarter less CPU than a fresh array per operation), each value the same
    arithmetic as ``exp(min(log C + k log p + (G − k) log q, 0)) · sqrt(max(k (G − k), 0)) / G``, 0 past hi."""
    g = Gf[idx, None]
    k = lo[idx, None] + np.arange(w, dtype=np.float64)[None, :]
    gk = g - k
    step = np.log(np.maximum(gk, 1.0))  # step from k to k + 1 (the last column's step is never used)
    buf = np.log(k + 1.0)
    np.subtract(step, buf, out=step)
    log_c = np.empty_like(k)
    log_c[:, 0] = log_c_lo[idx]
    if w > 1:
        np.cumsum(step[:, :-1], axis=1, out=log_c[:, 1:])
        np.add(log_c_lo[idx, None], log_c[:, 1:], out=log_c[:, 1:])
    np.add(log_c, np.multiply(k, log_p[idx, None], out=buf), out=log_c)  # log pmf
    np.add(log_c, np.multiply(gk, log_q[idx, None], out=buf), out=log_c)
    pmf = np.exp(np.minimum(log_c, 0.0, out=log_c), out=log_c)
    sigma = np.divide(np.sqrt(np.maximum(np.multiply(k, gk, out=buf), 0.0, out=buf), out=buf), g, out=buf)
    np.multiply(pmf, sigma, out=pmf)
    pmf[k > hi[idx, None]] = 0.0
    return np.sum(pmf, axis=1)


def _per_distinct_pair(p: NDArray[np.float64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    """E[σ] on broadcast arrays, computed once per distinct (p, G) pair."""
    pb, Gb = np.broadcast_arrays(p, G)
    flat_p, flat_G = pb.ravel(), Gb.ravel()
    out = np.zeros(flat_p.size)
    inner = (flat_p > 0.0) & (flat_p < 1.0)
    if np.any(inner) and int(flat_G[inner].max()) <= DENSE_G_MAX:
        # The dense sum costs less than finding the distinct pairs.
        out[inner] = _expected_sigma_dense(flat_p[inner], flat_G[inner])
    elif np.any(inner):
        pairs = np.stack([flat_p[inner], flat_G[inner].astype(np.float64)], axis=1)
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        vals = expected_sigma_pairs(uniq[:, 0], uniq[:, 1].astype(np.int64))
        out[inner] = vals[inverse.ravel()]
    return out.reshape(pb.shape)


def expected_sigma(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """Exact E[σ](p, G) = Σ_k Binom(k; G, p) · sqrt(k (G − k)) / G; 0 at p ∈ {0, 1}.

    Examples
    --------
    >>> round(expected_sigma(0.5, 8), 4)
    0.4639
    """
    pa, Ga = as_prob(p), as_group_size(G)
    return scalar_or_array(_per_distinct_pair(pa, Ga), (p, G))


def expected_sigma_squared(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """E[σ²](p, G) = p (1 − p) (1 − 1/G): Dr. GRPO's expected per-prompt update size."""
    pa, Ga = as_prob(p), as_group_size(G)
    return scalar_or_array(pa * (1.0 - pa) * (1.0 - 1.0 / Ga), (p, G))


def fidelity(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """φ(p, G) = E[σ](p, G) / sqrt(p (1 − p)), in [0, 1]; 0 at p ∈ {0, 1} (its limit).

    The share of the large-G update a group of G delivers on average
    (docs/theory.md writes it φ(G, p)). φ(0.5, 8) = 0.9278, φ(0.05, 8) = 0.5390.

    Examples
    --------
    >>> round(fidelity(0.05, 8), 4)
    0.539
    """
    pa, Ga = as_prob(p), as_group_size(G)
    es = _per_distinct_pair(pa, Ga)
    sd = np.sqrt(pa * (1.0 - pa))
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(sd > 0, es / np.where(sd > 0, sd, 1.0), 0.0)
    return scalar_or_array(np.clip(phi, 0.0, 1.0), (p, G))


ATTENUATION_RANGE = 7.0 / 16.0
"""The large-G series φ = 1 − 1/(8Gv) − (7 − 16v)/(128 G² v²) + … (v = p(1 − p), docs/theory.md) is an
asymptotic series in 1/(Gv): its truncation after the first correction is used only while the next term is
smaller than that correction, (7 − 16v)/(128 G² v²) < 1/(8 G v), i.e. (G + 1) v > 7/16."""


def attenuation_in_range(p: ArrayLike, G: ArrayLike) -> NDArray[np.bool_] | bool:
    """Whether ``(p, G)`` lies in the range of :func:`attenuation`: (G + 1) p (1 − p) > 7/16
    (:data:`ATTENUATION_RANGE`; beyond it the series' next term outgrows the correction it truncates, and
    the value can be negative: 1 − 1/(8·2·0.0475) = −0.3158 at p = 0.05, G = 2, where φ = 0.2179).

    >>> attenuation_in_range(0.05, 2), attenuation_in_range(0.05, 16), attenuation_in_range(0.5, 2)
    (False, True, True)
    """
    pa, Ga = as_prob(p), as_group_size(G)
    out = (Ga + 1.0) * pa * (1.0 - pa) > ATTENUATION_RANGE
    if np.ndim(out) == 0:
        return bool(out)
    return np.asarray(out, dtype=bool)


def attenuation(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """Large-G approximation of φ: 1 − 1 / (8 G p (1 − p)); NaN at p ∈ {0, 1}.

    Not clipped: outside :func:`attenuation_in_range` the value means nothing (it can be negative;
    use :func:`fidelity`).
    """
    pa, Ga = as_prob(p), as_group_size(G)
    v = pa * (1.0 - pa)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(v > 0, 1.0 - 1.0 / (8.0 * Ga * np.where(v > 0, v, 1.0)), np.nan)
    return scalar_or_array(out, (p, G))
