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

ATOM_SLACK = 1e-6
"""A point mass of weight below ATOM_SLACK whose EM factor (see :meth:`AtomsBetaRows.settled`) is below
1 − ATOM_SLACK at a fit has weight 0 at the optimum: its weight is set to its lower bound instead of wherever
the optimiser's stop left it.
(A converged weight of 0.03 can show a factor 1 − 2e-7: the stop bounds the gradient Σc · w (1 − D), not 1 − D.)"""


def _at(table: NDArray[np.float64], index: NDArray[np.int64]) -> NDArray[np.float64]:
    """``table[:, index]``: each row's entries at the pairs' counts (``np.take`` gathers ~4x faster than indexing)."""
    return np.take(table, index, axis=1)


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
        """Per row and pair: log mixture density (rows, pairs), responsibilities (components, rows, pairs), each
        Beta's d/d(log a), d/d(log b) of its term, and each Beta's trigamma sums (a, b, a + b rows stacked).
        Components come first so that every sum over them adds whole (rows, pairs) slabs."""
        lw = self.log_weights(theta)
        k, n = self.k, self.n
        f = n - k
        R = theta.shape[0]
        T = np.empty((self.n_weights, R, n.size))
        T[0] = lw[:, 0, None] + np.where(k == 0, 0.0, -np.inf)[None, :]
        T[1] = lw[:, 1, None] + np.where(k == n, 0.0, -np.inf)[None, :]
        d_shape, curv = [], []
        shapes = self.shapes(theta)
        for j in range(self.components):
            a, b = shapes[:, j, 0], shapes[:, j, 1]
            lg, dg, q = self._rising(np.concatenate([a, b, a + b]), curvature=True)
            T[2 + j] = lw[:, 2 + j, None] + _at(lg[:R], k) + _at(lg[R:2 * R], f) - _at(lg[2 * R:], n)
            dab = _at(dg[2 * R:], n)
            d_shape.append((a[:, None] * (_at(dg[:R], k) - dab), b[:, None] * (_at(dg[R:2 * R], f) - dab)))
            curv.append(q)
        # log Σ_j e^T and the responsibilities from one exp: every pair has a finite Beta term, so the
        # maximum over components is finite and the atoms' −inf terms become exact zeros
        top = np.max(T, axis=0)
        r = np.exp(T - top[None])
        total = np.sum(r, axis=0)
        r /= total[None]
        return top + np.log(total), r, d_shape, curv

    def fun_grad(self, rows: NDArray[np.intp], theta: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                                                    NDArray[np.float64]]:
        """Negative log-likelihood and its exact gradient for problems ``rows`` at ``theta`` (one row each).
        The Hessians there are computed with them and kept for :meth:`hessian` (the minimiser asks for the
        Hessian at the points whose gradient it accepted)."""
        c = self.c[rows]
        n_w = self.n_weights
        mix, r, d_shape, curv = self._terms(theta)
        w = np.exp(self.log_weights(theta))
        cr = c[None] * r
        grad = np.empty(theta.shape)
        grad[:, : n_w - 1] = -(np.sum(cr[: n_w - 1], axis=2).T - c.sum(axis=1)[:, None] * w[:, : n_w - 1])
        for j, (da, db) in enumerate(d_shape):
            grad[:, n_w - 1 + 2 * j] = -np.sum(cr[2 + j] * da, axis=1)
            grad[:, n_w + 2 * j] = -np.sum(cr[2 + j] * db, axis=1)
        self._cache[rows] = theta
        self._cache_H[rows] = self._hessian(c, theta, w, r, d_shape, curv, cr)
        return -np.sum(c * mix, axis=1), grad

    def settled(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """``theta`` (one row per problem) with each point mass of weight below :data:`ATOM_SLACK` whose EM factor
        D = Σ_i c_i L_i / f_i / Σ_i c_i is below 1 − :data:`ATOM_SLACK` set to weight 0 (log-odds −inf).

        ∂nll/∂θ_atom = Σc · w (1 − D): D < 1 pulls the weight to 0, but once it is ~1e-9 the gradient is below any
        stop and the optimiser leaves it at a point that depends on its path and on the last bits of the arithmetic
        (1e-8 on one machine, 1e-13 on another; the never/always-solved shares print it). Its optimum is 0 (the
        box's bound, 1e-13, in the optimiser's terms); the likelihood moves by less than Σc × 1e-6 × (1 − D)."""
        mix, _, _, _ = self._terms(theta)
        c = self.c
        weight = np.exp(self.log_weights(theta))
        out = theta.copy()
        for atom, on in enumerate((self.k == 0, self.k == self.n)):
            if not on.any():
                out[weight[:, atom] < ATOM_SLACK, atom] = -np.inf  # no pair to hold it: D = 0
                continue
            factor = np.sum(c[:, on] * np.exp(-mix[:, on]), axis=1) / c.sum(axis=1)
            out[(factor < 1.0 - ATOM_SLACK) & (weight[:, atom] < ATOM_SLACK), atom] = -np.inf
        return out

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
                 r: NDArray[np.float64], d_shape: list, curv: list,
                 cr: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        n_w, dim, R = self.n_weights, theta.shape[1], theta.shape[0]
        cr = c[None] * r if cr is None else cr
        u = np.eye(n_w)[None, :, : n_w - 1] - w[:, None, : n_w - 1]  # (rows, component, weight logit)
        m = np.empty((R, dim, self.n.size))  # m_i = Σ_j r_ij g_ij, coordinates before pairs
        m[:, : n_w - 1] = np.swapaxes(r[: n_w - 1], 0, 1) - w[:, : n_w - 1, None]
        H = np.zeros((R, dim, dim))
        wl = w[:, : n_w - 1]
        H[:, : n_w - 1, : n_w - 1] = (np.einsum("rja,rj,rjb->rab", u, np.sum(cr, axis=2).T, u)
                                      - c.sum(axis=1)[:, None, None] * (wl[:, :, None] * np.eye(n_w - 1)[None]
                                                                        - wl[:, :, None] * wl[:, None, :]))
        f = self.n - self.k
        shapes = self.shapes(theta)
        for j, ((da, db), q) in enumerate(zip(d_shape, curv, strict=True)):
            a, b = shapes[:, j, 0], shapes[:, j, 1]
            cols = slice(n_w - 1 + 2 * j, n_w + 1 + 2 * j)
            crj = cr[2 + j]
            m[:, cols.start] = r[2 + j] * da
            m[:, cols.start + 1] = r[2 + j] * db
            ca, cb = crj * da, crj * db
            v = np.stack([np.sum(ca, axis=1), np.sum(cb, axis=1)], axis=1)
            H[:, : n_w - 1, cols] += u[:, 2 + j, :, None] * v[:, None, :]
            H[:, cols, : n_w - 1] += v[:, :, None] * u[:, 2 + j, None, :]
            q_ab = np.sum(crj * _at(q[2 * R:], self.n), axis=1)
            s_ab = np.sum(ca * db, axis=1)
            H[:, cols.start, cols.start] += np.sum(ca * da, axis=1) + v[:, 0] + a * a * (
                q_ab - np.sum(crj * _at(q[:R], self.k), axis=1))
            H[:, cols.start + 1, cols.start + 1] += np.sum(cb * db, axis=1) + v[:, 1] + b * b * (
                q_ab - np.sum(crj * _at(q[R:2 * R], f), axis=1))
            H[:, cols.start, cols.start + 1] += s_ab + a * b * q_ab
            H[:, cols.start + 1, cols.start] += s_ab + a * b * q_ab
        H -= np.matmul(m * c[:, None, :], np.ascontiguousarray(np.swapaxes(m, 1, 2)))  # BLAS on contiguous operands
        return -0.5 * (H + np.swapaxes(H, 1, 2))
