"""What DAPO as verl runs it would cost on this log: ``plan/check/watch --train-batch B --gen-batch M
--max-gen-batches K`` (verl's ``data.train_batch_size``, ``data.gen_batch_size`` and
``algorithm.filter_groups.max_num_gen_batches``; K ≤ 0: no limit).

The loop is :mod:`sigmaudit.core.dapo` (verl-recipe commit
:data:`~sigmaudit.core.dapo.VERL_RECIPE_COMMIT`); the difficulty it runs at is read two ways:

- ``current``: the silent chance at G = n of the counts plan reads (plan's drift rule,
  :func:`sigmaudit.audits.plan.current_difficulty`: the last tenth of the steps when pass rates moved),
  by the plan's estimator rule (``auto``: unbiased at the logged n);
- ``next_step``: the mean over prompts of the next-step forecast P(silent) at G = n
  (:func:`sigmaudit.audits.forecast.forecast`), on a log with steps.

n is the log's most common group size (verl's ``rollout.n``), else :data:`DEFAULT_N`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .arguments import DEFAULT_RUN_STEPS

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..core.dapo import DapoCost
    from ..loaders import LoadedCounts

DEFAULT_N = 8
"""Rollouts per prompt when the log has no groups to read n from."""
DEFAULT_WARN_P_RAISES = 0.05
"""``watch`` warns when the next step's P(raises) passes this (``--warn-p-raises``): one step in twenty."""


@dataclass(frozen=True)
class DapoSettings:
    """verl's three settings, and the run length S."""

    train_batch: int
    """B: ``data.train_batch_size`` (prompts a step trains on)."""
    gen_batch: int
    """M: ``data.gen_batch_size`` (prompts per generation chunk)."""
    max_gen_batches: int = 0
    """K: ``algorithm.filter_groups.max_num_gen_batches`` (≤ 0: no limit)."""
    run_steps: int = DEFAULT_RUN_STEPS
    """S for P(a run of S steps raises)."""
    dataset_size: int | None = None
    """D: prompts in the dataset verl's loader draws from (``--dataset-size``); None: much larger than a step
    reads (no finite-population correction)."""

    def __post_init__(self) -> None:
        for name, flag, v in (("train_batch", "--train-batch", self.train_batch),
                              ("gen_batch", "--gen-batch", self.gen_batch), ("run_steps", "--run-steps",
                                                                             self.run_steps),
                              ("dataset_size", "--dataset-size", self.dataset_size or 1)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {v!r}", location=flag)
        if self.dataset_size is not None and self.gen_batch > self.dataset_size:
            raise ConfigError(f"the generation batch M = {self.gen_batch:,} is larger than the dataset "
                              f"(D = {self.dataset_size:,} prompts): verl's drop_last dataloader yields no batch "
                              "(RayPPOTrainer._create_dataloader asserts 'Train dataloader is empty!')",
                              location="--gen-batch", remedy=f"give --gen-batch at most {self.dataset_size:,}")


@dataclass(frozen=True)
class DapoAt:
    """DAPO's cost at one reading of the difficulty."""

    basis: str
    """``current difficulty`` or ``next-step forecast``."""
    silent: float
    """Mean chance that a drawn prompt's group of n is silent."""
    prompts: int
    """Prompts the silent chance averages over."""
    cost: DapoCost
    """The loop's figures at ``silent`` (:func:`sigmaudit.core.dapo.dapo_cost`)."""

    def to_dict(self) -> dict[str, Any]:
        c = self.cost
        return {"basis": self.basis, "silent": self.silent, "prompts": self.prompts,
                "gen_batches_per_step": c.gen_batches_per_step, "generated_per_trained": c.generated_per_trained,
                "ideal_groups_per_kept": c.ideal_groups_per_kept,
                "discarded_informative_rollouts": c.discarded_informative_rollouts,
                "p_step_raises": c.p_step_raises, "p_run_raises": c.p_run_raises}


@dataclass(frozen=True)
class DapoResult:
    """DAPO's loop on this log, at the current difficulty and (with steps) at the next-step forecast."""

    settings: DapoSettings
    """B, M, K, S."""
    n: int
    """Rollouts per prompt."""
    n_source: str
    """``logged`` (the log's most common group size), ``given`` (check's -G) or ``default`` (:data:`DEFAULT_N`)."""
    current: DapoAt
    """At the current difficulty."""
    next_step: DapoAt | None
    """At the next-step forecast (None without steps)."""
    commit: str
    """The verl-recipe commit whose loop is modelled."""
    spread: float | None = None
    """With ``--dataset-size``: ρ, the share of a slot's keep variance that is which prompt was drawn (the
    corpus prior's Var(q) / (q̄ (1 − q̄)) at G = n), which the finite-population correction scales by."""
    filtered: bool = False
    """The log is a post-filter dump (:mod:`.filtered`; a DAPO run's own dump keeps only kept groups): the
    silent chance read from it is understated, and so is every figure here."""

    @property
    def headline(self) -> DapoAt:
        """The next-step figures when there are any, else the current ones."""
        return self.next_step or self.current

    def to_dict(self) -> dict[str, Any]:
        """JSON under ``dapo`` (docs/json.md): the settings, the current figures at the top level, ``next_step``."""
        s = self.settings
        return {"train_batch": s.train_batch, "gen_batch": s.gen_batch, "max_gen_batches": s.max_gen_batches,
                "run_steps": s.run_steps, "n": self.n, "n_source": self.n_source, "verl_recipe_commit": self.commit,
                "dataset_size": s.dataset_size, "spread": self.spread, "filtered": self.filtered,
                **self.current.to_dict(),
                "next_step": None if self.next_step is None else self.next_step.to_dict()}


def dapo_at(silent: float, prompts: int, basis: str, settings: DapoSettings, n: int,
            spread: float | None = None) -> DapoAt:
    """DAPO's figures at one silent chance (with ``settings.dataset_size``, corrected for the finite dataset at
    ``spread``)."""
    from ..core.dapo import FiniteDataset, dapo_cost

    ds = None if settings.dataset_size is None or spread is None else FiniteDataset(settings.dataset_size, spread)
    cost = dapo_cost(min(max(silent, 0.0), 1.0), train_batch=settings.train_batch, gen_batch=settings.gen_batch,
                     n=n, max_gen_batches=settings.max_gen_batches, run_steps=settings.run_steps, dataset=ds)
    return DapoAt(basis, float(silent), int(prompts), cost)


def keep_spread(basis: Corpus, n: int) -> float:
    """ρ = Var(q) / (q̄ (1 − q̄)) over the corpus prior's mixture of the prompts' posteriors, q(p) = 1 − p^n −
    (1 − p)^n the chance a prompt's group of n is kept (0 when q̄ is 0 or 1: nothing varies)."""
    import numpy as np

    grid = basis.prior.grid
    w = basis.mixture / float(basis.mixture.sum())
    q = 1.0 - grid**n - (1.0 - grid) ** n if n > 1 else np.ones_like(grid)
    mean = float(w @ q)
    var = max(float(w @ q**2) - mean**2, 0.0)
    return 0.0 if not 0.0 < mean < 1.0 else min(var / (mean * (1.0 - mean)), 1.0)


def next_step_silent(loaded: LoadedCounts, n: int) -> tuple[float, int] | None:
    """Mean next-step forecast P(silent) at G = n over the prompts seen, and their number (None without steps)."""
    from .forecast import forecast

    groups = loaded.per_group
    if groups is None or "step" not in groups.columns or groups["step"].drop_nulls().n_unique() < 2:
        return None
    fc = forecast(groups, n)
    return (fc.expected_silent / fc.prompts, fc.prompts) if fc.prompts else None


def dapo_of(loaded: LoadedCounts, basis: Corpus, settings: DapoSettings, *, estimator: str = "auto",
            forecast_from: LoadedCounts | None = None, n: int | None = None,
            basis_name: str = "current difficulty", filtered: bool = False) -> DapoResult:
    """DAPO on ``loaded``: the current difficulty from ``basis`` (the corpus plan reads), the next step from
    the forecast on ``forecast_from`` (default ``loaded``; the whole window asked), at ``n`` rollouts per prompt
    (None: the logged group size, else :data:`DEFAULT_N`); ``basis_name`` names what ``basis`` is."""
    from ..core.dapo import VERL_RECIPE_COMMIT
    from . import logged_group_size

    logged = logged_group_size(loaded)
    source = "given" if n is not None else "default" if logged is None else "logged"
    n = n if n is not None else DEFAULT_N if logged is None else logged
    est = basis.estimates(["silent_rate"], [n], estimator)  # type: ignore[list-item]
    silent = est.value("silent_rate", n)
    if silent is None:
        raise ConfigError(f"the silent rate at G = {n} is undefined for this log's estimator {estimator!r}",
                          location="--estimator", remedy="use --estimator auto")
    spread = None if settings.dataset_size is None else keep_spread(basis, n)
    current = dapo_at(silent, basis.n_prompts, basis_name, settings, n, spread)
    nxt = next_step_silent(forecast_from or loaded, n)
    ahead = None if nxt is None else dapo_at(nxt[0], nxt[1], "next-step forecast", settings, n, spread)
    return DapoResult(settings, n, source, current, ahead, VERL_RECIPE_COMMIT, spread, filtered)


def watch_event(silent: float | None, prompts: int, settings: DapoSettings, n: int, warn_at: float) -> dict[str, Any]:
    """``watch``'s ``dapo`` event key for one completed step, from the next step's forecast silent share
    (None at the first step: no forecast yet): the loop's figures and whether P(step raises) > ``warn_at``."""
    if silent is None:
        return {"p_step_raises": None, "gen_batches_per_step": None, "generated_per_trained": None,
                "warn_at": warn_at, "warning": False}
    at = dapo_at(silent, prompts, "next-step forecast", settings, n)
    return {"p_step_raises": at.cost.p_step_raises, "gen_batches_per_step": at.cost.gen_batches_per_step,
            "generated_per_trained": at.cost.generated_per_trained, "warn_at": warn_at,
            "warning": at.cost.p_step_raises > warn_at}
