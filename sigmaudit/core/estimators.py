"""Silent-group rates estimated from finite logs (n samples per prompt, k right).

docs/theory.md, "Estimating from finite logs". Three estimates of the chance that a
future group of G answers to a prompt is silent:

- ``plugin``: silent(k/n, G). Biased when n is small.
- ``unbiased``: [C(k, G) + C(n − k, G)] / C(n, G), the chance that G answers
  drawn without replacement from the n logged ones agree (hypergeometric, like
  the unbiased pass@k estimator). Defined only where n >= G (NaN elsewhere).
- ``bayes``: the posterior expectation E[p^G + (1 − p)^G | k, n] under a prior
  over p fitted to the whole corpus (:mod:`sigmaudit.core.prior`). Any G.

Each returns a :class:`SilentEstimate` holding the all-correct and all-wrong
branches per prompt; inputs are arrays of (n, k) and one G. Callers pass
distinct (n, k) pairs and weight by multiplicity, so the math runs once per
pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, as_group_size
from .prior import BetaPrior, GridPrior
from .special import gammaln

Estimator = Literal["plugin", "unbiased", "bayes"]
ESTIMATORS: tuple[Estimator, ...] = ("plugin", "unbiased", "bayes")


@dataclass(frozen=True)
class SilentEstimate:
    """Per-prompt silent-group rate at one G, split into its two branches."""

    all_correct: NDArray[np.float64]
    """Estimated chance that all G answers are right."""
    all_wrong: NDArray[np.float64]
    """Estimated chance that all G answers are wrong."""

    @property
    def silent(self) -> NDArray[np.float64]:
        """all_correct + all_wrong."""
        return self.all_correct + self.all_wrong


def _scalar_G(G: ArrayLike) -> int:
    G_arr = as_group_size(G)
    if G_arr.ndim != 0:
        raise ValueError(f"G must be a single whole number here, got shape {G_arr.shape}")
    return int(G_arr)


def silent_plugin(n: ArrayLike, k: ArrayLike, G: ArrayLike) -> SilentEstimate:
    """Plug-in estimate silent(k/n, G) = (k/n)^G + (1 − k/n)^G."""
    n_arr, k_arr = as_counts(n, k)
    g = _scalar_G(G)
    p = k_arr / n_arr
    return SilentEstimate(all_correct=p**g, all_wrong=(1.0 - p) ** g)


def _comb_ratio(m: NDArray[np.int64], n: NDArray[np.int64], g: int) -> NDArray[np.float64]:
    """C(m, g) / C(n, g) for 0 <= m <= n, n >= g (0 when m < g)."""
    ok = m >= g
    mf, nf = m.astype(np.float64), n.astype(np.float64)
    safe_m = np.where(ok, mf, float(g))
    log_r = gammaln(safe_m + 1) - gammaln(safe_m - g + 1) - gammaln(nf + 1) + gammaln(nf - g + 1)
    # m == n (a unanimous log) is exactly 1; log-gamma rounding would give 1 − 2e-15
    return np.where(ok, np.where(m == n, 1.0, np.exp(np.minimum(log_r, 0.0))), 0.0)


def silent_unbiased(n: ArrayLike, k: ArrayLike, G: ArrayLike) -> SilentEstimate:
    """Unbiased estimate [C(k, G) + C(n − k, G)] / C(n, G); NaN where n < G."""
    n_arr, k_arr = as_counts(n, k)
    g = _scalar_G(G)
    defined = n_arr >= g
    safe_n = np.where(defined, n_arr, g)
    safe_k = np.minimum(k_arr, safe_n)
    ac = np.where(defined, _comb_ratio(safe_k, safe_n, g), np.nan)
    aw = np.where(defined, _comb_ratio(safe_n - safe_k, safe_n, g), np.nan)
    return SilentEstimate(all_correct=ac, all_wrong=aw)


def silent_bayes(
    n: ArrayLike, k: ArrayLike, G: ArrayLike, prior: GridPrior | BetaPrior, posterior: ArrayLike | None = None
) -> SilentEstimate:
    """Model-based estimate E[p^G + (1 − p)^G | k, n] under a corpus prior (any G).

    ``posterior`` may pass ``prior.posterior(n, k)`` when it is already at hand (it does
    not depend on G), saving its computation at every G.
    """
    g = _scalar_G(G)
    if isinstance(prior, BetaPrior):
        ac, aw = prior.branch_rates(n, k, g)
        return SilentEstimate(all_correct=np.asarray(ac), all_wrong=np.asarray(aw))
    values = np.stack([prior.grid**g, (1.0 - prior.grid) ** g], axis=1)
    post = prior.posterior(n, k) if posterior is None else np.asarray(posterior, dtype=np.float64)
    both = post @ values
    return SilentEstimate(all_correct=both[:, 0], all_wrong=both[:, 1])


def silent_estimate(
    n: ArrayLike,
    k: ArrayLike,
    G: ArrayLike,
    estimator: Estimator,
    prior: GridPrior | BetaPrior | None = None,
) -> SilentEstimate:
    """Dispatch to one estimator by name (``prior`` is required for ``bayes``)."""
    if estimator == "plugin":
        return silent_plugin(n, k, G)
    if estimator == "unbiased":
        return silent_unbiased(n, k, G)
    if estimator == "bayes":
        if prior is None:
            raise ValueError("the bayes estimator needs a prior (fit_grid_prior or fit_beta_prior)")
        return silent_bayes(n, k, G, prior)
    raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
