"""Log-gamma, digamma and log-beta for positive arguments, vectorised in numpy (no scipy import).

scipy.special costs 0.2-0.3 s of start-up (and scipy.optimize, which pulls it, more); a scan needs
three functions of it on positive reals. Each is built from textbook series, to about the last bits
of a double (tests/test_core_special.py compares them with scipy.special over the ranges the fits
use: shapes in [e^-7, e^7] plus counts up to 10^6):

- near 1 and 2 (x in [0.5, 2.5)): the Taylor series of log Γ(1 + z) about z = 0,
  log Γ(1 + z) = −γz + z − log(1 + z) + Σ_{k≥2} (−1)^k (ζ(k) − 1) z^k / k, which keeps full
  relative accuracy at the zeros x = 1 and x = 2 (|z| ≤ 1/2: 28 terms reach 1e-17);
  digamma by the derivative of the same series (it holds digamma's zero at 1.4616 too);
- below 0.5: Γ(x) = Γ(1 + x) / x;
- from 2.5 to 10: the recurrence Γ(x + 1) = xΓ(x) down into [1.5, 2.5) (a sum of positive
  logarithms, no cancellation);
- from 10 on: Stirling's series with eight Bernoulli terms (remainder below 1e-17 · x).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

EULER_GAMMA = 0.5772156649015329
HALF_LOG_2PI = 0.9189385332046728

_ZETA_M1 = np.array([
    0.6449340668482264,
    0.2020569031595943,
    0.08232323371113819,
    0.03692775514336993,
    0.01734306198444914,
    0.008349277381922827,
    0.00407735619794434,
    0.0020083928260822143,
    0.0009945751278180853,
    0.0004941886041194645,
    0.0002460865533080483,
    0.00012271334757848915,
    6.124813505870483e-05,
    3.058823630702049e-05,
    1.528225940865187e-05,
    7.637197637899763e-06,
    3.81729326499984e-06,
    1.908212716553939e-06,
    9.539620338727962e-07,
    4.769329867878064e-07,
    2.38450502727733e-07,
    1.1921992596531106e-07,
    5.960818905125948e-08,
    2.980350351465228e-08,
    1.4901554828365043e-08,
    7.45071178983543e-09,
    3.725334024788457e-09,
    1.862659723513049e-09

])
"""ζ(k) − 1 for k = 2..29."""

_STIRLING = np.array([1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400])
"""B_2k / (2k (2k − 1)), k = 1..8: log Γ(x) = (x − 1/2) log x − x + log √(2π) + Σ_k c_k / x^(2k − 1)."""

_DIGAMMA_ASYM = np.array([1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12, -3617 / 8160])
"""B_2k / (2k), k = 1..8: ψ(x) = log x − 1/(2x) − Σ_k d_k / x^(2k)."""

_LARGE = 10.0


def _series_lgamma1p(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """log Γ(1 + z) for |z| ≤ 1/2."""
    acc = np.zeros_like(z)
    for k in range(_ZETA_M1.size + 1, 1, -1):  # Horner over Σ_{k≥2} (−1)^k (ζ(k) − 1) z^k / k
        acc = acc * z + (1.0 if k % 2 == 0 else -1.0) * _ZETA_M1[k - 2] / k
    return (1.0 - EULER_GAMMA) * z - np.log1p(z) + acc * z * z


def _series_digamma1p(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """ψ(1 + z) for |z| ≤ 1/2 (the derivative of :func:`_series_lgamma1p`)."""
    acc = np.zeros_like(z)
    for k in range(_ZETA_M1.size + 1, 1, -1):  # Σ_{k≥2} (−1)^k (ζ(k) − 1) z^(k − 1)
        acc = acc * z + (1.0 if k % 2 == 0 else -1.0) * _ZETA_M1[k - 2]
    return (1.0 - EULER_GAMMA) - 1.0 / (1.0 + z) + acc * z


def _stirling_correction(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """log Γ(x) − [(x − 1/2) log x − x + log √(2π)] for x ≥ 10."""
    r = 1.0 / (x * x)
    acc = np.zeros_like(x)
    for c in _STIRLING[::-1]:
        acc = acc * r + c
    return acc / x


def _positive(x: ArrayLike) -> NDArray[np.float64]:
    return np.asarray(x, dtype=np.float64)


def gammaln(x: ArrayLike) -> NDArray[np.float64]:
    """log Γ(x) for x > 0 (NaN elsewhere; +inf at 0), elementwise."""
    x = _positive(x)
    out = np.full(x.shape, np.nan)
    out[x == 0] = np.inf
    big = x >= _LARGE
    if np.any(big):
        xb = x[big]
        out[big] = (xb - 0.5) * np.log(xb) - xb + HALF_LOG_2PI + _stirling_correction(xb)
    small = (x > 0) & (x < 0.5)
    if np.any(small):
        xs = x[small]
        out[small] = _series_lgamma1p(xs) - np.log(xs)
    mid = (x >= 0.5) & (x < _LARGE)
    if np.any(mid):
        xm = x[mid]
        shift = np.maximum(np.floor(xm - 1.5), 0.0)  # recurrence steps down into [0.5, 2.5)
        y = xm - shift
        upper = y >= 1.5
        z = np.where(upper, y - 2.0, y - 1.0)
        val = _series_lgamma1p(z) + np.where(upper, np.log1p(z), 0.0)
        prod = np.ones_like(xm)
        for j in range(int(shift.max(initial=0.0))):  # log Γ(y + m) = log Γ(y) + log y(y+1)…(y+m−1)
            prod *= np.where(j < shift, y + j, 1.0)
        out[mid] = val + np.log(prod)
    return out


def digamma(x: ArrayLike) -> NDArray[np.float64]:
    """ψ(x) = d/dx log Γ(x) for x > 0 (NaN elsewhere; −inf at 0), elementwise."""
    x = _positive(x)
    out = np.full(x.shape, np.nan)
    out[x == 0] = -np.inf
    big = x >= _LARGE
    if np.any(big):
        xb = x[big]
        r = 1.0 / (xb * xb)
        acc = np.zeros_like(xb)
        for d in _DIGAMMA_ASYM[::-1]:
            acc = acc * r + d
        out[big] = np.log(xb) - 0.5 / xb - acc * r
    small = (x > 0) & (x < 0.5)
    if np.any(small):
        xs = x[small]
        out[small] = _series_digamma1p(xs) - 1.0 / xs
    mid = (x >= 0.5) & (x < _LARGE)
    if np.any(mid):
        xm = x[mid]
        shift = np.maximum(np.floor(xm - 1.5), 0.0)
        y = xm - shift
        upper = y >= 1.5
        z = np.where(upper, y - 2.0, y - 1.0)
        val = _series_digamma1p(z) + np.where(upper, 1.0 / (1.0 + z), 0.0)
        for j in range(int(shift.max(initial=0.0))):  # ψ(y + m) = ψ(y) + Σ_j 1 / (y + j)
            val += np.where(j < shift, 1.0 / (y + j), 0.0)
        out[mid] = val
    return out


def betaln(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b) for a, b > 0, elementwise (broadcast).

    When the larger argument is ≥ 10 the two large log-gammas are not subtracted: with s ≤ l,
    log Γ(l) − log Γ(s + l) = −(l − 1/2) log(1 + s/l) − s log(s + l) + s + δ(l) − δ(s + l)
    (δ the Stirling correction), which keeps the relative accuracy of a small B(a, b) against a
    large Γ (e.g. a = 1000, b = 0.001, where log Γ(a) ≈ 5900 and log B ≈ 6.9).
    """
    a, b = np.broadcast_arrays(_positive(a), _positive(b))
    s, big_arg = np.minimum(a, b), np.maximum(a, b)
    out = np.empty(s.shape)
    big = big_arg >= _LARGE
    if np.any(big):
        sb, lb = s[big], big_arg[big]
        total = sb + lb
        tail = (-(lb - 0.5) * np.log1p(sb / lb) - sb * np.log(total) + sb
                + _stirling_correction(lb) - _stirling_correction(total))
        out[big] = gammaln(sb) + tail
    rest = ~big
    if np.any(rest):
        sr, lr = s[rest], big_arg[rest]
        out[rest] = gammaln(sr) + gammaln(lr) - gammaln(sr + lr)
    return out


_GL_NODES = 12


@functools.cache
def _gauss_legendre() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Legendre nodes and weights on [−1, 1] (computed on first use: ``numpy.polynomial``'s import is
    ~3 ms of every command's start-up, and most commands fit no Beta)."""
    return np.polynomial.legendre.leggauss(_GL_NODES)  # type: ignore[no-any-return]


def beta_cell_masses(a: float, b: float, edges: ArrayLike) -> NDArray[np.float64]:
    """Beta(a, b) probability of each cell [edges[i], edges[i + 1]] (edges increasing from 0 to 1).

    Each mass is integrated on its own, not taken as a difference of the regularised incomplete
    beta function at the edges (which loses every digit of a small cell mass where the
    distribution function is near 1). Cells below 1/2 are integrated in u = log x,
    ∫ x^a (1 − x)^(b−1) du, cells above 1/2 in v = log(1 − x), the cell holding 1/2 in x, each
    by 12-point Gauss-Legendre: the integrands are smooth there for any a, b > 0 (the
    singularities of x^(a−1) at 0 and of (1 − x)^(b−1) at 1 are moved to −∞ or away); the cells
    that touch 0 or 1 use the series ∫_0^e x^(a−1) (1 − x)^(b−1) dx = e^a Σ_n (1 − b)_n e^n / (n! (a + n)).
    Masses are normalised to sum to 1 (the Beta function cancels).
    """
    e = np.asarray(edges, dtype=np.float64)
    lo, hi = e[:-1], e[1:]
    log_mass = np.full(lo.size, -np.inf)
    first, last = lo == 0.0, hi == 1.0
    lower = ~first & ~last & (hi <= 0.5)
    upper = ~first & ~last & (lo >= 0.5)
    middle = ~first & ~last & ~lower & ~upper

    def gauss(t_lo: NDArray[np.float64], t_hi: NDArray[np.float64],
              log_f: Callable[[NDArray[np.float64]], NDArray[np.float64]]) -> NDArray[np.float64]:
        nodes, weights = _gauss_legendre()
        half = 0.5 * (t_hi - t_lo)
        t = 0.5 * (t_hi + t_lo)[:, None] + half[:, None] * nodes[None, :]
        vals = log_f(t)
        top = vals.max(axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return safe + np.log(np.exp(vals - safe[:, None]) @ weights * half)

    if np.any(lower):
        log_mass[lower] = gauss(np.log(lo[lower]), np.log(hi[lower]),
                                lambda u: a * u + (b - 1.0) * np.log1p(-np.exp(u)))
    if np.any(upper):
        log_mass[upper] = gauss(np.log1p(-hi[upper]), np.log1p(-lo[upper]),
                                lambda v: b * v + (a - 1.0) * np.log1p(-np.exp(v)))
    if np.any(middle):
        log_mass[middle] = gauss(lo[middle], hi[middle],
                                 lambda x: (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x))
    for i in np.flatnonzero(first):
        log_mass[i] = _log_end_integral(a, b, float(hi[i]))
    for i in np.flatnonzero(last):
        log_mass[i] = _log_end_integral(b, a, float(1.0 - lo[i]))
    log_mass -= log_mass.max()
    mass = np.exp(log_mass)
    return mass / mass.sum()


def _log_end_integral(a: float, b: float, e: float) -> float:
    """log ∫_0^e x^(a−1) (1 − x)^(b−1) dx for small e, by the series above (ratio of terms ≈ b·e)."""
    total, coef = 0.0, 1.0  # coef = (1 − b)_n e^n / n!
    for n in range(200):
        term = coef / (a + n)
        total += term
        if abs(term) <= 1e-17 * abs(total):
            break
        coef *= (n + 1.0 - b) * e / (n + 1.0)
    return a * math.log(e) + math.log(total)


def beta_cell_masses_rows(a: ArrayLike, b: ArrayLike, edges: ArrayLike) -> NDArray[np.float64]:
    """:func:`beta_cell_masses` for many Betas on the same cells: row r is Beta(a[r], b[r]), shape (rows, cells).

    The quadrature nodes (and log(1 − x) or log x at them) depend only on the cells, so they are taken once;
    each Beta costs one multiply-add per node."""
    a_r, b_r = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    e = np.asarray(edges, dtype=np.float64)
    lo, hi = e[:-1], e[1:]
    log_mass = np.full((a_r.size, lo.size), -np.inf)
    first, last = lo == 0.0, hi == 1.0
    lower = ~first & ~last & (hi <= 0.5)
    upper = ~first & ~last & (lo >= 0.5)
    middle = ~first & ~last & ~lower & ~upper

    def gauss(t_lo: NDArray[np.float64], t_hi: NDArray[np.float64], p: NDArray[np.float64],
              q: NDArray[np.float64], log_x: Callable[[NDArray[np.float64]], NDArray[np.float64]],
              log_y: Callable[[NDArray[np.float64]], NDArray[np.float64]]) -> NDArray[np.float64]:
        """Per row: log Σ_nodes w · exp(p · log_x(t) + q · log_y(t)) · half-width."""
        nodes, weights = _gauss_legendre()
        half = 0.5 * (t_hi - t_lo)
        t = 0.5 * (t_hi + t_lo)[:, None] + half[:, None] * nodes[None, :]
        vals = p[:, None, None] * log_x(t)[None] + q[:, None, None] * log_y(t)[None]
        top = vals.max(axis=2)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return safe + np.log(np.exp(vals - safe[:, :, None]) @ weights * half[None, :])

    def ident(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return t

    def log1m_exp(t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.log1p(-np.exp(t))

    if np.any(lower):
        log_mass[:, lower] = gauss(np.log(lo[lower]), np.log(hi[lower]), a_r, b_r - 1.0, ident, log1m_exp)
    if np.any(upper):
        log_mass[:, upper] = gauss(np.log1p(-hi[upper]), np.log1p(-lo[upper]), b_r, a_r - 1.0, ident, log1m_exp)
    if np.any(middle):
        log_mass[:, middle] = gauss(lo[middle], hi[middle], a_r - 1.0, b_r - 1.0, np.log,
                                    lambda x: np.log1p(-x))
    for r in range(a_r.size):
        for i in np.flatnonzero(first):
            log_mass[r, i] = _log_end_integral(float(a_r[r]), float(b_r[r]), float(hi[i]))
        for i in np.flatnonzero(last):
            log_mass[r, i] = _log_end_integral(float(b_r[r]), float(a_r[r]), float(1.0 - lo[i]))
    log_mass -= log_mass.max(axis=1, keepdims=True)
    mass = np.exp(log_mass)
    return mass / mass.sum(axis=1, keepdims=True)
