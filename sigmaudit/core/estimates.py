"""Corpus-level estimates that a gate can test, with one estimator rule, and their intervals.

docs/theory.md, "Estimating from finite logs". Every quantity is a ratio of two means over prompts,

    Q = Σ_j c_j a_j / Σ_j c_j b_j

over the distinct (n, k) pairs j with multiplicities c_j, where a_j, b_j are per-prompt estimates:

================== =========================================== ==================== ============
quantity           a (per prompt)                              b                    depends on G
================== =========================================== ==================== ============
silent_rate        E[p^G + (1 − p)^G]                          1                    yes
all_wrong_rate     E[(1 − p)^G]                                1                    yes
all_correct_rate   E[p^G]                                      1                    yes
fidelity           E[E[σ](p, G)]                               E[sqrt(p (1 − p))]   yes
extreme_share      E[sqrt(p (1 − p)) · 1{p < 0.1 or p > 0.9}]  E[sqrt(p (1 − p))]   no
never_solved_rate  P(p = 0)                                    1                    no
always_solved_rate P(p = 1)                                    1                    no
================== =========================================== ==================== ============

**One rule for "E"** (:func:`resolve`), shared by scan, plan, check, report and trend:

- ``auto`` (the default): the silent rates are unbiased (hypergeometric) where every prompt has
  n ≥ G, else posterior expectations under the corpus prior (``bayes``); every other quantity is
  a posterior expectation (none of them has an unbiased estimate, and p̂ = k/n cannot fall inside
  (0, 0.1) with fewer than 10 samples, so the extreme share and never/always solved at p̂ would
  say nothing about small-n logs).
- ``bayes``: posterior expectations for everything, at every G.
- ``unbiased``: the silent rates unbiased (undefined, None, where some prompt has n < G); the rest
  as ``bayes``.
- ``plugin``: everything at p = p̂ = k/n (never/always solved are then the shares with k = 0 / k = n
  *in the log*).

**Intervals** (:func:`bootstrap`): a bootstrap over prompts. Each replicate draws prompts with
replacement (a multinomial over the distinct pairs), refits the corpus prior to them
(:func:`~sigmaudit.core.prior.refit_prior`: the same family, started from the full fit) and
recomputes every quantity; the interval is the percentile interval of the replicates. The
replicates use a fixed seed, so a gate decision is reproducible. The interval describes the
quantity for the population of prompts this corpus is a sample of, including the prior's
uncertainty; it cannot describe what the data do not identify (a group size beyond every
prompt's n extrapolates through the prior's shape: :func:`warnings` says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from .estimators import silent_plugin, silent_unbiased
from .posterior import linear_quantiles, sigma_on_grid
from .prior import THIN_N, GridPrior, _log_lik, refit_prior, refit_smooth_linear
from .refit import refit_atoms_beta_rows
from .weighting import EXTREME

EstimatorChoice = Literal["auto", "bayes", "unbiased", "plugin"]
ESTIMATOR_CHOICES: tuple[EstimatorChoice, ...] = ("auto", "bayes", "unbiased", "plugin")
DEFAULT_ESTIMATOR: EstimatorChoice = "auto"

QUANTITIES: dict[str, str] = {
    "silent_rate": "silent-group rate at G",
    "all_wrong_rate": "all-wrong part of the silent rate",
    "all_correct_rate": "all-correct part of the silent rate",
    "fidelity": "mean fidelity φ at G, weighted by GRPO mass",
    "extreme_share": f"share of GRPO gradient mass on p < {EXTREME.lo:g} or p > {EXTREME.hi:g}",
    "never_solved_rate": "share of prompts never solved (p = 0)",
    "always_solved_rate": "share of prompts always solved (p = 1)",
}
"""Every quantity, in report order, with its meaning."""
SILENT_FAMILY = ("silent_rate", "all_wrong_rate", "all_correct_rate")
G_FREE = frozenset({"extreme_share", "never_solved_rate", "always_solved_rate"})
"""Quantities that do not depend on G."""

DEFAULT_LEVEL = 0.90
"""Two-sided level of the intervals."""
DEFAULT_REPLICATES = 200
"""Bootstrap replicates."""
SEED = 20240611
"""The bootstrap's fixed seed (a gate must give the same answer twice)."""
FEW_PROMPTS = 50
"""Fewer prompts than this: the intervals rest on too few prompts to be trusted; warn."""
WIDE_INTERVAL = 0.2
"""An interval wider than this on a [0, 1] quantity: the data barely identify it; warn."""


def resolve(name: str, G: int, estimator: EstimatorChoice, min_n: int) -> str:
    """The estimator actually used for ``name`` at ``G``: ``bayes``, ``unbiased`` or ``plugin``."""
    if name not in QUANTITIES:
        raise ValueError(f"unknown quantity {name!r}; known: {', '.join(QUANTITIES)}")
    if estimator not in ESTIMATOR_CHOICES:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATOR_CHOICES)}, got {estimator!r}")
    if estimator == "plugin":
        return "plugin"
    if name in SILENT_FAMILY:
        if estimator == "unbiased" or (estimator == "auto" and min_n >= G):
            return "unbiased"
    return "bayes"


def sweep_estimator(estimator: EstimatorChoice, Gs: Sequence[int], min_n: int) -> EstimatorChoice:
    """One estimator for every G of a sweep: ``auto`` is ``unbiased`` when every G of ``Gs`` is at most the
    fewest samples any prompt has (``min_n``), else ``bayes`` for all; any other choice is itself. Each
    estimator's silent share falls with G, so one estimator keeps a sweep's silent shares monotone (a switch
    inside a sweep could make them rise)."""
    if estimator != "auto":
        return estimator
    return "unbiased" if max((int(g) for g in Gs), default=0) <= min_n else "bayes"


@dataclass(frozen=True)
class Spec:
    """One quantity at one G with the estimator that computes it."""

    name: str
    G: int
    estimator: str




def _grid_columns(spec: Spec, grid: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(a, b) of a ``bayes`` spec as functions on the prior grid."""
    p, G = grid, spec.G
    sd = np.sqrt(p * (1.0 - p))
    one = np.ones_like(p)
    if spec.name == "silent_rate":
        return p**G + (1.0 - p) ** G, one
    if spec.name == "all_wrong_rate":
        return (1.0 - p) ** G, one
    if spec.name == "all_correct_rate":
        return p**G, one
    if spec.name == "fidelity":
        return sigma_on_grid(grid, [G])[:, 0], sd
    if spec.name == "extreme_share":
        return sd * EXTREME.contains(p), sd
    if spec.name == "never_solved_rate":
        return (p == 0.0).astype(np.float64), one
    return (p == 1.0).astype(np.float64), one


def _pair_columns(
    spec: Spec, n: NDArray[np.int64], k: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(a, b) per distinct pair of a ``plugin`` or ``unbiased`` spec (NaN a where undefined)."""
    from .fidelity import expected_sigma

    one = np.ones(n.size)
    if spec.name in SILENT_FAMILY:
        s = silent_unbiased(n, k, spec.G) if spec.estimator == "unbiased" else silent_plugin(n, k, spec.G)
        a = {"silent_rate": s.silent, "all_wrong_rate": s.all_wrong, "all_correct_rate": s.all_correct}[spec.name]
        return np.asarray(a, dtype=np.float64), one
    p = k / n
    sd = np.sqrt(p * (1.0 - p))
    if spec.name == "fidelity":
        return np.asarray(expected_sigma(p, np.full(n.size, spec.G)), dtype=np.float64).reshape(-1), sd
    if spec.name == "extreme_share":
        return sd * EXTREME.contains(p), sd
    if spec.name == "never_solved_rate":
        return (k == 0).astype(np.float64), one
    return (k == n).astype(np.float64), one


class Evaluator:
    """Computes a fixed list of :class:`Spec` on a corpus's distinct pairs.

    Every quantity is Σ_j c_j a_j / Σ_j c_j b_j. For a ``bayes`` spec a_j, b_j are posterior
    expectations, so the sums collapse to ``mixture @ VA`` and ``mixture @ VB`` with the corpus's
    posterior mixture Σ_j c_j post_j over the grid; for ``plugin``/``unbiased`` specs they are
    ``c @ A`` and ``c @ B`` over the pairs. Either way one product per spec: a corpus, or all
    bootstrap replicates at once (:class:`Replicates`).
    """

    def __init__(self, n: NDArray[np.int64], k: NDArray[np.int64], grid: NDArray[np.float64], specs: Sequence[Spec]):
        self.n, self.k, self.grid, self.specs = n, k, grid, tuple(specs)
        m = len(self.specs)
        self.is_bayes = np.array([s.estimator == "bayes" for s in self.specs], dtype=bool)
        self.A = np.zeros((n.size, m))
        self.B = np.zeros((n.size, m))
        self.VA = np.zeros((grid.size, m))
        self.VB = np.zeros((grid.size, m))
        for i, s in enumerate(self.specs):
            if s.estimator == "bayes":
                self.VA[:, i], self.VB[:, i] = _grid_columns(s, grid)
            else:
                self.A[:, i], self.B[:, i] = _pair_columns(s, n, k)

    def values(self, weights: NDArray[np.float64], mixtures: NDArray[np.float64] | None) -> NDArray[np.float64]:
        """Each spec's value for each row of ``weights`` (pair multiplicities, shape (R, pairs)) with
        the matching rows of ``mixtures`` (posterior mixtures, shape (R, grid); needed for bayes
        specs). Shape (R, specs); NaN where undefined (an unbiased rate with n < G, no mass)."""
        num = _matmul(weights, np.nan_to_num(self.A, nan=0.0))
        den = _matmul(weights, self.B)
        undefined = np.isnan(self.A).any(axis=0)
        if self.is_bayes.any():
            assert mixtures is not None
            num = np.where(self.is_bayes[None, :], _matmul(mixtures, self.VA), num)
            den = np.where(self.is_bayes[None, :], _matmul(mixtures, self.VB), den)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        q[:, undefined & ~self.is_bayes] = np.nan
        return np.clip(q, 0.0, 1.0)


def posterior_matrix(loglik: NDArray[np.float64], prior: GridPrior) -> NDArray[np.float64]:
    """Posterior masses over the grid per pair from the pairs' log-likelihood rows."""
    with np.errstate(divide="ignore"):
        post = loglik + np.log(prior.weights)[None, :]
    post -= post.max(axis=1, keepdims=True)
    np.exp(post, out=post)
    post /= post.sum(axis=1, keepdims=True)
    return post


def _matmul(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a @ b``, one column of ``b`` at a time, each by einsum's single-threaded loop: a column's values are the
    same bits whichever other columns are computed with it (a product of whole matrices rounds a column
    differently by its place among the others), so a quantity at G computed in a batch of G (plan's sweep and
    search) and alone (check) agree to the last bit, and OpenBLAS's threads (~8x slower on a loaded machine,
    see :func:`sigmaudit.core.prior._matvec`) stay out of it."""
    out = np.empty((a.shape[0], b.shape[1]))
    for i, column in enumerate(np.ascontiguousarray(b.T)):
        out[:, i] = np.einsum("ij,j->i", a, column)
    return out


@dataclass(frozen=True)
class Replicates:
    """Bootstrap-over-prompts replicates of a corpus, reduced to what any quantity needs."""

    draws: NDArray[np.float64]
    """Pair multiplicities per replicate, shape (R, pairs): prompts drawn with replacement."""
    mixtures: NDArray[np.float64]
    """Σ_j draws_j · posterior_j under the replicate's refitted prior, shape (R, grid)."""

    @property
    def count(self) -> int:
        """Number of replicates R."""
        return int(self.draws.shape[0])


def draw_counts(weight: NDArray[np.float64], replicates: int = DEFAULT_REPLICATES,
                seed: int = SEED) -> NDArray[np.float64]:
    """The bootstrap's draws: for each replicate, the N prompts drawn with replacement, as multiplicities of
    the distinct pairs (``weight``: theirs in the corpus, whole numbers), shape (replicates, pairs)."""
    N = int(round(float(weight.sum())))
    rng = np.random.default_rng(seed)
    return rng.multinomial(N, weight / weight.sum(), size=replicates).astype(np.float64)


def draw_replicates(
    n: NDArray[np.int64],
    k: NDArray[np.int64],
    weight: NDArray[np.float64],
    prior: GridPrior,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = SEED,
) -> Replicates:
    """``replicates`` bootstrap replicates over prompts (see the module doc): for each, a multinomial
    draw of the N prompts over the distinct pairs (:func:`draw_counts`), the prior refitted to it, and its
    posterior mixture. Every replicate's refit is made at once: Beta-plus-atoms priors by
    :func:`~sigmaudit.core.refit.refit_atoms_beta_rows` (each replicate's own converged refit), the smoothed
    grid prior to first order (:func:`~sigmaudit.core.prior.refit_smooth_linear`).

    ``n``, ``k``, ``weight`` are the distinct pairs and their multiplicities (whole numbers);
    ``prior`` is the corpus prior fitted to them.
    """
    draws = draw_counts(weight, replicates, seed)
    loglik = _log_lik(n, k, prior.grid)
    mixtures = np.empty((replicates, prior.grid.size))
    if prior.family == "smooth-grid" and int(n.max()) <= THIN_N:
        weights = refit_smooth_linear(prior, n, k, weight, draws)
    elif prior.family == "beta+atoms" and prior.theta:
        weights = refit_atoms_beta_rows(prior, n, k, draws)
    else:
        weights = np.array([refit_prior(prior, n, k, draws[b]).weights for b in range(replicates)])
    for b, w_b in enumerate(weights):
        mixtures[b] = draws[b] @ posterior_matrix(loglik, replace(prior, weights=w_b))
    return Replicates(draws=draws, mixtures=mixtures)


@dataclass(frozen=True)
class Bootstrap:
    """Point values and bootstrap replicates of some specs."""

    specs: tuple[Spec, ...]
    """What was estimated."""
    point: NDArray[np.float64]
    """The estimate from the corpus itself, per spec."""
    replicates: NDArray[np.float64]
    """One row per bootstrap replicate, one column per spec (NaN where undefined)."""

    def interval(self, level: float = DEFAULT_LEVEL) -> NDArray[np.float64]:
        """Percentile interval per spec: shape (specs, 2); NaN where undefined."""
        return self.quantiles([(1.0 - level) / 2.0, (1.0 + level) / 2.0])

    def quantiles(self, qs: Sequence[float]) -> NDArray[np.float64]:
        """Replicate quantiles per spec: shape (specs, len(qs)); NaN where the point is undefined."""
        out = np.full((len(self.specs), len(qs)), np.nan)
        if self.replicates.shape[0] == 0:
            return out
        for i in range(len(self.specs)):
            col = self.replicates[:, i]
            col = col[np.isfinite(col)]
            if col.size and np.isfinite(self.point[i]):
                out[i] = linear_quantiles(col, qs)
        return out


def bootstrap(
    n: NDArray[np.int64],
    k: NDArray[np.int64],
    weight: NDArray[np.float64],
    prior: GridPrior,
    specs: Sequence[Spec],
    replicates: int | Replicates = DEFAULT_REPLICATES,
    seed: int = SEED,
) -> Bootstrap:
    """Point values and bootstrap replicates of ``specs`` (``replicates``: a count, or replicates
    already drawn by :func:`draw_replicates` for these pairs and prior)."""
    ev = Evaluator(n, k, prior.grid, specs)
    mix = weight @ posterior_matrix(_log_lik(n, k, prior.grid), prior)
    point = ev.values(weight[None, :], mix[None, :])[0]
    reps = replicates if isinstance(replicates, Replicates) else draw_replicates(n, k, weight, prior, replicates, seed)
    return Bootstrap(specs=ev.specs, point=point, replicates=ev.values(reps.draws, reps.mixtures))


def warnings(n_prompts: int, max_n: int, Gs: Sequence[int], intervals: dict[str, tuple[float, float]] | None = None,
             estimators_used: Sequence[str] = (), level: float = DEFAULT_LEVEL) -> list[str]:
    """Sentences for the reader when the figures rest on little: few prompts, extrapolation past the
    logged samples, or an interval so wide that the data barely identify the quantity."""
    out = []
    if n_prompts < FEW_PROMPTS:
        out.append(f"only {n_prompts} prompts: corpus rates and their intervals rest on few prompts "
                   f"(fewer than {FEW_PROMPTS}); treat them as rough")
    beyond = sorted({int(g) for g in Gs if g > max_n})
    if beyond and "bayes" in estimators_used:
        gs = ", ".join(str(g) for g in beyond[:4]) + (f" and {len(beyond) - 4} larger" if len(beyond) > 4 else "")
        out.append(f"G = {gs} exceeds every prompt's logged samples (at most {max_n}): those figures "
                   "extrapolate through the fitted prior's shape, which the logs do not pin down")
    for label, (lo, hi) in (intervals or {}).items():
        if np.isfinite(lo) and np.isfinite(hi) and hi - lo > WIDE_INTERVAL:
            out.append(f"{label}: the {100 * level:g}% interval [{lo:.3g}, {hi:.3g}] is wide; "
                       "the data barely identify it")
    return out
