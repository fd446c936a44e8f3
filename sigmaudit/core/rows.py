"""The Beta-plus-atoms negative log-likelihood for many weight vectors (or many starts) at once.

Row r of the weights is one problem over the same distinct (n, k) pairs: a bootstrap replicate
(:mod:`sigmaudit.core.refit`) or one start of a multi-start fit (:func:`sigmaudit.core.prior._minimize_from_starts`).
Each term is one numpy operation for every row, so :func:`sigmaudit.core.optimize.minimize_box_rows` runs the
problems in lockstep.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class AtomsBetaProblem:
    """Distinct pairs (``n``, ``k``) with multiplicities ``c`` and the number of Betas beside the atoms at
    0 and 1: what :class:`sigmaudit.core.prior.AtomsBetaObjective` (one θ) and :class:`AtomsBetaRows` (a θ
    per row of ``c``) both evaluate."""

    n: NDArray[np.int64]
    k: NDArray[np.int64]
    c: NDArray[np.float64]
    components: int

    @property
    def n_weights(self) -> int:
        """Mixture weights: atom 0, atom 1, then each Beta (the last one is the reference)."""
        return 2 + self.components


def _weighted_gram(x: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_p c[r, p] x[r, p, a] x[r, p, b] per row r, as one batched matrix product (a three-operand
    einsum loops in C without BLAS: ten times slower at a few thousand pairs)."""
    return np.matmul(np.swapaxes(x * c[:, :, None], 1, 2), x)


@dataclass(frozen=True)
class AtomsBetaRows(AtomsBetaProblem):
    """:class:`~sigmaudit.core.prior.AtomsBetaObjective` for many weight vectors: row r of ``c`` weights
    the pairs (``n``, ``k``) of problem r; θ has one row per problem (same scale and box)."""

    def log_weights(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        z = np.concatenate([theta[:, : self.n_weights - 1], np.zeros((theta.shape[0], 1))], axis=1)
        return z - np.logaddexp.reduce(z, axis=1, keepdims=True)

    def shapes(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """(a_j, b_j) per row: shape (rows, components, 2)."""
        return np.exp(theta[:, self.n_weights - 1 :]).reshape(theta.shape[0], self.components, 2)

    def _rising(self, x: NDArray[np.float64], curvature: bool = False) -> tuple[NDArray[np.float64], ...]:
        """Per entry of ``x``, Σ_{i<j} log(x + i) and Σ_{i<j} 1/(x + i) (with ``curvature`` also Σ_{i<j} 1/(x + i)²)
        for j = 0..max n: the beta-binomial's log-gamma and digamma (trigamma) differences."""
        m = int(self.n.max())
        t = x[:, None] + np.arange(m, dtype=np.float64)[None, :]
        inv = 1.0 / t
        parts = [np.log(t), inv] + ([inv * inv] if curvature else [])
        out = []
        for part in parts:
            acc = np.zeros((x.size, m + 1))
            np.cumsum(part, axis=1, out=acc[:, 1:])
            out.append(acc)
        return tuple(out)

    def _terms(self, theta: NDArray[np.float64]):
        """Per row and pair: log mixture density, responsibilities (rows, pairs, components), each Beta's
        d/d(log a), d/d(log b) of its term, and each Beta's trigamma sums (a, b, a + b rows stacked)."""
        lw = self.log_weights(theta)
        k, n = self.k, self.n
        f = n - k
        R = theta.shape[0]
        T = np.empty((R, n.size, self.n_weights))
        T[:, :, 0] = lw[:, 0, None] + np.where(k == 0, 0.0, -np.inf)[None, :]
        T[:, :, 1] = lw[:, 1, None] + np.where(k == n, 0.0, -np.inf)[None, :]
        d_shape, curv = [], []
        shapes = self.shapes(theta)
        for j in range(self.components):
            a, b = shapes[:, j, 0], shapes[:, j, 1]
            lg, dg, q = self._rising(np.concatenate([a, b, a + b]), curvature=True)
            T[:, :, 2 + j] = lw[:, 2 + j, None] + lg[:R, k] + lg[R:2 * R, f] - lg[2 * R:, n]
            d_shape.append((a[:, None] * (dg[:R, k] - dg[2 * R:, n]), b[:, None] * (dg[R:2 * R, f] - dg[2 * R:, n])))
            curv.append(q)
        mix = np.logaddexp.reduce(T, axis=2)
        with np.errstate(invalid="ignore"):
            r = np.where(np.isfinite(T), np.exp(T - mix[:, :, None]), 0.0)
        return mix, r, d_shape, curv

    def fun_grad(self, rows: NDArray[np.intp], theta: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                                                    NDArray[np.float64]]:
        """Negative log-likelihood and its exact gradient for problems ``rows`` at ``theta`` (one row each).
        The Hessians there are computed with them and kept for :meth:`hessian` (the minimiser asks for the
        Hessian at the points whose gradient it accepted)."""
        c = self.c[rows]
        n_w = self.n_weights
        mix, r, d_shape, curv = self._terms(theta)
        w = np.exp(self.log_weights(theta))
        cr = np.matmul(c[:, None, :], r)[:, 0]
        grad = np.empty(theta.shape)
        grad[:, : n_w - 1] = -(cr[:, : n_w - 1] - c.sum(axis=1)[:, None] * w[:, : n_w - 1])
        for j, (da, db) in enumerate(d_shape):
            crj = c * r[:, :, 2 + j]
            grad[:, n_w - 1 + 2 * j] = -np.sum(crj * da, axis=1)
            grad[:, n_w + 2 * j] = -np.sum(crj * db, axis=1)
        self._cache[rows] = theta
        self._cache_H[rows] = self._hessian(c, theta, w, r, d_shape, curv)
        return -np.sum(c * mix, axis=1), grad

    @property
    def _cache(self) -> NDArray[np.float64]:
        return self.__dict__.setdefault("_theta_seen", np.full((self.c.shape[0], 3 * self.components + 1), np.nan))

    @property
    def _cache_H(self) -> NDArray[np.float64]:
        dim = 3 * self.components + 1
        return self.__dict__.setdefault("_hessian_seen", np.zeros((self.c.shape[0], dim, dim)))

    def hessian(self, rows: NDArray[np.intp], theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """The exact Hessians (:meth:`~sigmaudit.core.prior.AtomsBetaObjective.nll_hessian`, one per row): those
        :meth:`fun_grad` computed at these very parameters, else computed now."""
        if np.array_equal(self._cache[rows], theta):
            return self._cache_H[rows]
        _, r, d_shape, curv = self._terms(theta)
        return self._hessian(self.c[rows], theta, np.exp(self.log_weights(theta)), r, d_shape, curv)

    def _hessian(self, c: NDArray[np.float64], theta: NDArray[np.float64], w: NDArray[np.float64],
                 r: NDArray[np.float64], d_shape: list, curv: list) -> NDArray[np.float64]:
        n_w, dim, R = self.n_weights, theta.shape[1], theta.shape[0]
        cr = c[:, :, None] * r
        u = np.eye(n_w)[None, :, : n_w - 1] - w[:, None, : n_w - 1]  # (rows, component, weight logit)
        m = np.zeros((R, self.n.size, dim))
        m[:, :, : n_w - 1] = r[:, :, : n_w - 1] - w[:, None, : n_w - 1]
        H = np.zeros((R, dim, dim))
        wl = w[:, : n_w - 1]
        H[:, : n_w - 1, : n_w - 1] = (np.einsum("rja,rj,rjb->rab", u, cr.sum(axis=1), u)
                                      - c.sum(axis=1)[:, None, None] * (wl[:, :, None] * np.eye(n_w - 1)[None]
                                                                        - wl[:, :, None] * wl[:, None, :]))
        f = self.n - self.k
        shapes = self.shapes(theta)
        for j, ((da, db), q) in enumerate(zip(d_shape, curv, strict=True)):
            a, b = shapes[:, j, 0], shapes[:, j, 1]
            cols = slice(n_w - 1 + 2 * j, n_w + 1 + 2 * j)
            s, crj = np.stack([da, db], axis=2), cr[:, :, 2 + j]
            m[:, :, cols] = r[:, :, 2 + j, None] * s
            v = np.einsum("rp,rpk->rk", crj, s)
            H[:, : n_w - 1, cols] += u[:, 2 + j, :, None] * v[:, None, :]
            H[:, cols, : n_w - 1] += v[:, :, None] * u[:, 2 + j, None, :]
            q_ab = np.sum(crj * q[2 * R:, self.n], axis=1)
            block = _weighted_gram(s, crj)
            block[:, 0, 0] += v[:, 0] + a * a * (q_ab - np.sum(crj * q[:R, self.k], axis=1))
            block[:, 1, 1] += v[:, 1] + b * b * (q_ab - np.sum(crj * q[R:2 * R, f], axis=1))
            block[:, 0, 1] += a * b * q_ab
            block[:, 1, 0] += a * b * q_ab
            H[:, cols, cols] += block
        H -= _weighted_gram(m, c)
        return -0.5 * (H + np.swapaxes(H, 1, 2))
