"""Advantages of each rule on a group of rewards (binary or real-valued).

``rewards`` has shape (..., G): the last axis is the group. Every function
returns an array of the same shape. docs/theory.md, "The group-standard-deviation
identity": GRPO divides the centred reward by the group's population standard
deviation σ, Dr. GRPO does not, DAPO drops groups with σ = 0, RLOO uses a
leave-one-out baseline, and the fixed-reference sign advantage is A = 2r − 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _group(rewards: ArrayLike) -> NDArray[np.float64]:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim == 0 or r.shape[-1] < 1:
        raise ValueError(f"rewards must have a group axis of length >= 1, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards must be finite numbers (drop missing rewards first)")
    return r


def centered_rewards(rewards: ArrayLike) -> NDArray[np.float64]:
    """Dr. GRPO advantage: r_i − mean(r), no division by σ."""
    r = _group(rewards)
    return r - r.mean(axis=-1, keepdims=True)


def grpo_advantages(rewards: ArrayLike, eps: float = 0.0) -> NDArray[np.float64]:
    """GRPO advantage: (r_i − mean) / σ with σ the population std; 0 when σ = 0 (never NaN).

    ``eps`` is added to σ as trainers do (``(r − mean) / (σ + eps)``); the
    identity g = σ · (s̄₊ − s̄₋) holds exactly for ``eps = 0``.
    """
    r = _group(rewards)
    # A group whose rewards are all equal has σ = 0 exactly; floating-point
    # rounding of the mean can leave a ~1e-17 residue in both the centred
    # rewards and r.std() (e.g. [0.1, 0.1, 0.1]) whose ratio is ±1, so zero
    # both explicitly for such groups.
    constant = np.ptp(r, axis=-1, keepdims=True) == 0
    centred = np.where(constant, 0.0, r - r.mean(axis=-1, keepdims=True))
    sigma = np.where(constant, 0.0, r.std(axis=-1, keepdims=True))
    denom = sigma + eps
    safe = np.where(denom > 0, denom, 1.0)
    return np.where(denom > 0, centred / safe, 0.0)


def drgrpo_advantages(rewards: ArrayLike) -> NDArray[np.float64]:
    """Dr. GRPO advantage: r_i − mean(r)."""
    return centered_rewards(rewards)


def dapo_advantages(rewards: ArrayLike) -> NDArray[np.float64]:
    """DAPO advantage: GRPO's on groups with σ > 0; groups with σ = 0 are dropped (all zeros)."""
    return grpo_advantages(rewards)


def dapo_keep_mask(rewards: ArrayLike) -> NDArray[np.bool_]:
    """True for groups DAPO keeps (σ > 0: not all rewards equal); shape (...)."""
    r = _group(rewards)
    return np.ptp(r, axis=-1) > 0


def rloo_advantages(rewards: ArrayLike) -> NDArray[np.float64]:
    """RLOO advantage: r_i − mean of the other G − 1 rewards = G/(G−1) · (r_i − mean); 0 when G = 1."""
    r = _group(rewards)
    G = r.shape[-1]
    if G == 1:
        return np.zeros_like(r)
    return (r - r.mean(axis=-1, keepdims=True)) * (G / (G - 1))


def sign_advantages(rewards: ArrayLike) -> NDArray[np.float64]:
    """Fixed-reference sign advantage A = 2r − 1 (not mean-zero: moves unanimous groups too)."""
    return 2.0 * _group(rewards) - 1.0


def policy_update(advantages: ArrayLike, scores: ArrayLike) -> NDArray[np.float64]:
    """Per-prompt update g = (1/G) Σ_i A_i s_i; ``scores`` has shape (..., G, d)."""
    a = np.asarray(advantages, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    return np.einsum("...g,...gd->...d", a, s) / a.shape[-1]
