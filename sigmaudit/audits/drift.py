"""Did the pass rates move within the window? (a training run is a time series, not one fixed p per prompt)

The test compares what the logged groups did with what pooling each prompt's samples predicts. For
every logged group j of prompt i (size g_j, k_j right) the observed silence is 1{k_j ∈ {0, g_j}}; the
pooled prediction is the unbiased (hypergeometric) chance that g_j of the prompt's N_i logged answers
(K_i right), drawn without replacement, all agree: [C(K_i, g_j) + C(N_i − K_i, g_j)] / C(N_i, g_j).
While a prompt's p stays put its groups are exchangeable and the prediction is exactly unbiased, so
the per-prompt sums d_i = Σ_j (observed − predicted) have mean 0 and are independent across prompts;
z = Σ d_i / sqrt(Σ d_i²). When p moves, groups of one step agree more often than answers mixed
across steps (p^G + (1 − p)^G is convex), so the observed silent share rises above the pooled
prediction: the test is one-sided. It fires when z ≥ :data:`Z_DRIFT` and the gap is at least
:data:`MIN_GAP` (a gap too small to change a decision is not worth a warning on a huge log).
Measured false-alarm rate on stationary simulated logs: see tests/test_drift.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # Polars loads with the logs: calc and simulate (which read none) import this module through views
    import polars as pl

    from ..loaders import LoadedCounts
    from ..loaders.options import Window

Z_DRIFT = 3.5
"""One-sided z above which the observed silent share is called beyond the pooled prediction."""
MIN_GAP = 0.02
"""Smallest gap (observed − predicted silent share of the logged groups) that is reported as drift."""
CURRENT_SHARE = 0.1
"""The current difficulty is read from the last tenth of the window's steps ..."""
CURRENT_MIN_STEPS = 5
"""... and at least this many steps (all of them in a shorter window)."""


@dataclass(frozen=True)
class Drift:
    """Pass rates moved within the window: the logged groups were silent more often than pooled counts predict."""

    statistic: float
    """z = Σ_i d_i / sqrt(Σ_i d_i²) over prompts (see the module)."""
    observed: float
    """Share of the window's logged groups that were silent."""
    predicted: float
    """Pooled-count (unbiased) prediction of that share, from each prompt's samples over the window."""
    groups: int
    """Logged groups tested."""
    window: Window | None
    """The steps tested (the load's window; None for groups without steps: the whole log). A plan on a
    drifting log reads a later cut, so its result's ``window`` is not this one."""
    message: str | None = None
    """The one WARNING line every view prints, written by :func:`sigmaudit.views.drift.worded` (the audit
    returns numbers); None until then."""


def silent_gap(per_group: pl.DataFrame, cells: pl.DataFrame | None = None) -> tuple[float, float, float, int]:
    """(observed silent share, pooled prediction, z, groups) of logged groups (``prompt, n, k``).

    A prompt's groups of one size share one prediction, so the test runs on (prompt, size) cells: the cell's
    groups, how many were silent and their right answers (``cells``, :func:`..loaders.assemble.prompt_cells`
    of ``per_group``, when the load counted them). Every sum then has one order whatever order the groups came
    in (engines, threads, files): cells sorted by (prompt, size), d_i = Σ over a prompt's cells of
    (silent − groups × prediction), and exactly rounded totals, since z and the prediction are printed.
    """
    import polars as pl

    from ..core.estimators import silent_unbiased
    from ..loaders.assemble import prompt_cells

    cells = (prompt_cells(per_group) if cells is None else cells).lazy()
    cells = (cells.with_columns((pl.col("n") * pl.col("groups")).sum().over("prompt").alias("N"),
                                pl.col("k_sum").sum().over("prompt").alias("K"))
             .sort("prompt", "n").collect())
    n = cells["n"].to_numpy().astype(np.int64)
    N, K = cells["N"].to_numpy().astype(np.int64), cells["K"].to_numpy().astype(np.int64)
    groups = cells["groups"].to_numpy().astype(np.int64)
    observed = cells["silent"].to_numpy().astype(np.int64)
    predicted = np.empty(n.size, dtype=np.float64)
    for size in sorted(set(n.tolist())):  # not np.unique: numpy >= 2.3 imports numpy.ma for it (a gate's start-up)
        at = n == size
        predicted[at] = silent_unbiased(N[at], K[at], size).silent
    expected = groups * predicted
    # cells are sorted by prompt: a prompt's index is the count of prompt changes before its cells
    prompt = cells["prompt"]
    prompt_index = np.cumsum(np.concatenate([[0], prompt[1:].ne_missing(prompt[:-1]).to_numpy()])).astype(np.int64)
    d_i = np.bincount(prompt_index, weights=observed - expected)
    total, scale = math.fsum(d_i), math.sqrt(math.fsum(d_i ** 2))
    z = 0.0 if scale == 0.0 else total / scale
    count = int(groups.sum())
    return int(observed.sum()) / count, math.fsum(expected) / count, z, count


@dataclass(frozen=True)
class SilentGap:
    """The window's logged groups: silent share observed beside the pooled-count prediction of it."""

    observed: float
    """Share of the logged groups that were silent."""
    predicted: float
    """Unbiased prediction of that share from each prompt's samples pooled over the window."""
    statistic: float
    """The drift test's z (see the module)."""
    groups: int
    """Logged groups."""


def gap_of(loaded: LoadedCounts) -> SilentGap | None:
    """:func:`silent_gap` of a load's logged groups (built once per load); None without groups."""
    if "silent_gap" not in loaded.cache:
        groups = loaded.per_group
        found = None
        if groups is not None and groups.height:
            from ..loaders.options import PROMPT_CELLS

            counted = loaded.cache.get(PROMPT_CELLS)
            found = SilentGap(*silent_gap(groups, counted[1] if counted and counted[0] is groups else None))
        loaded.cache["silent_gap"] = found
    return loaded.cache["silent_gap"]  # type: ignore[no-any-return]


def drift_of(loaded: LoadedCounts) -> Drift | None:
    """The drift warning of a load's logged groups (over its window), or None: no groups, or no drift."""
    if "drift" in loaded.cache:
        return loaded.cache["drift"]  # type: ignore[no-any-return]
    found = None
    gap = gap_of(loaded)
    if gap is not None:
        if gap.statistic >= Z_DRIFT and gap.observed - gap.predicted >= MIN_GAP:
            found = Drift(gap.statistic, gap.observed, gap.predicted, gap.groups, loaded.window)
    loaded.cache["drift"] = found
    return found


def current_window(loaded: LoadedCounts) -> LoadedCounts:
    """The current difficulty: ``loaded`` cut to the last tenth of its steps (at least
    :data:`CURRENT_MIN_STEPS`; the whole load when it has fewer or no steps). Its ``window`` says which."""
    from ..loaders.window import cut

    if loaded.window is None or loaded.window.steps <= CURRENT_MIN_STEPS:
        return loaded
    last = max(CURRENT_MIN_STEPS, int(np.ceil(CURRENT_SHARE * loaded.window.steps)))
    return cut(loaded, last_steps=last) if last < loaded.window.steps else loaded


def context(loaded: LoadedCounts) -> dict[str, object]:
    """The ``window`` and ``drift`` fields every result built from ``loaded`` carries."""
    return {"window": loaded.window, "drift": drift_of(loaded)}


def drift_json(drift: Drift | None) -> dict[str, object] | None:
    """JSON of a drift: {statistic, message, observed, predicted, groups} (``message`` as written by
    :func:`sigmaudit.views.drift.worded`), or null."""
    if drift is None:
        return None
    return {"statistic": drift.statistic, "message": drift.message, "observed": drift.observed,
            "predicted": drift.predicted, "groups": drift.groups}


def context_json(window: object, drift: Drift | None) -> dict[str, object]:
    """JSON of those fields: ``window`` {first_step, last_step, steps, asked} or null; ``drift``
    (:func:`drift_json`)."""
    from dataclasses import asdict

    return {"window": None if window is None else asdict(window),  # type: ignore[call-overload]
            "drift": drift_json(drift)}
