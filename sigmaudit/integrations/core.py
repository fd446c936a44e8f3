"""What the trainer hooks compute, with no trainer imported: silent-group metrics of a step's groups
and the skip policy of a curriculum sampler. Both feed a :class:`sigmaudit.Forecaster`.

A group is *silent* when all its rewards are equal (reward std 0: the group gives no update), as
the trainers count it (TRL's ``frac_reward_zero_std``); all-wrong / all-correct split it by whether
the group's answers are all below or all at/above ``threshold`` (a reward >= threshold is right).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..audits.forecaster import Forecaster

PREFIX = "sigmaudit/"
"""Prefix of every metric name the hooks log."""


def group_counts(prompt_ids: Sequence[Hashable], rewards: ArrayLike, group_ids: Sequence[Hashable] | None = None,
                 group_size: int | None = None, threshold: float = 1.0) -> tuple[list[str], np.ndarray, np.ndarray,
                                                                                    np.ndarray]:
    """Per group: its prompt, n, k (rewards >= threshold) and whether it is silent (all rewards equal).

    Groups are given by ``group_ids`` (one per sample, e.g. verl's ``uid``), else by consecutive blocks
    of ``group_size`` samples (TRL's layout: G completions of a prompt next to each other). NaN rewards
    (unscorable samples) are left out of their group."""
    r = np.asarray(rewards, dtype=np.float64).ravel()
    ids = [str(p) for p in prompt_ids]
    if len(ids) != r.size:
        raise ValueError(f"{len(ids)} prompt ids but {r.size} rewards")
    if group_ids is not None:
        gid = np.unique(np.asarray([str(g) for g in group_ids], dtype=object), return_inverse=True)[1]
    elif group_size:
        if r.size % group_size:
            raise ValueError(f"{r.size} rewards are not whole groups of {group_size}")
        gid = np.arange(r.size) // group_size
    else:
        raise ValueError("give group_ids or group_size")
    ok = ~np.isnan(r)
    gid, r, ids_ok = gid[ok], r[ok], [p for p, keep in zip(ids, ok, strict=True) if keep]
    order = np.argsort(gid, kind="stable")
    gid, r = gid[order], r[order]
    starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]]) if gid.size else np.zeros(0, dtype=np.int64)
    n = np.diff(np.r_[starts, gid.size]).astype(np.int64)
    k = np.add.reduceat((r >= threshold).astype(np.int64), starts) if gid.size else np.zeros(0, dtype=np.int64)
    lo, hi = (np.minimum.reduceat(r, starts), np.maximum.reduceat(r, starts)) if gid.size else (n, n)
    prompts = [ids_ok[order[s]] for s in starts]
    return prompts, n, k, lo == hi


@dataclass
class SilentGroupMetrics:
    """Per training step: the observed silent share of its groups (all wrong / all correct), the next
    step's forecast at the trainer's G, and the forecast at other group sizes; as a flat dict of
    ``sigmaudit/...`` metrics a trainer logs (so W&B, TensorBoard, Trackio get them)."""

    other_G: tuple[int, ...] = (4, 16)
    threshold: float = 1.0
    forecast: bool = True
    forecaster: Forecaster = field(default_factory=Forecaster)

    def step(self, step: int, prompt_ids: Sequence[Hashable], rewards: ArrayLike, *,
             group_size: int | None = None, group_ids: Sequence[Hashable] | None = None) -> dict[str, float]:
        """Feed one step's scored samples; the metrics to log for it."""
        prompts, n, k, silent = group_counts(prompt_ids, rewards, group_ids, group_size, self.threshold)
        self.forecaster.update_counts(step, prompts, n, k)
        groups = max(int(n.size), 1)
        out = {f"{PREFIX}groups": float(n.size),
               f"{PREFIX}silent_observed": float(silent.sum() / groups),
               f"{PREFIX}all_wrong_observed": float((k == 0).sum() / groups),
               f"{PREFIX}all_correct_observed": float((k == n).sum() / groups)}
        if self.forecast and len(self.forecaster.steps) >= 2:
            G = group_size or int(np.bincount(n).argmax())
            out[f"{PREFIX}silent_forecast_next_G{G}"] = self.forecaster.expected_silent_share(G)
            for g in self.other_G:
                if g != G:
                    out[f"{PREFIX}silent_forecast_next_G{g}"] = self.forecaster.expected_silent_share(g)
            out[f"{PREFIX}skip_list"] = float(len(self.forecaster.skip_list(G)))
        return out


@dataclass
class SkipPolicy:
    """GRESO-style pre-rollout skipping on sigmaudit's forecast: a prompt whose forecast P(silent) at
    the next visit exceeds ``max_p_silent`` is drawn with probability ``floor`` only (the exploration
    floor keeps every prompt in play, so a prompt that changes is seen again); others always.
    ``weight`` gives the same as a sampling weight (1, or ``floor``)."""

    G: int | None = None
    max_p_silent: float = 0.9
    floor: float = 0.05
    threshold: float = 1.0
    seed: int = 0
    forecaster: Forecaster = field(init=False)
    _skip: frozenset[str] = field(default=frozenset(), init=False)
    _rng: Any = field(init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"floor must lie in [0, 1], got {self.floor!r}")
        self.forecaster = Forecaster(self.G, max_p_silent=self.max_p_silent)
        self._rng = np.random.default_rng(self.seed)

    def observe(self, step: int, prompt_ids: Sequence[Hashable], rewards: ArrayLike,
                group_ids: Sequence[Hashable] | None = None, group_size: int | None = None) -> None:
        """Feed one step's scored samples; the skip list is refreshed (from the second step on)."""
        prompts, n, k, _ = group_counts(prompt_ids, rewards, group_ids, group_size, self.threshold)
        self.forecaster.update_counts(step, prompts, n, k)
        if len(self.forecaster.steps) >= 2:
            self._skip = frozenset(self.forecaster.skip_list())

    @property
    def skipped(self) -> frozenset[str]:
        """Prompts on the skip list now."""
        return self._skip

    def weight(self, prompt_id: Hashable) -> float:
        """Sampling weight: ``floor`` for a prompt on the skip list, else 1."""
        return self.floor if str(prompt_id) in self._skip else 1.0

    def keep(self, prompt_id: Hashable) -> bool:
        """Whether to draw this prompt now (a skip-listed one with probability ``floor``)."""
        return str(prompt_id) not in self._skip or bool(self._rng.random() < self.floor)
