"""A prompt's value at the G to be run: the posterior chance that its next group is informative.

docs/theory.md, "Curating by value". With V(p; G) = 1 − p^G − (1 − p)^G (the chance that a group of G
answers of a prompt with pass rate p is not silent), a prompt with counts (n, k) is scored by

    v(n, k; G) = E[V(p; G) | n, k]

under the corpus prior, and judged against t = θ · v̄, θ a share of the corpus mean v̄. The decision also
reads q(n, k) = P(V(p; G) < t | n, k), the posterior probability that the prompt's own value is below t:

- ``drop``: v < t and q ≥ ℓ (below the threshold, and sure of it at level ℓ);
- ``reprobe``: v < t and q < ℓ (below it on average, but the counts leave it open);
- ``keep``: v ≥ t.

V is symmetric about p = 1/2 and increasing on [0, 1/2], so never- and always-solved prompts are judged
by one rule: under a prior symmetric about 1/2, (n, k) and (n, n − k) get the same v, q and class.
Every figure is a posterior mass vector over the prior's grid times a function of p on the grid (exact
for the grid prior the corpus fits).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .update import informative_chance

Decision = Literal["drop", "reprobe", "keep"]
DECISIONS: tuple[Decision, ...] = ("drop", "reprobe", "keep")
DEFAULT_MIN_VALUE = 0.5
"""``--min-value`` θ: a prompt is below the threshold when its groups are informative less than half as
often as the corpus's average prompt (each informative group of it costs more than twice the rollouts)."""
DEFAULT_CONFIDENCE = 0.9
"""``--drop-confidence`` ℓ: a drop needs posterior probability ≥ 0.9 that the prompt's value is below the
threshold (the level of every interval sigmaudit prints by default)."""
SETTLE_LIMIT = 4096
"""The most extra samples :func:`samples_to_settle` searches (past it: None, "more samples do not settle it")."""


def informative_on_grid(grid: ArrayLike, G: int) -> NDArray[np.float64]:
    """V(p; G) = 1 − p^G − (1 − p)^G at each grid point (0 at G = 1)."""
    return informative_chance(np.asarray(grid, dtype=np.float64), [int(G)])[:, 0]


def prompt_value(posterior: NDArray[np.float64], grid: ArrayLike, G: int) -> NDArray[np.float64]:
    """v = E[V(p; G) | n, k] for each posterior row (masses over ``grid``)."""
    return np.asarray(posterior @ informative_on_grid(grid, G), dtype=np.float64)


def below_chance(posterior: NDArray[np.float64], grid: ArrayLike, G: int, threshold: float) -> NDArray[np.float64]:
    """q = P(V(p; G) < threshold | n, k) for each posterior row."""
    below = (informative_on_grid(grid, G) < threshold).astype(np.float64)
    return np.asarray(np.clip(posterior @ below, 0.0, 1.0), dtype=np.float64)


def decide(value: ArrayLike, below: ArrayLike, threshold: float, confidence: float) -> NDArray[np.str_]:
    """The class of each prompt from its value v and q = P(V < t): ``drop``, ``reprobe`` or ``keep``."""
    v = np.asarray(value, dtype=np.float64)
    q = np.asarray(below, dtype=np.float64)
    low = v < threshold
    return np.where(low & (q >= confidence), "drop", np.where(low, "reprobe", "keep"))


def samples_to_settle(prior_posterior: object, grid: ArrayLike, n: int, k: int, G: int, threshold: float,
                      confidence: float) -> int | None:
    """For a never-solved (k = 0) or always-solved (k = n) prompt: the fewest extra samples m ≥ 1 after
    which, were they all wrong (all right) again, it would be dropped; None for another k or past
    :data:`SETTLE_LIMIT`. ``prior_posterior`` maps arrays (n, k) to posterior rows (``GridPrior.posterior``).

    More samples of the same outcome move the posterior towards that end in likelihood ratio, so v falls and
    q rises with m: the first m that drops is found by doubling, then bisection (about 2·log2 of the limit
    posteriors, not one per m)."""
    if k not in (0, n):
        return None

    def drops(m: int) -> bool:
        nn = np.array([n + m], dtype=np.int64)
        post = prior_posterior(nn, np.zeros_like(nn) if k == 0 else nn)  # type: ignore[operator]
        t = float(threshold)
        return bool(decide(prompt_value(post, grid, G), below_chance(post, grid, G, t), t, confidence)[0] == "drop")

    hi = 1
    while not drops(hi):
        if hi >= SETTLE_LIMIT:
            return None
        hi = min(2 * hi, SETTLE_LIMIT)
    lo = hi // 2  # does not drop (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if drops(mid) else (mid, hi)
    return hi
