"""What the trainer hooks compute, with no trainer imported: silent-group metrics of a step's groups
and the skip policy of a curriculum sampler. Both feed a :class:`sigmaudit.Forecaster`.

A group is *silent* when all its rewards are equal (reward std 0: the group gives no update), as
the trainers count it (TRL's ``frac_reward_zero_std``); all-wrong / all-correct split it by whether
the group's answers are all below or all at/above ``threshold`` (a reward >= threshold is right).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..audits.forecaster import Forecaster
from ..errors import ConfigError

PREFIX = "sigmaudit/"
"""Prefix of every metric name the hooks log."""


ZERO_STD_ATOL = 1e-8
"""TRL's test for a zero-spread group: ``torch.isclose(std, 0)``, i.e. sample std <= 1e-8 (its default atol)."""


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}", location=name)
    return int(value)


def group_counts(prompt_ids: Sequence[Hashable], rewards: ArrayLike, group_ids: Sequence[Hashable] | None = None,
                 group_size: int | None = None, threshold: float = 1.0,
                 zero_std_atol: float | None = None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Per group: its prompt, n (scored samples), k (rewards >= threshold) and whether it is silent.

    Groups are given by ``group_ids`` (one per sample, e.g. verl's ``uid``), else by consecutive blocks
    of ``group_size`` samples (TRL's layout: G completions of a prompt next to each other). NaN rewards
    (unscorable samples) are left out of n and k; a group all of whose rewards are NaN is kept with
    n = 0, never silent (TRL counts it so). Silent: with ``zero_std_atol`` None, every scored reward
    equal (n >= 1); with a float, TRL's ``frac_reward_zero_std`` rule: at least two scored rewards and
    their sample std (ddof 1) <= ``zero_std_atol`` (one scored reward gives TRL a NaN std: not silent)."""
    r = np.asarray(rewards, dtype=np.float64).ravel()
    ids = [str(p) for p in prompt_ids]
    if len(ids) != r.size:
        raise ConfigError(f"{len(ids)} prompt ids but {r.size} rewards", location="rewards")
    if group_ids is not None:
        if len(group_ids) != r.size:
            raise ConfigError(f"{len(group_ids)} group ids but {r.size} rewards", location="group_ids")
        gid = np.unique(np.asarray([str(g) for g in group_ids], dtype=object), return_inverse=True)[1]
        gid = np.asarray(gid, dtype=np.int64).ravel()
    elif group_size is not None:
        size = _whole(group_size, "group_size")
        if r.size % size:
            raise ConfigError(f"{r.size} rewards are not whole groups of {size}", location="group_size")
        gid = np.arange(r.size, dtype=np.int64) // size
    else:
        raise ConfigError("give group_ids or group_size", location="group_counts")
    order = np.argsort(gid, kind="stable")
    gid, r = gid[order], r[order]
    starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]]) if gid.size else np.zeros(0, dtype=np.int64)
    prompts = [ids[order[s]] for s in starts]
    if not gid.size:
        return prompts, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    ok = ~np.isnan(r)
    n = np.add.reduceat(ok.astype(np.int64), starts)
    k = np.add.reduceat((ok & (r >= threshold)).astype(np.int64), starts)
    filled = np.where(ok, r, 0.0)
    mean = np.add.reduceat(filled, starts) / np.maximum(n, 1)
    dev = np.where(ok, r - np.repeat(mean, np.diff(np.r_[starts, gid.size])), 0.0)
    if zero_std_atol is None:
        silent = (n >= 1) & (np.maximum.reduceat(np.abs(dev), starts) == 0.0)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            std = np.sqrt(np.add.reduceat(dev * dev, starts) / (n - 1))
        silent = (n >= 2) & (std <= zero_std_atol)
    return prompts, n, k, silent


@dataclass
class RewardScale:
    """Whether the rewards fed so far fit ``threshold``: a warning when every scored reward lies on one
    side of it while some group's rewards differ.

    Why: the forecast counts a group all-wrong when every reward is below ``threshold`` and all-correct
    when every reward is at or above it, and a group counted so is forecast silent. A group whose
    rewards differ is not silent, so it must hold rewards on both sides of a threshold that separates
    right from wrong answers (binary rewards at threshold 1 always do). When no reward has reached the
    threshold (or every one has) yet some group's rewards differ, the threshold misses the reward's
    scale (say right answers score 0.7 at the default 1.0): every group is counted all-wrong (all-correct)
    and every prompt is forecast silent, however much its rewards vary. Until a reward falls on the other
    side the warning stands (once per object); shaped rewards of a run whose every answer is still wrong
    (0 and a 0.2 format bonus) also meet it, rightly: their groups are not silent either."""

    threshold: float = 1.0
    below: bool = False
    at_or_above: bool = False
    spread: int = 0
    low: float = float("inf")
    high: float = float("-inf")
    warned: bool = False

    def feed(self, rewards: np.ndarray, n: np.ndarray, silent: np.ndarray) -> None:
        scored = rewards[~np.isnan(rewards)]
        if scored.size:
            self.below |= bool((scored < self.threshold).any())
            self.at_or_above |= bool((scored >= self.threshold).any())
            self.low, self.high = min(self.low, float(scored.min())), max(self.high, float(scored.max()))
        self.spread += int(((n >= 2) & ~silent).sum())

    @property
    def mismatch(self) -> bool:
        """Every scored reward on one side of ``threshold`` while some group's rewards differ."""
        return self.spread > 0 and self.below != self.at_or_above

    def warn(self, consequence: str) -> None:
        if not self.mismatch or self.warned:
            return
        self.warned = True
        side = "below" if self.below else "at or above"
        counted = "all-wrong" if self.below else "all-correct"
        warnings.warn(f"sigmaudit: every reward so far is {side} threshold {self.threshold:g} (rewards "
                      f"{self.low:g} to {self.high:g}), yet {self.spread} group(s) had rewards that differ: every "
                      f"group is counted {counted} and every prompt forecast silent; {consequence}set threshold to "
                      "the reward a right answer gets", RuntimeWarning, stacklevel=4)

    def state_dict(self) -> dict[str, Any]:
        return {"below": self.below, "at_or_above": self.at_or_above, "spread": self.spread,
                "low": self.low, "high": self.high}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)


def refeed(forecaster: Forecaster, groups: dict[str, list], up_to: int | None = None) -> Forecaster:
    """``forecaster`` fed ``groups`` (a ``per_group`` table as lists), step by step; only steps <= ``up_to``."""
    steps = np.asarray(groups["step"], dtype=np.int64)
    for step in np.unique(steps):
        if up_to is not None and step > up_to:
            break
        at = np.flatnonzero(steps == step)
        forecaster.update_counts(int(step), [groups["prompt"][i] for i in at],
                                 np.asarray(groups["n"])[at], np.asarray(groups["k"])[at])
    return forecaster


def _feed(forecaster: Forecaster, step: int, prompts: list[str], n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Feed the groups with a scored sample to ``forecaster``; which groups those are."""
    scored = n >= 1
    if scored.any():
        forecaster.update_counts(step, [p for p, s in zip(prompts, scored, strict=True) if s], n[scored], k[scored])
    return scored


@dataclass
class SilentGroupMetrics:
    """Per training step: the observed silent share of its groups (all wrong / all correct), the next
    step's forecast at the trainer's G, and the forecast at other group sizes; as a flat dict of
    ``sigmaudit/...`` metrics a trainer logs (so W&B, TensorBoard, Trackio get them).

    Shares are over every group of the step, unscorable ones (n = 0) included, as TRL counts them; a
    step with no group gets NaN shares (nothing to share out; TRL's log leaves NaN values out). Only
    groups with a scored sample reach the forecaster. ``zero_std_atol``: see :func:`group_counts`."""

    other_G: tuple[int, ...] = (4, 16)
    threshold: float = 1.0
    forecast: bool = True
    forecaster: Forecaster = field(default_factory=Forecaster)
    zero_std_atol: float | None = None
    scale: RewardScale = field(init=False)

    def __post_init__(self) -> None:
        self.scale = RewardScale(self.threshold)

    def step(self, step: int, prompt_ids: Sequence[Hashable], rewards: ArrayLike, *,
             group_size: int | None = None, group_ids: Sequence[Hashable] | None = None) -> dict[str, float]:
        """Feed one step's scored samples; the metrics to log for it."""
        prompts, n, k, silent = group_counts(prompt_ids, rewards, group_ids, group_size, self.threshold,
                                             self.zero_std_atol)
        scored = _feed(self.forecaster, step, prompts, n, k)
        self.scale.feed(np.asarray(rewards, dtype=np.float64).ravel(), n, silent)
        self.scale.warn("")
        groups = int(n.size)
        share = (lambda hits: float(hits.sum() / groups)) if groups else (lambda hits: float("nan"))
        out = {f"{PREFIX}groups": float(groups),
               f"{PREFIX}silent_observed": share(silent),
               f"{PREFIX}all_wrong_observed": share(scored & (k == 0)),
               f"{PREFIX}all_correct_observed": share(scored & (k == n))}
        if self.forecast and len(self.forecaster.steps) >= 2:
            G = self._size(group_size, n[scored])
            out[f"{PREFIX}silent_forecast_next_G{G}"] = self.forecaster.expected_silent_share(G)
            for g in self.other_G:
                if g != G:
                    out[f"{PREFIX}silent_forecast_next_G{g}"] = self.forecaster.expected_silent_share(g)
            out[f"{PREFIX}skip_list"] = float(len(self.forecaster.skip_list(G)))
        return out

    def _size(self, group_size: int | None, n: np.ndarray) -> int:
        """The trainer's G: ``group_size``, else this step's most common group size, else the forecaster's."""
        if group_size is not None:
            return int(group_size)
        if n.size:
            return int(np.bincount(n).argmax())
        return self.forecaster._size(None)


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
    scale: RewardScale = field(init=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.floor <= 1.0:
            raise ConfigError(f"floor must lie in [0, 1], got {self.floor!r}", location="floor")
        self.forecaster = Forecaster(self.G, max_p_silent=self.max_p_silent)
        self._rng = np.random.default_rng(self.seed)
        self.scale = RewardScale(self.threshold)

    def observe(self, step: int, prompt_ids: Sequence[Hashable], rewards: ArrayLike,
                group_ids: Sequence[Hashable] | None = None, group_size: int | None = None) -> None:
        """Feed one step's scored samples; the skip list is refreshed (from the second step on). While
        the rewards miss ``threshold``'s scale (:class:`RewardScale`) the skip list is empty (a warning)."""
        prompts, n, k, silent = group_counts(prompt_ids, rewards, group_ids, group_size, self.threshold)
        _feed(self.forecaster, step, prompts, n, k)
        self.scale.feed(np.asarray(rewards, dtype=np.float64).ravel(), n, silent)
        if self.scale.mismatch:
            self.scale.warn("no prompt is skipped until one falls on the other side; ")
            self._skip = frozenset()
        elif len(self.forecaster.steps) >= 2:
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

    def state_dict(self) -> dict[str, Any]:
        """Everything fed, the skip list and the random state, as plain Python (for a trainer's checkpoint)."""
        groups = self.forecaster.per_group
        return {"groups": {c: groups[c].to_list() for c in ("step", "prompt", "n", "k")},
                "skip": sorted(self._skip), "rng": self._rng.bit_generator.state, "scale": self.scale.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output: the same forecasts, skip list and draws follow."""
        self.forecaster = refeed(Forecaster(self.G, max_p_silent=self.max_p_silent), state["groups"])
        self.scale = RewardScale(self.threshold)
        self.scale.load_state_dict(state.get("scale", {}))
        self._skip = frozenset(state["skip"])
        self._rng.bit_generator.state = state["rng"]
