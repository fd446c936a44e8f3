"""DAPO's generation loop as verl runs it: chunks per step, rollouts generated per rollout trained,
informative rollouts discarded by truncation, and the chance that a step raises.

docs/theory.md, "DAPO as verl runs it". Read from verl's DAPO trainer, ``RayDAPOTrainer.fit`` in
``dapo/dapo_ray_trainer.py`` of github.com/verl-project/verl-recipe at commit
48ea0a797fa29867ea0ad92aff7d284eec7d4be3 (verl-project/verl at 1dda039b9c6311889a9c9a26040677e1254814f9
holds it as the ``recipe`` submodule; the dataloader is ``RayPPOTrainer._create_dataloader`` in
``verl/trainer/ppo/ray_trainer.py`` and the sampler ``create_rl_sampler`` in ``verl/trainer/ppo/utils.py``):

- the train dataloader yields chunks of ``data.gen_batch_size`` = M prompts (``drop_last=True``; with
  ``data.shuffle`` a ``RandomSampler``: each epoch is a fresh permutation of the dataset, so within an
  epoch prompts are drawn without replacement); each prompt is generated ``rollout.n`` times;
- a group is kept when ``np.std`` of its ``algorithm.filter_groups.metric`` values is ``> 0`` (or it has a
  single rollout); for 0/1 rewards that is exactly "not all equal" (0 < k < n);
- kept groups accumulate over chunks (the counters persist across epoch boundaries) until at least
  ``data.train_batch_size`` = B prompts are kept; then ``batch[:B·n]`` keeps the first B groups and the
  surplus of the last chunk is dropped;
- the chunk counter is checked after each short chunk: with ``max_num_gen_batches`` = K > 0 the step
  raises ``ValueError("... Generated too many ...")`` when K chunks left fewer than B prompts kept;
  K ≤ 0 means no limit.

The model: each slot of a chunk is a prompt drawn from a dataset much larger than a step reads, with the
log's mix of difficulty, so it is kept with probability q = 1 − s̄ (s̄ = mean over prompts of the silent
chance at G = n) independently of the other slots: a chunk keeps X ~ Binomial(M, q) groups (given the
chunk's prompts it is Poisson-binomial, :func:`poisson_binomial_pmf`; averaging over the draw gives the
binomial). :func:`step_law` runs the exact dynamic programme over chunks for any chunk law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_prob

VERL_RECIPE_COMMIT = "48ea0a797fa29867ea0ad92aff7d284eec7d4be3"
"""verl-project/verl-recipe commit whose ``dapo/dapo_ray_trainer.py`` this module models."""
VERL_COMMIT = "1dda039b9c6311889a9c9a26040677e1254814f9"
"""verl-project/verl commit whose dataloader and sampler this module models."""
MAX_CHUNKS = 10_000
"""Without a chunk limit the programme stops after this many chunks; a step still unfinished with
probability above :data:`TAIL` there is reported as not converged (no number)."""
TAIL = 1e-12
"""Probability mass below which the chunk programme stops."""


def binomial_pmf(m: int, q: float) -> NDArray[np.float64]:
    """P(X = x), x = 0..m, for X ~ Binomial(m, q) (log space; exact end points at q ∈ {0, 1})."""
    out = np.zeros(m + 1)
    if q <= 0.0:
        out[0] = 1.0
        return out
    if q >= 1.0:
        out[m] = 1.0
        return out
    x = np.arange(m + 1, dtype=np.float64)
    lg = np.frompyfunc(math.lgamma, 1, 1)
    log_c = np.asarray(lg(m + 1.0) - lg(x + 1.0) - lg(m - x + 1.0), dtype=np.float64)
    out = np.exp(log_c + x * math.log(q) + (m - x) * math.log1p(-q))
    return out / out.sum()


def poisson_binomial_pmf(q: ArrayLike) -> NDArray[np.float64]:
    """P(X = x), x = 0..len(q), for X a sum of independent Bernoulli(q_i): the kept count of one chunk
    whose prompts are kept with probabilities ``q`` (by convolution, one prompt at a time)."""
    qa = as_prob(q, "q").ravel()
    out = np.zeros(qa.size + 1)
    out[0] = 1.0
    for i, qi in enumerate(qa):
        out[1:i + 2] = out[1:i + 2] * (1.0 - qi) + out[:i + 1] * qi
        out[0] *= 1.0 - qi
    return out


@dataclass(frozen=True)
class StepLaw:
    """What one DAPO step costs under a chunk law (exact over chunks, :func:`step_law`)."""

    train_batch: int
    """B: prompts a step trains on (``data.train_batch_size``)."""
    max_gen_batches: int
    """K (``algorithm.filter_groups.max_num_gen_batches``); ≤ 0: no limit."""
    p_raises: float
    """P(K chunks keep fewer than B prompts): the step raises "Generated too many" (0 without a limit)."""
    chunks: float | None
    """Expected chunks of a step that trains (E[J | J ≤ K]); None when no step trains or not converged."""
    surplus_groups: float | None
    """Expected kept groups dropped by ``batch[:B·n]`` in a step that trains (E[S_J − B | J ≤ K])."""
    chunks_pmf: tuple[float, ...]
    """P(J = j) for j = 1, 2, ... up to K (or until the remaining mass is below :data:`TAIL`)."""
    converged: bool
    """False when an unlimited step was still unfinished with probability above :data:`TAIL` after
    :data:`MAX_CHUNKS` chunks."""


def step_law(chunk_pmf: ArrayLike, train_batch: int, max_gen_batches: int = 0) -> StepLaw:
    """The exact law of one step: chunks keep i.i.d. counts with pmf ``chunk_pmf`` (index = kept groups),
    accumulated until at least ``train_batch`` are kept, at most ``max_gen_batches`` chunks (≤ 0: none).

    The state after j chunks is the sub-distribution a_j(y) = P(S_j = y, J > j), y < B; a_{j+1} is
    (a_j * f) restricted to y < B, and the mass reaching y ≥ B is the step ending at chunk j + 1 with
    surplus y − B (docs/theory.md, "DAPO as verl runs it").
    """
    f = np.asarray(chunk_pmf, dtype=np.float64)
    B, K = int(train_batch), int(max_gen_batches)
    if B < 1:
        raise ValueError(f"train_batch must be a whole number >= 1, got {train_batch!r}")
    if f.ndim != 1 or f.size < 2 or np.any(f < 0) or not math.isclose(float(f.sum()), 1.0, abs_tol=1e-9):
        raise ValueError("chunk_pmf must be a probability vector over 0..M kept groups (M >= 1)")
    if f[0] >= 1.0:  # a chunk never keeps a group: no step ever trains
        return StepLaw(train_batch=B, max_gen_batches=K, p_raises=1.0 if K > 0 else 0.0, chunks=None,
                       surplus_groups=None, chunks_pmf=(0.0,) * max(K, 0), converged=K > 0)
    limit = K if K > 0 else MAX_CHUNKS
    a = np.zeros(B)
    a[0] = 1.0
    pmf, mean_j, mean_u = [], 0.0, 0.0
    for j in range(1, limit + 1):
        full = np.convolve(a, f)
        done = full[B:]
        p_end = float(done.sum())
        pmf.append(p_end)
        mean_j += j * p_end
        mean_u += float(np.dot(np.arange(done.size), done))
        a = full[:B]
        if K <= 0 and float(a.sum()) < TAIL:
            break
    left = float(max(a.sum(), 0.0))
    trains = float(sum(pmf))  # not 1 − left: a step that almost never trains keeps its own small mass
    converged = K > 0 or left < TAIL
    usable = converged and trains > 0.0
    return StepLaw(
        train_batch=B, max_gen_batches=K, p_raises=left if K > 0 else 0.0,
        chunks=mean_j / trains if usable else None, surplus_groups=mean_u / trains if usable else None,
        chunks_pmf=tuple(pmf), converged=converged)


@dataclass(frozen=True)
class DapoCost:
    """DAPO at one difficulty with verl's settings: per step and per run (:func:`dapo_cost`)."""

    silent: float
    """s̄: the chance a drawn prompt's group of n is silent (mean over prompts)."""
    train_batch: int
    """B (``data.train_batch_size``)."""
    gen_batch: int
    """M (``data.gen_batch_size``)."""
    n: int
    """Rollouts per prompt (``actor_rollout_ref.rollout.n``)."""
    max_gen_batches: int
    """K (≤ 0: no limit)."""
    run_steps: int
    """S: steps of the run whose chance of raising is given."""
    gen_batches_per_step: float | None
    """Expected chunks a step that trains generates."""
    generated_per_trained: float | None
    """Rollouts generated per rollout trained: E[J]·M / B."""
    ideal_groups_per_kept: float | None
    """1 / (1 − s̄): the ideal refill (a group drawn one at a time until B are kept) for comparison."""
    discarded_informative_rollouts: float | None
    """Expected informative rollouts (kept groups × n) a step generates and truncation drops."""
    p_step_raises: float
    """P(a step raises "Generated too many"): K chunks keep fewer than B prompts."""
    p_run_raises: float
    """P(some step of S raises) = 1 − (1 − p)^S, every step at this difficulty."""
    law: StepLaw
    """The per-step law behind the figures."""


def dapo_cost(silent: float, *, train_batch: int, gen_batch: int, n: int, max_gen_batches: int = 0,
              run_steps: int = 1) -> DapoCost:
    """verl's DAPO loop at corpus silent chance ``silent`` (at G = n): each chunk keeps
    Binomial(M, 1 − silent) groups (n = 1: every group is kept, verl's single-rollout rule)."""
    s = float(as_prob(silent, "silent"))
    for name, v in (("train_batch", train_batch), ("gen_batch", gen_batch), ("n", n), ("run_steps", run_steps)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    q = 1.0 if int(n) == 1 else 1.0 - s
    law = step_law(binomial_pmf(int(gen_batch), q), int(train_batch), int(max_gen_batches))
    J, U = law.chunks, law.surplus_groups
    p = law.p_raises
    return DapoCost(
        silent=s, train_batch=int(train_batch), gen_batch=int(gen_batch), n=int(n),
        max_gen_batches=int(max_gen_batches), run_steps=int(run_steps), gen_batches_per_step=J,
        generated_per_trained=None if J is None else J * gen_batch / train_batch,
        ideal_groups_per_kept=1.0 / q if q > 0 else None,
        discarded_informative_rollouts=None if U is None else U * n,
        p_step_raises=p, p_run_raises=-math.expm1(run_steps * math.log1p(-p)) if p < 1.0 else 1.0, law=law)
