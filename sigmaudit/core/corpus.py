"""A corpus of prompts reduced to its distinct (n, k) pairs: the one owner of corpus-level estimates.

Every audit, plan and gate works on a :class:`Corpus`: the per-prompt counts
(n samples, k right) collapsed to distinct pairs with multiplicities, so each
formula is evaluated once per distinct pair and the cost after the group-by
does not grow with the number of prompts. Corpus rates are means over prompts
(never the rate at the mean p: by Jensen's inequality that understates it).

What lives here and nowhere else: the corpus prior and each pair's posterior
(:attr:`Corpus.prior`, :attr:`Corpus.posterior`), silent-rate expectations at any
G (:meth:`Corpus.silent`), posterior E[σ] at any G (:meth:`Corpus.posterior_sigma`),
the GRPO-mass-weighted fidelity (:meth:`Corpus.fidelity`), the unreachable
(p ∈ {0, 1}) parts (:meth:`Corpus.unreachable_parts`) and weighted quantiles over
prompts (:meth:`Corpus.quantile`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .estimates import DEFAULT_ESTIMATOR, SEED, EstimatorChoice, Replicates, Spec
from .estimators import Estimator, silent_bayes, silent_estimate
from .posterior import linear_quantiles, sigma_on_grid, weighted_quantile
from .prior import GridPrior, distinct_pairs, fit_corpus_prior

if TYPE_CHECKING:
    from .identify import NotIdentifiedError


@dataclass(frozen=True)
class CorpusSilent:
    """Corpus silent-group rate at one G with one estimator (means over prompts)."""

    G: int
    """Group size."""
    estimator: Estimator
    """Which estimate: plugin, unbiased or bayes."""
    silent_rate: float | None
    """Mean over prompts of the silent chance; None when the estimator is undefined here."""
    all_wrong_rate: float | None
    """All-wrong part of ``silent_rate``."""
    all_correct_rate: float | None
    """All-correct part of ``silent_rate``."""


class Corpus:
    """Per-prompt counts as distinct (n, k) pairs with multiplicities ``weight``."""

    def __init__(self, n: ArrayLike, k: ArrayLike):
        n_u, k_u, c_u, index = distinct_pairs(n, k)
        if n_u.size == 0:
            raise ValueError("a corpus needs at least one prompt")
        self.n: NDArray[np.int64] = n_u
        self.k: NDArray[np.int64] = k_u
        self.weight: NDArray[np.float64] = c_u
        self.index: NDArray[np.int64] = index
        """For each prompt, in the order given, the index of its distinct (n, k) pair."""
        self._identified: dict[int, NotIdentifiedError | None] = {}

    @classmethod
    def from_pairs(cls, n: ArrayLike, k: ArrayLike, weight: ArrayLike) -> Corpus:
        """A corpus given as distinct (n, k) pairs with multiplicities ``weight`` (e.g. a log's groups
        as units): the same corpus as the pairs repeated ``weight`` times, without expanding them."""
        w = np.asarray(weight, dtype=np.float64).ravel()
        n_arr = np.asarray(n).ravel()
        if w.size != n_arr.size or np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise ValueError("weight must give one positive multiplicity per (n, k) pair")
        self = cls(n, k)
        if self.n.size != n_arr.size:
            raise ValueError("from_pairs needs distinct (n, k) pairs")
        order = np.lexsort((np.asarray(k).ravel(), n_arr))
        self.weight = w[order]
        return self

    @property
    def n_prompts(self) -> int:
        """Number of prompts."""
        return int(self.weight.sum())

    @property
    def p_hat(self) -> NDArray[np.float64]:
        """k / n for each distinct pair."""
        return self.k / self.n

    @property
    def min_samples(self) -> int:
        """Smallest n over prompts."""
        return int(self.n.min())

    def mean(self, values: ArrayLike) -> float:
        """Mean over prompts of a per-pair quantity."""
        return float(np.asarray(values, dtype=np.float64) @ self.weight / self.weight.sum())

    def require_identified(self, G: int) -> None:
        """Refuse (NotIdentifiedError) a model-based figure at G that a thin corpus does not
        determine (:func:`sigmaudit.core.identify.require_identified`); checked once per G."""
        error = self.identification(G)
        if error is not None:
            raise error

    def identification(self, G: int) -> NotIdentifiedError | None:
        """None when the logs determine the silent rate at G (:func:`sigmaudit.core.identify.require_identified`),
        else the refusal; checked once per G."""
        from .identify import NotIdentifiedError, require_identified

        if G not in self._identified:
            try:
                require_identified(self.n, self.k, self.weight, G)
                self._identified[G] = None
            except NotIdentifiedError as exc:
                self._identified[G] = exc
        return self._identified[G]

    @cached_property
    def prior(self) -> GridPrior:
        """Prior over p fitted to the whole corpus (model-based estimator): Beta plus point
        masses at 0 and 1 when it fits, else the nonparametric grid prior (see
        :func:`sigmaudit.core.prior.fit_corpus_prior`)."""
        return fit_corpus_prior(self.n, self.k, self.weight)

    @cached_property
    def posterior(self) -> NDArray[np.float64]:
        """Posterior masses over ``prior.grid`` for each distinct pair (shared by every G)."""
        return self.prior.posterior(self.n, self.k)

    def unbiased_available(self, G: int) -> bool:
        """The hypergeometric estimate exists for every prompt (n >= G everywhere)."""
        return self.min_samples >= G

    def default_estimator(self, G: int) -> Estimator:
        """Unbiased where it exists for every prompt, else model-based (bayes)."""
        return "unbiased" if self.unbiased_available(G) else "bayes"

    def silent(self, G: int, estimator: Estimator | None = None) -> CorpusSilent:
        """Corpus silent rate at G; ``estimator=None`` picks :meth:`default_estimator`."""
        est = estimator or self.default_estimator(G)
        if est == "unbiased" and not self.unbiased_available(G):
            return CorpusSilent(G, est, None, None, None)
        if est == "bayes":
            self.require_identified(int(G))
            s = silent_bayes(self.n, self.k, G, self.prior, self.posterior)
        else:
            s = silent_estimate(self.n, self.k, G, est)
        return CorpusSilent(
            G=int(G),
            estimator=est,
            silent_rate=self.mean(s.silent),
            all_wrong_rate=self.mean(s.all_wrong),
            all_correct_rate=self.mean(s.all_correct),
        )

    def posterior_sigma(self, Gs: Sequence[int]) -> NDArray[np.float64]:
        """E[E[σ](p, G) | n, k] per distinct pair (rows) and G in ``Gs`` (columns)."""
        return self.posterior @ sigma_on_grid(self.prior.grid, Gs)

    def posterior_sd(self) -> NDArray[np.float64]:
        """E[sqrt(p (1 − p)) | n, k] per distinct pair: the large-G GRPO gradient mass."""
        g = self.prior.grid
        return self.posterior @ np.sqrt(g * (1.0 - g))

    def posterior_mean_p(self) -> NDArray[np.float64]:
        """E[p | n, k] per distinct pair."""
        return self.posterior @ self.prior.grid

    def fidelity(self, Gs: Sequence[int]) -> list[float | None]:
        """GRPO-mass-weighted mean fidelity per G: Σ_i E[E[σ](p, G) | n_i, k_i] / Σ_i E[sqrt(p(1−p)) | n_i, k_i]
        (posterior expectations under the corpus prior); None when no prompt has gradient mass.
        Refused (NotIdentifiedError) when a thin corpus leaves the silent rate at the largest G open."""
        if len(Gs):
            self.require_identified(max(int(g) for g in Gs))
        den = float(self.weight @ self.posterior_sd())
        if den <= 0.0:
            return [None for _ in Gs]
        num = self.weight @ self.posterior_sigma(Gs)
        return [float(min(max(v / den, 0.0), 1.0)) for v in num]

    def unreachable_parts(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Posterior P(p = 0 | n, k) and P(p = 1 | n, k) per distinct pair (the prior grid's end points)."""
        grid = self.prior.grid
        return self.posterior[:, grid == 0.0].sum(axis=1), self.posterior[:, grid == 1.0].sum(axis=1)

    def quantile(self, values: ArrayLike, q: float, where: ArrayLike | None = None) -> float:
        """The q-quantile over prompts (linear interpolation, as np.quantile of the expanded values)
        of a per-pair quantity, optionally over the pairs selected by the mask ``where``."""
        v = np.asarray(values, dtype=np.float64)
        w = self.weight
        if where is not None:
            mask = np.asarray(where, dtype=bool)
            v, w = v[mask], w[mask]
        return weighted_quantile(v, w, q)
    # ------------------------------------------------------------ every gate-able quantity, one rule

    @cached_property
    def mixture(self) -> NDArray[np.float64]:
        """Σ over prompts of each prompt's posterior over ``prior.grid`` (every posterior mean over
        prompts is ``mixture @ f(grid) / n_prompts``)."""
        return self.weight @ self.posterior

    def replicates(self, count: int, seed: int = SEED) -> Replicates:
        """Bootstrap-over-prompts replicates (each refits the prior), cached per (count, seed)."""
        from .estimates import draw_replicates

        key = (int(count), int(seed))
        cache = self.__dict__.setdefault("_replicates", {})
        if key not in cache:
            cache[key] = draw_replicates(self.n, self.k, self.weight, self.prior, count, seed)
        return cache[key]

    def estimates(self, names: Sequence[str], Gs: Sequence[int], estimator: EstimatorChoice = DEFAULT_ESTIMATOR,
                  replicates: int = 0, seed: int = SEED) -> CorpusEstimates:
        """Each quantity of ``names`` (keys of :data:`sigmaudit.core.estimates.QUANTITIES`) at each G,
        by the one estimator rule (:func:`sigmaudit.core.estimates.resolve`), with bootstrap replicates
        for intervals when ``replicates`` > 0 (:meth:`replicates`)."""
        from .estimates import G_FREE, Evaluator, Spec, draw_counts, resolve

        specs = [Spec(name, int(g), resolve(name, int(g), estimator, self.min_samples))
                 for name in names for g in ([min(Gs)] if name in G_FREE else Gs)]
        any_bayes = any(s.estimator == "bayes" for s in specs)
        for g in sorted({s.G for s in specs if s.estimator == "bayes" and s.name not in G_FREE}):
            self.require_identified(g)  # a thin corpus does not determine model-based figures at G
        ev = Evaluator(self.n, self.k, self.prior.grid if any_bayes else np.zeros(0), specs)
        point = ev.values(self.weight[None, :], self.mixture[None, :] if any_bayes else None)[0]
        reps = np.zeros((0, len(specs)))
        if replicates > 0 and any_bayes:
            r = self.replicates(replicates, seed)
            reps = ev.values(r.draws, r.mixtures)
        elif replicates > 0:  # no model-based figure: the draws alone, no prior refitted (the same draws)
            reps = ev.values(draw_counts(self.weight, replicates, seed), None)
        return CorpusEstimates(estimator, tuple(specs), point, self._within_range(specs, reps))

    def _within_range(self, specs: Sequence[Spec], reps: NDArray[np.float64]) -> NDArray[np.float64]:
        """Replicates of the never/always-solved shares clipped to the range the counts allow (theory.md,
        "What the counts identify"): a prompt with p = 0 never has k > 0, so this corpus's share with p = 0 is
        at most its share with k = 0 (p = 1: k = n). A replicate drawn with more k = 0 prompts than the corpus
        has estimates a share this corpus cannot have; its interval and one-sided bound stop at the range's end
        (issue 36 item 29: a 0.236 bound where at most 0.195 is possible)."""
        if reps.size == 0:
            return reps
        n_total = float(self.weight.sum())
        ends = {"never_solved_rate": float(self.weight[self.k == 0].sum()) / n_total,
                "always_solved_rate": float(self.weight[self.k == self.n].sum()) / n_total}
        out = reps.copy()
        for i, spec in enumerate(specs):
            if spec.name in ends:
                out[:, i] = np.minimum(out[:, i], ends[spec.name])
        return out


@dataclass(frozen=True)
class CorpusEstimates:
    """Corpus quantities at some G with one estimator rule, and optionally bootstrap replicates."""

    estimator: str
    """The rule asked for: auto, bayes, unbiased or plugin."""
    specs: tuple[Spec, ...]
    """Quantity, G and the estimator used, per column (G-free quantities appear once)."""
    point: NDArray[np.float64]
    """The estimate per spec (NaN where undefined)."""
    replicates: NDArray[np.float64]
    """Bootstrap replicates (rows) per spec; no rows when no interval was asked for."""

    def index(self, name: str, G: int) -> int:
        """Column of ``name`` at ``G`` in ``point`` and ``replicates``."""
        from .estimates import G_FREE

        for i, s in enumerate(self.specs):
            if s.name == name and (name in G_FREE or s.G == G):
                return i
        raise KeyError(f"{name} at G = {G} was not estimated")

    def value(self, name: str, G: int) -> float | None:
        """The estimate (None where undefined)."""
        v = float(self.point[self.index(name, G)])
        return None if np.isnan(v) else v

    def used(self, name: str, G: int) -> str:
        """Estimator behind ``value(name, G)``."""
        return self.specs[self.index(name, G)].estimator

    def quantile(self, name: str, G: int, q: float) -> float | None:
        """The q-quantile of the bootstrap replicates (None without replicates or where undefined)."""
        i = self.index(name, G)
        col = self.replicates[:, i]
        col = col[np.isfinite(col)]
        if col.size == 0 or np.isnan(self.point[i]):
            return None
        return linear_quantiles(col, [q])[0]

    def interval(self, name: str, G: int, level: float) -> tuple[float, float] | None:
        """Two-sided percentile interval at ``level`` (None without replicates or where undefined)."""
        lo = self.quantile(name, G, (1.0 - level) / 2.0)
        hi = self.quantile(name, G, (1.0 + level) / 2.0)
        return None if lo is None or hi is None else (lo, hi)
