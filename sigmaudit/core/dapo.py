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
binomial). :func:`dapo_cost` evaluates the step's law in closed form from the marginals P(S_j < B), so no
figure costs work that grows with B, M or K; with a :class:`FiniteDataset` it applies the finite-population
correction of drawing without replacement within an epoch (docs/theory.md, "A finite dataset").
:func:`step_law` runs the exact dynamic programme over chunks for any chunk law (a fixed chunk's
Poisson-binomial in ``simulate``). The dataloader's assertion that refuses a generation batch larger than the
dataset ("Train dataloader is empty!") is read at volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7.
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
class FiniteDataset:
    """The dataset verl's loader draws from, when a step reads a large share of it (docs/theory.md, "DAPO as
    verl runs it", "A finite dataset")."""

    size: int
    """D: prompts in the dataset (``--dataset-size``)."""
    spread: float
    """ρ = Var_i(q_i) / (q̄ (1 − q̄)) ∈ [0, 1]: how much of a slot's keep variance is which prompt was drawn
    (1: every prompt is always or never kept, the hypergeometric case; 0: all prompts alike, no correction)."""

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or int(self.size) != self.size or self.size < 1:
            raise ValueError(f"size must be a whole number >= 1, got {self.size!r}")
        if not 0.0 <= self.spread <= 1.0:
            raise ValueError(f"spread must lie in [0, 1], got {self.spread!r}")


WINDOW_POINTS = 1 << 12
"""A step law's sums over chunk counts evaluate at most this many chunk counts: the counts where
P(J > j) is within :data:`TAIL` of 0 or 1 are summed in closed form, and a transition wider than this is
summed on an evenly spaced subset (a Riemann sum of a function that moves on the transition's scale), so
every size answers at once (issue 44: ``--train-batch 10^9``)."""


@dataclass(frozen=True)
class _Chunks:
    """The kept count S_j of the first j chunks of a step that starts at an epoch's start, as the binomial
    matching its mean and variance (exact without a dataset: Binomial(jM, q))."""

    M: int
    q: float
    B: int
    dataset: FiniteDataset | None

    def moments(self, j: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """E[S_j] and Var(S_j): epochs' pieces are independent, m slots of one epoch without replacement
        have variance m q̄(1 − q̄)(1 − ρ (m − 1)/(D − 1))."""
        m = j * self.M
        mu = m * self.q
        if self.dataset is None:
            return mu, mu * (1.0 - self.q)
        D, f = self.dataset.size, self.dataset.spread / max(self.dataset.size - 1, 1)
        E = D // self.M
        full = np.floor(j / E)
        mE, mr = float(E * self.M), (j - full * E) * self.M
        var = full * mE * (1.0 - f * (mE - 1.0)) + mr * (1.0 - f * np.maximum(mr - 1.0, 0.0))
        return mu, np.maximum(var, 0.0) * self.q * (1.0 - self.q)

    def beta(self, j: NDArray[np.float64], var_before: NDArray[np.float64]) -> NDArray[np.float64]:
        """The slope of E[X_{j+1} | S_j] on S_j: −Cov(X_{j+1}, S_j) / Var(S_j) (0 without a dataset: chunks
        of a large dataset are independent)."""
        if self.dataset is None:
            return np.zeros_like(j)
        D, rho = self.dataset.size, self.dataset.spread
        same = np.mod(j, D // self.M) * self.M  # slots of S_j in chunk j + 1's epoch
        cov = self.M * same * rho * self.q * (1.0 - self.q) / max(D - 1, 1)
        return np.divide(cov, var_before, out=np.zeros_like(j), where=var_before > 0)

    def at(self, j: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        """Per chunk count j: P(S_j < B), P(S_j ≥ B), E[S_j 1{S_j ≥ B}], E[S_j], and the expected kept count
        of chunk j + 1 on {S_j < B} and on {S_j ≥ B}."""
        from scipy.special import betainc

        mu, var = self.moments(j)
        x = float(self.B - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            pp = np.where(mu > 0, 1.0 - var / np.where(mu > 0, mu, 1.0), 1.0)  # the matched binomial's p', n'
            nn = np.where(pp > 0, mu / np.where(pp > 0, pp, 1.0), 0.0)
            a = nn - x
            inside = a > 0
            below = np.where(inside, betainc(np.where(inside, a, 1.0), x + 1.0, 1.0 - pp), 1.0)
            above = np.where(inside, betainc(x + 1.0, np.where(inside, a, 1.0), pp), 0.0)
            # E[S 1{S ≥ B}] = μ P(Binomial(n' − 1, p') ≥ B − 1) (x·C(n, x) = n·C(n − 1, x − 1))
            upper = mu if x == 0 else np.where(inside, mu * betainc(x, np.where(inside, a, 1.0), pp), 0.0)
        b = self.beta(j, var)
        mq = self.M * self.q
        return {"below": below, "above": above, "mean": mu, "upper": upper,
                "next_below": mq * below + b * (upper - mu * above),  # E[X 1{S<B}] = Mq P − β E[(S−μ)1{S<B}]
                "next_above": mq * above - b * (upper - mu * above)}

    def below(self, j: float) -> float:
        return float(self.at(np.array([float(j)]))["below"][0])

    def edges(self, N: int) -> tuple[int, int]:
        """(lo, end) over chunk counts 0..N − 1: P(S_j < B) > 1 − TAIL for j ≤ lo and < TAIL for j ≥ end
        (bisection: P(S_j < B) falls with j)."""
        if self.below(N - 1) > 1.0 - TAIL:
            return N - 1, N
        lo, hi = 0, N - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.below(mid) > 1.0 - TAIL else (lo, mid)
        if self.below(N - 1) >= TAIL:
            return lo, N
        a, end = lo, N - 1
        while end - a > 1:
            mid = (a + end) // 2
            a, end = (mid, end) if self.below(mid) >= TAIL else (a, mid)
        return lo, end


def _window_sum(ch: _Chunks, lo: int, hi: int, keys: tuple[str, ...]) -> dict[str, float]:
    """Σ_{j = lo}^{hi − 1} of ``ch.at(j)[key]``: every j when there are at most :data:`WINDOW_POINTS`, else a
    midpoint sum on evenly spaced j (an odd stride coprime with the epoch's chunks, so no epoch position is
    skipped)."""
    if hi <= lo:
        return dict.fromkeys(keys, 0.0)
    count = hi - lo
    stride = max(1, math.ceil(count / WINDOW_POINTS)) | 1  # odd: each point is the middle of its block
    if ch.dataset is not None:
        epoch = ch.dataset.size // ch.M
        while math.gcd(stride, epoch) != 1:
            stride += 2
    full, rest = divmod(count, stride)  # blocks of ``stride`` counts, each weighed at its middle, then the rest
    j = np.arange(full, dtype=np.float64) * stride + (lo + stride // 2)
    w = np.full(full, float(stride))
    if rest:
        j, w = np.append(j, lo + full * stride + rest // 2), np.append(w, float(rest))
    vals = ch.at(j)
    return {k: float(w @ vals[k]) for k in keys}


def _closed_step(ch: _Chunks, K: int) -> tuple[float, float | None, float | None]:
    """(P(a step raises), E[J | J ≤ K], E[S_J − B | J ≤ K]) from the chunk counts' marginals: the sums over
    chunk counts j = 0..N − 1 are closed form where S_j < B or S_j ≥ B almost surely (docs/theory.md)."""
    if K > 0:
        N = K
    else:  # past N, P(S_j < B) < TAIL
        N = max(2, math.ceil(2.0 * ch.B / (ch.M * ch.q)))
        while ch.below(N) >= TAIL and N < 1 << 62:
            N *= 2
    lo, end = ch.edges(N)
    mid = _window_sum(ch, lo + 1, end, ("below", "above", "next_below", "next_above"))
    mq = ch.M * ch.q
    if K <= 0:
        chunks = (lo + 1) + mid["below"]  # E[J] = Σ_{j ≥ 0} P(S_j < B)
        kept = mq * (lo + 1) + mid["next_below"]  # E[S_J] = Σ_{j ≥ 0} E[X_{j+1} 1{S_j < B}]
        return 0.0, chunks, max(kept - ch.B, 0.0)
    last = ch.at(np.array([float(K)]))
    p_raise, trains = float(last["below"][0]), float(last["above"][0])
    if not trains > 0.0:
        return p_raise, None, None
    # E[J 1{J ≤ K}] = Σ_{j < K} (P(S_K ≥ B) − P(S_j ≥ B));
    # E[(S_J − B) 1{J ≤ K}] = E[S_K 1{S_K ≥ B}] − Σ_{j < K} E[X_{j+1} 1{S_j ≥ B}] − B P(S_K ≥ B)
    n_above = N - end
    j_sum = trains * K - mid["above"] - n_above
    surplus = float(last["upper"][0]) - (mid["next_above"] + mq * n_above) - ch.B * trains
    return p_raise, max(j_sum, 0.0) / trains, max(surplus, 0.0) / trains


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
    trains: bool
    """False when no step ever trains (no drawn group is ever kept)."""
    dataset: FiniteDataset | None = None
    """The finite dataset the figures correct for (None: a dataset much larger than a step reads)."""


def dapo_cost(silent: float, *, train_batch: int, gen_batch: int, n: int, max_gen_batches: int = 0,
              run_steps: int = 1, dataset: FiniteDataset | None = None) -> DapoCost:
    """verl's DAPO loop at corpus silent chance ``silent`` (at G = n): each slot is kept with probability
    q = 1 − silent (n = 1: every group is kept, verl's single-rollout rule); without ``dataset`` the chunks
    are independent Binomial(M, q), with it a step starting at an epoch's start draws each epoch's slots
    without replacement (the finite-population correction). Closed form at every size (docs/theory.md)."""
    s = float(as_prob(silent, "silent"))
    for name, v in (("train_batch", train_batch), ("gen_batch", gen_batch), ("n", n), ("run_steps", run_steps)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    B, M, K = int(train_batch), int(gen_batch), int(max_gen_batches)
    if dataset is not None and M > dataset.size:
        raise ValueError(f"gen_batch {M} is larger than the dataset ({dataset.size}): verl's loader yields no batch")
    q = 1.0 if int(n) == 1 else 1.0 - s
    if q <= 0.0:
        p, J, U = (1.0 if K > 0 else 0.0), None, None
    else:
        p, J, U = _closed_step(_Chunks(M, q, B, dataset), K)
    return DapoCost(
        silent=s, train_batch=B, gen_batch=M, n=int(n), max_gen_batches=K, run_steps=int(run_steps),
        gen_batches_per_step=J, generated_per_trained=None if J is None else J * M / B,
        ideal_groups_per_kept=1.0 / q if q > 0 else None,
        discarded_informative_rollouts=None if U is None else U * n,
        p_step_raises=p, p_run_raises=-math.expm1(run_steps * math.log1p(-p)) if p < 1.0 else 1.0,
        trains=J is not None, dataset=dataset)


def gen_batches_silent_bounds(gen_batches: ArrayLike, *, train_batch: int, gen_batch: int
                              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lowest, highest) silent share among the groups a DAPO step generated, from the step's logged
    ``train/num_gen_batches`` J (docs/theory.md, "What num_gen_batches bounds").

    A step ends at the first chunk J whose kept total S_J reaches B = ``train_batch``, each chunk holding M =
    ``gen_batch`` groups: S_J ≥ B, and S_{J−1} ≤ B − 1 (S_0 = 0), so S_J ≤ min(B − 1 + M, J·M). The silent share
    among the J·M generated groups is 1 − S_J / (J·M), hence

        max(0, 1 − (B − 1 + M) / (J·M)) ≤ silent ≤ 1 − B / (J·M).

    It holds when ``algorithm.filter_groups.enable`` is on and ``rollout.n`` ≥ 2 (a one-rollout group is kept,
    never silent). ValueError for a J that is not a whole number ≥ 1, or one whose J chunks cannot hold B kept
    groups (J·M < B: the batch sizes given are not the run's)."""
    for name, v in (("train_batch", train_batch), ("gen_batch", gen_batch)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    J = np.asarray(gen_batches, dtype=np.float64)
    if J.size and (not np.all(np.isfinite(J)) or np.any(J < 1) or np.any(J != np.floor(J))):
        raise ValueError("num_gen_batches must hold whole numbers >= 1")
    generated = J * gen_batch
    if J.size and np.any(generated < train_batch):
        raise ValueError(f"{int(J[generated < train_batch][0])} generation batches of {gen_batch} prompts cannot "
                         f"keep the {train_batch} prompts of a training batch")
    high = 1.0 - train_batch / generated
    low = np.maximum(0.0, 1.0 - np.minimum(train_batch - 1 + gen_batch, generated) / generated)
    return low, high
