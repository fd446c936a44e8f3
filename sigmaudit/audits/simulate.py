"""``sigmaudit simulate``: the controlled training run of docs/theory.md on Bernoulli-logit prompts.

Each prompt is a one-parameter policy p = sigmoid(θ). Every step each prompt
draws a group of G answers, k ~ Binomial(G, p), and takes the scalar step
θ ← θ + lr · gain. No model, CPU only, vectorised over prompts.

Where the gains come from. For a Bernoulli-logit prompt the score of an
answer with reward r is d log π(r)/dθ = r − p, so the update of any advantage
A is g = (1/G) Σ_i A_i (r_i − p). The right answers share the score
s̄₊ = 1 − p and the wrong ones s̄₋ = −p, so Δs = s̄₊ − s̄₋ = 1 and docs/theory.md's
identity g = σ · Δs gives the gains of :func:`sigmaudit.core.sigma.update_gain`:

==========  ==================================  ==========================================
rule        advantage A_i                       gain (scalar update per unit lr)
==========  ==================================  ==========================================
grpo        (r_i − r̄) / σ                       σ(k, G) = sqrt(k (G − k)) / G
drgrpo      r_i − r̄                             σ²
dapo        GRPO's, on a filtered batch         σ of each kept group (verl's loop, below)
rloo        r_i − mean of the other G − 1       σ² · G / (G − 1)
sign        2 r_i − 1 (fixed reference)         see below
==========  ==================================  ==========================================

A toy model (docs/theory.md, "The controlled training run"): each prompt its own one-parameter policy, no
batch, no optimiser. The arms, at equal rollouts in that model:

- every arm but DAPO draws one group per prompt per step: ``prompts × G`` rollouts a step, and
  ``budget = prompts × G × steps`` over the run;
- ``dapo`` runs verl's loop (:mod:`sigmaudit.core.dapo`) with ``train_batch_size = gen_batch_size =
  prompts`` (verl's default gen = train): each chunk is an epoch, every prompt once in a fresh random
  order; groups with 0 < k < G are kept until ``prompts`` are, the surplus of the last chunk is truncated,
  and the step trains on the kept groups (a prompt kept in two chunks moves twice). It refills from the
  pool, it does not redraw a silent prompt. It runs until its generated rollouts reach the budget: equal
  rollouts generated, so fewer steps;
- ``drgrpo-matched`` (with drgrpo) is Dr. GRPO at the lr whose expected first step equals GRPO's:
  lr · Σ_i E[σ](p_i, G) / Σ_i E[σ²](p_i, G) over the initial pass rates.

The sign rule is not mean-zero, so its update depends on p, not only on k:

    g = (1/G) Σ_i (2 r_i − 1)(r_i − p)
      = (1/G) [k · (1)(1 − p) + (G − k) · (−1)(−p)]
      = (k/G)(1 − p) + (1 − k/G) p            = p + (k/G)(1 − 2p),

with E[g] = p(1 − p) + (1 − p) p = 2 p (1 − p) (docs/theory.md). On unanimous groups
it still moves: g = 1 − p when k = G and g = p when k = 0.

Randomness: one :class:`numpy.random.SeedSequence` from ``seed``; the initial
difficulties come from its child 0 and each rule from a child fixed by the
rule's name (so ``--rules grpo`` reproduces the GRPO arm of a three-rule run).

Default initial difficulty (no corpus): a Beta mixture with a hard tail,
:data:`DEFAULT_MIXTURE` — 40% Beta(0.5, 4) (hard), 40% Beta(2, 2) (middle),
20% Beta(4, 0.5) (easy) — clipped to [0.02, 0.98] like corpus pass rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..fmt import mean_or_none, none_if_nan

SimRule = Literal["grpo", "drgrpo", "dapo", "rloo", "sign"]
SIM_RULES: tuple[SimRule, ...] = ("grpo", "drgrpo", "dapo", "rloo", "sign")
"""Rules the simulation knows, in a fixed order (their position fixes each rule's random stream)."""
DEFAULT_RULES: tuple[SimRule, ...] = ("grpo", "drgrpo", "dapo")

DEFAULT_MIXTURE: tuple[tuple[float, float, float], ...] = ((0.4, 0.5, 4.0), (0.4, 2.0, 2.0), (0.2, 4.0, 0.5))
"""(weight, a, b) of the default Beta mixture of initial pass rates."""
P_CLIP = (0.02, 0.98)
"""Initial pass rates are clipped to this range (a prompt at p ∈ {0, 1} would never move)."""


# --------------------------------------------------------------------------- gains


def sign_gain(k: ArrayLike, G: int, p: ArrayLike) -> NDArray[np.float64]:
    """Sign-rule update (1/G) Σ (2 r_i − 1)(r_i − p) = p + (k/G)(1 − 2p) (module docstring)."""
    kf = np.asarray(k, dtype=np.float64)
    pa = np.asarray(p, dtype=np.float64)
    return pa + (kf / G) * (1.0 - 2.0 * pa)


def gain_table(G: int, rule: SimRule) -> NDArray[np.float64]:
    """Gain of a k-independent-of-p rule for k = 0..G (grpo, drgrpo, dapo, rloo) from the core."""
    from ..core.sigma import update_gain

    return np.asarray(update_gain(np.arange(G + 1), G, rule), dtype=np.float64)  # type: ignore[arg-type]


def expected_gain(p: ArrayLike, G: int, rule: SimRule) -> NDArray[np.float64]:
    """Expected per-prompt update E[gain] at difficulty p (the finite-G closed forms), ``p`` the whole pool.

    grpo E[σ]; drgrpo p(1−p)(1−1/G); dapo E[σ]·P / Σ_j (1 − s_j) (verl's loop with train = gen = the
    P prompts trains on P kept groups; by the symmetry of the random order each prompt's groups are used in
    proportion to its chance of being kept, so its expected gain is E[σ] times one pool-wide factor);
    rloo p(1−p) (G ≥ 2, else 0); sign 2p(1−p).
    """
    from ..core.fidelity import expected_sigma
    from ..core.silent import silent_rate

    pa = np.asarray(p, dtype=np.float64)
    v = pa * (1.0 - pa)
    if rule == "grpo":
        return np.asarray(expected_sigma(pa, G), dtype=np.float64)
    if rule == "drgrpo":
        return v * (1.0 - 1.0 / G)
    if rule == "dapo":
        kept = float(np.sum(1.0 - np.asarray(silent_rate(pa, G))))
        es = np.asarray(expected_sigma(pa, G), dtype=np.float64)
        return es * (pa.size / kept) if kept > 0 else np.zeros_like(es)
    if rule == "rloo":
        return v if G > 1 else np.zeros_like(v)
    if rule == "sign":
        return 2.0 * v
    raise ValueError(f"rule must be one of {', '.join(SIM_RULES)}, got {rule!r}")


def r_squared(measured: ArrayLike, forecast: ArrayLike) -> float:
    """1 − Σ(m − f)² / Σ(m − m̄)²: how much of the measured series' variation the forecast explains.

    NaN when the measured series is constant (nothing to explain).
    """
    m = np.asarray(measured, dtype=np.float64)
    f = np.asarray(forecast, dtype=np.float64)
    ss_tot = float(np.sum((m - m.mean()) ** 2))
    if ss_tot <= 0.0:
        return float("nan")
    return 1.0 - float(np.sum((m - f) ** 2)) / ss_tot


# --------------------------------------------------------------------------- initial difficulty


@dataclass(frozen=True)
class InitSpec:
    """Where the initial pass rates came from."""

    source: Literal["beta-mixture", "corpus"]
    """``beta-mixture`` (the default) or ``corpus`` (``--init-from``)."""
    mean_p: float
    """Mean initial pass rate over the simulated prompts."""
    corpus_prompts: int | None = None
    """Corpus prompts with 0 < k < n that were used (None for the mixture)."""
    corpus_excluded: int | None = None
    """Corpus prompts left out because k/n ∈ {0, 1} (None for the mixture)."""
    resampled: bool = False
    """The corpus pass rates were drawn with replacement to reach ``prompts``."""
    mixture: tuple[tuple[float, float, float], ...] | None = None
    """(weight, a, b) of each Beta the pass rates were drawn from (:data:`DEFAULT_MIXTURE`; None for a corpus)."""
    corpus_label: str | None = None
    """What names the corpus (the ``--init-from`` paths; None for the mixture)."""
    clip: tuple[float, float] = P_CLIP
    """The range the initial pass rates were clipped to."""
    description: str | None = None
    """Human description (the mixture, or the corpus and how it was used), written from the fields above by
    :func:`sigmaudit.views.simulate.worded` (the audit returns numbers); None until then."""


def _rule_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(index,)))


def default_initial_p(prompts: int, seed: int) -> NDArray[np.float64]:
    """Initial pass rates from :data:`DEFAULT_MIXTURE`, clipped to :data:`P_CLIP`."""
    rng = _rule_rng(seed, 0)
    weights = np.array([w for w, _, _ in DEFAULT_MIXTURE])
    comp = rng.choice(len(DEFAULT_MIXTURE), size=prompts, p=weights / weights.sum())
    a = np.array([a for _, a, _ in DEFAULT_MIXTURE])[comp]
    b = np.array([b for _, _, b in DEFAULT_MIXTURE])[comp]
    return np.clip(rng.beta(a, b), *P_CLIP)


def corpus_initial_p(
    n: ArrayLike, k: ArrayLike, prompts: int | None, seed: int
) -> tuple[NDArray[np.float64], int, int, bool]:
    """Corpus pass rates k/n without p ∈ {0, 1}, clipped to :data:`P_CLIP`.

    With ``prompts=None`` every usable corpus prompt is simulated once; otherwise
    ``prompts`` pass rates are drawn from them with replacement. Returns
    (p, usable prompts, excluded prompts, resampled).
    """
    na = np.asarray(n, dtype=np.float64)
    ka = np.asarray(k, dtype=np.float64)
    keep = (ka > 0) & (ka < na)
    usable = np.clip(ka[keep] / na[keep], *P_CLIP)
    if usable.size == 0:
        raise ValueError("no corpus prompt has a pass rate strictly between 0 and 1 to start from")
    excluded = int(na.size - usable.size)
    if prompts is None:
        return usable, int(usable.size), excluded, False
    rng = _rule_rng(seed, 0)
    return rng.choice(usable, size=prompts, replace=True), int(usable.size), excluded, True


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SimulateConfig:
    """The run's settings."""

    prompts: int
    """Number of simulated prompts M."""
    G: int
    """Group size."""
    steps: int
    """Training steps."""
    lr: float
    """Step size on θ."""
    seed: int
    """Seed of the one SeedSequence behind every random draw."""
    init: InitSpec
    """Initial difficulty."""

    @property
    def budget(self) -> int:
        """Rollouts every arm may generate: prompts × G × steps (what one group per prompt per step costs)."""
        return self.prompts * self.G * self.steps


@dataclass(frozen=True)
class RuleRun:
    """One rule's trajectory. Series entry i describes step i + 1.

    Silent and extreme-share values refer to the groups drawn at that step
    (p before its update); ``hard_quartile`` and ``mean_p`` are after its update.
    """

    rule: SimRule
    """The rule."""
    silent_measured: tuple[float, ...]
    """Share of prompts whose group at this step (DAPO: in the step's first chunk) was silent."""
    silent_forecast: tuple[float, ...]
    """Mean over prompts of silent(p, G) = p^G + (1 − p)^G at the step's p."""
    extreme_share: tuple[float | None, ...]
    """Realised share of the step's total update on prompts with p < 0.1 or p > 0.9 (None: no update)."""
    extreme_share_forecast: tuple[float | None, ...]
    """Same share from the expected gain (:func:`expected_gain`) at the step's p."""
    hard_quartile: tuple[float, ...]
    """Mean p of the initially hardest quarter of prompts, after the step."""
    mean_p: tuple[float, ...]
    """Mean p over all prompts, after the step."""
    groups_drawn: int
    """Groups generated over the run (DAPO: every chunk's)."""
    groups_used: int
    """Groups that entered an update batch (DAPO: the kept ones not truncated; others: all)."""
    groups_scheduled: int
    """One group per prompt per step run: prompts × steps run."""
    samples: int
    """Rollouts generated: ``groups_drawn`` × G."""
    r2_silent: float | None
    """R² of ``silent_forecast`` against ``silent_measured`` over steps (None if undefined)."""
    label: str = ""
    """The arm's name (the rule, or ``drgrpo-matched``); "" means the rule."""
    lr: float = 0.0
    """The step size this arm ran at."""
    comparison: str = "same steps, same lr"
    """What this arm is compared at (the view prints it per row)."""
    k_by_step: NDArray[np.int64] | None = field(default=None, repr=False, compare=False)
    """Right answers of each prompt's (last drawn) group, shape (steps, prompts); kept only when
    the run was asked to record its log (``record=True``)."""
    p_by_step: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)
    """True pass rate each group was drawn at, shape (steps, prompts) (with ``k_by_step``)."""

    @property
    def name(self) -> str:
        """The arm's label (the rule unless set)."""
        return self.label or self.rule

    @property
    def steps_run(self) -> int:
        """Steps this arm trained (DAPO: the steps its budget paid for)."""
        return len(self.silent_measured)

    @property
    def oversampling(self) -> float:
        """groups_drawn / groups_scheduled: groups generated per group a step trains on
        (1 for every rule but DAPO)."""
        return self.groups_drawn / self.groups_scheduled if self.groups_scheduled else float("nan")

    @property
    def draws_per_used_group(self) -> float | None:
        """groups_drawn / groups_used: groups sampled per group that produced an update."""
        return self.groups_drawn / self.groups_used if self.groups_used else None


@dataclass(frozen=True)
class SimulateResult:
    """The controlled training run, one :class:`RuleRun` per rule on the same initial prompts."""

    config: SimulateConfig
    """Settings."""
    runs: tuple[RuleRun, ...]
    """One per rule, in the order asked for."""
    hard_quartile_initial: float
    """Mean initial p of the hardest quarter (the same for every rule)."""
    hard_quartile_size: int
    """Prompts in the hardest quarter: the M // 4 (at least 1) lowest initial p."""

    def run(self, rule: str) -> RuleRun | None:
        """The arm named ``rule`` (a rule, or ``drgrpo-matched``), if simulated."""
        return next((r for r in self.runs if r.name == rule), None)

    @property
    def r2_silent(self) -> float | None:
        """R² of the GRPO arm (None without a GRPO arm)."""
        run = self.run("grpo")
        return run.r2_silent if run else None

    @property
    def dapo_oversampling(self) -> float | None:
        """DAPO's rollouts generated per rollout trained (None without a DAPO arm or a step it ran)."""
        run = self.run("dapo")
        return none_if_nan(run.oversampling) if run else None

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (see the module docstring of :mod:`sigmaudit.commands.simulate`)."""
        c = self.config
        return {
            "rules": list(dict.fromkeys(r.rule for r in self.runs)),
            "config": {
                "prompts": c.prompts, "G": c.G, "steps": c.steps, "lr": c.lr, "seed": c.seed,
                "budget_rollouts": c.budget,
                "init": {
                    "source": c.init.source, "description": c.init.description, "mean_p": c.init.mean_p,
                    "corpus_prompts": c.init.corpus_prompts, "corpus_excluded": c.init.corpus_excluded,
                    "resampled": c.init.resampled,
                },
            },
            "r2_silent": self.r2_silent,
            "hard_quartile_initial": self.hard_quartile_initial,
            "hard_quartile_final": {r.name: _last(r.hard_quartile, self.hard_quartile_initial) for r in self.runs},
            "dapo_oversampling": self.dapo_oversampling,
            "samples": {r.name: r.samples for r in self.runs},
            "summary": {
                r.name: {
                    "rule": r.rule, "comparison": r.comparison, "lr": r.lr, "steps": r.steps_run,
                    "rollouts_generated": r.samples, "rollouts_trained": r.groups_used * c.G,
                    "r2_silent": r.r2_silent,
                    "silent_measured_mean": mean_or_none(r.silent_measured),
                    "silent_forecast_mean": mean_or_none(r.silent_forecast),
                    "extreme_share_mean": mean_or_none(r.extreme_share),
                    "extreme_share_forecast_mean": mean_or_none(r.extreme_share_forecast),
                    "hard_quartile_final": _last(r.hard_quartile, self.hard_quartile_initial),
                    "mean_p_final": _last(r.mean_p, c.init.mean_p),
                    "groups_drawn": r.groups_drawn,
                    "groups_used": r.groups_used,
                    "samples": r.samples,
                    "oversampling": none_if_nan(r.oversampling),
                    "draws_per_used_group": r.draws_per_used_group,
                }
                for r in self.runs
            },
            "series": {
                r.name: {
                    "silent_measured": list(r.silent_measured),
                    "silent_forecast": list(r.silent_forecast),
                    "hard_quartile": list(r.hard_quartile),
                    "mean_p": list(r.mean_p),
                    "extreme_share": list(r.extreme_share),
                    "extreme_share_forecast": list(r.extreme_share_forecast),
                }
                for r in self.runs
            },
        }


def _last(series: tuple[float, ...], before: float) -> float:
    """The series' last value, or ``before`` when the arm ran no step."""
    return series[-1] if series else before


@dataclass(frozen=True)
class SeriesReport:
    """A :class:`SimulateResult` whose view is its per-step series (what ``--format csv`` writes)."""

    result: SimulateResult
    """The run."""

    def to_dict(self) -> dict[str, Any]:
        """Same contract as the result."""
        return self.result.to_dict()


# --------------------------------------------------------------------------- the run


def _expit(theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """1 / (1 + e^−θ), without overflow for θ far below 0 (numpy, not scipy: no 0.3 s import)."""
    e = np.exp(-np.abs(theta))
    return np.where(theta >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def dapo_step(rng: np.random.Generator, p: NDArray[np.float64], G: int, max_chunks: int
              ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int] | None:
    """One step of verl's DAPO loop with train = gen = the pool of P prompts (module docstring): chunks
    are epochs (every prompt once, in a fresh random order); groups with 0 < k < G are kept until P are,
    the surplus of the last chunk truncated. Returns (k of each prompt in the first chunk, the kept
    groups' prompts, their k, chunks generated), or None when ``max_chunks`` chunks kept fewer than P."""
    P = p.size
    first = np.zeros(P, dtype=np.int64)
    idx: list[NDArray[np.int64]] = []
    ks: list[NDArray[np.int64]] = []
    kept = 0
    for chunk in range(1, max_chunks + 1):
        order = rng.permutation(P)
        k = rng.binomial(G, p[order])
        if chunk == 1:
            first[order] = k
        keep = (k > 0) & (k < G)
        take = min(int(keep.sum()), P - kept)
        idx.append(order[keep][:take])
        ks.append(k[keep][:take])
        kept += take
        if kept >= P:
            return first, np.concatenate(idx), np.concatenate(ks), chunk
    return None


@dataclass
class _Trace:
    """One arm's per-step series while it runs."""

    measured: list[float] = field(default_factory=list)
    forecast: list[float] = field(default_factory=list)
    ext: list[float | None] = field(default_factory=list)
    ext_f: list[float | None] = field(default_factory=list)
    hq: list[float] = field(default_factory=list)
    mp: list[float] = field(default_factory=list)
    drawn: int = 0
    used: int = 0


def _draw(rule: SimRule, rng: np.random.Generator, p: NDArray[np.float64], cfg: SimulateConfig,
          trace: _Trace) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
    """One step's groups and gains (None: DAPO's budget ran out within the step)."""
    G, P = cfg.G, p.size
    table = None if rule == "sign" else gain_table(G, rule)
    if rule == "dapo":
        left = (cfg.budget // G - trace.drawn) // P  # whole chunks the budget still pays for
        out = dapo_step(rng, p, G, left) if left > 0 else None
        if out is None:
            return None
        first, idx, kk, chunks = out
        gain = np.zeros(P)
        np.add.at(gain, idx, table[kk])  # type: ignore[index]
        trace.drawn += chunks * P
        trace.used += idx.size
        return first, gain
    k = rng.binomial(G, p)
    trace.drawn += P
    trace.used += P
    return k, sign_gain(k, G, p) if table is None else table[k]


def _run_rule(
    rule: SimRule, p0: NDArray[np.float64], hard: NDArray[np.int64], cfg: SimulateConfig, record: bool = False,
    *, lr: float | None = None, label: str = "", comparison: str = "same steps, same lr",
) -> RuleRun:
    from ..core.silent import silent_rate
    from ..core.weighting import EXTREME, band_share

    G = cfg.G
    step_lr = cfg.lr if lr is None else lr
    rng = _rule_rng(cfg.seed, 1 + SIM_RULES.index(rule))
    theta = np.log(p0 / (1.0 - p0))  # logit
    tr = _Trace()
    ks = np.zeros((cfg.steps, p0.size), dtype=np.int64) if record else None
    ps = np.zeros((cfg.steps, p0.size)) if record else None
    for step in range(cfg.steps):
        p = _expit(theta)
        drawn = _draw(rule, rng, p, cfg, tr)
        if drawn is None:
            break
        k, gain = drawn
        tr.measured.append(float(((k == 0) | (k == G)).mean()))
        tr.forecast.append(float(np.mean(silent_rate(p, G))))
        if ks is not None and ps is not None:
            ks[step], ps[step] = k, p
        total = float(gain.sum())
        tr.ext.append(float(gain[EXTREME.contains(p)].sum() / total) if total > 0 else None)
        tr.ext_f.append(none_if_nan(band_share(p, expected_gain(p, G, rule), EXTREME)))
        theta = theta + step_lr * gain
        p_after = _expit(theta)
        tr.hq.append(float(p_after[hard].mean()))
        tr.mp.append(float(p_after.mean()))
    n_run = len(tr.measured)
    return RuleRun(
        rule=rule, silent_measured=tuple(tr.measured), silent_forecast=tuple(tr.forecast),
        extreme_share=tuple(tr.ext), extreme_share_forecast=tuple(tr.ext_f), hard_quartile=tuple(tr.hq),
        mean_p=tuple(tr.mp), groups_drawn=tr.drawn, groups_used=tr.used, groups_scheduled=p0.size * n_run,
        samples=tr.drawn * G, r2_silent=none_if_nan(r_squared(tr.measured, tr.forecast)) if n_run else None,
        k_by_step=None if ks is None else ks[:n_run], p_by_step=None if ps is None else ps[:n_run],
        label=label, lr=step_lr, comparison=comparison)


def matched_lr(p0: ArrayLike, G: int, lr: float) -> float:
    """Dr. GRPO's lr whose expected first step equals GRPO's at ``lr``: lr · Σ_i E[σ](p_i, G) / Σ_i E[σ²](p_i, G)
    (docs/theory.md, "The controlled training run")."""
    grpo = float(np.sum(expected_gain(p0, G, "grpo")))
    drgrpo = float(np.sum(expected_gain(p0, G, "drgrpo")))
    return lr * grpo / drgrpo if drgrpo > 0 else lr


COMPARISONS = {
    "dapo": "equal rollouts (fewer steps)",
    "drgrpo-matched": "lr matched to GRPO's step",
}
"""What each arm that is not "same steps, same lr" is compared at (every arm generates at most the budget)."""


def parse_rules(text: str | Sequence[str]) -> tuple[SimRule, ...]:
    """Rules from ``"grpo,drgrpo"`` (or a list), de-duplicated in order; ValueError names an unknown one."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    names = [p.strip().lower() for p in parts if p.strip()]
    if not names:
        raise ValueError(f"give at least one rule of {', '.join(SIM_RULES)}")
    for name in names:
        if name not in SIM_RULES:
            raise ValueError(f"unknown rule {name!r}; choose from {', '.join(SIM_RULES)}")
    return tuple(dict.fromkeys(names))  # type: ignore[arg-type]


def simulate(
    *,
    prompts: int | None = None,
    G: int = 8,
    steps: int = 150,
    lr: float = 0.5,
    seed: int = 0,
    rules: Sequence[str] | str = DEFAULT_RULES,
    init_counts: tuple[ArrayLike, ArrayLike] | None = None,
    init_label: str = "corpus",
    record: bool = False,
) -> SimulateResult:
    """Run the controlled training run for each rule from the same initial prompts.

    ``prompts`` defaults to 6000 with the Beta mixture, and to every usable
    corpus prompt with ``init_counts=(n, k)`` (per-prompt counts; p = k/n with
    p ∈ {0, 1} excluded, clipped to [0.02, 0.98]); given with a corpus, that
    many pass rates are resampled from it. ``init_label`` names the corpus
    (``config.init.corpus_label``). ``record=True`` keeps each rule's groups and true pass rates per step
    (for :func:`rollout_log`).

    Examples
    --------
    >>> res = simulate(prompts=200, steps=5, rules="grpo")
    >>> len(res.run("grpo").silent_measured)
    5
    """
    rule_list = parse_rules(rules)
    for name, value, low in (("G", G, 1), ("steps", steps, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    if prompts is not None and (int(prompts) != prompts or prompts < 1):
        raise ValueError(f"prompts must be a whole number >= 1, got {prompts!r}")
    if not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    if init_counts is None:
        M = 6000 if prompts is None else int(prompts)
        p0 = default_initial_p(M, seed)
        init = InitSpec("beta-mixture", float(p0.mean()), mixture=DEFAULT_MIXTURE)
    else:
        p0, usable, excluded, resampled = corpus_initial_p(*init_counts, prompts, seed)
        init = InitSpec("corpus", float(p0.mean()), usable, excluded, resampled, corpus_label=init_label)
    cfg = SimulateConfig(int(p0.size), int(G), int(steps), float(lr), int(seed), init)
    hard = np.argsort(p0, kind="stable")[: max(1, p0.size // 4)]
    runs = [_run_rule(rule, p0, hard, cfg, record, comparison=COMPARISONS.get(rule, "same steps, same lr"))
            for rule in rule_list]
    if "drgrpo" in rule_list:  # Dr. GRPO again, at the step size matched to GRPO's expected update
        runs.append(_run_rule("drgrpo", p0, hard, cfg, lr=matched_lr(p0, cfg.G, cfg.lr), label="drgrpo-matched",
                              comparison=COMPARISONS["drgrpo-matched"]))
    runs = tuple(runs)
    return SimulateResult(cfg, runs, float(p0[hard].mean()), int(hard.size))


def rollout_log(result: SimulateResult, rule: str | None = None) -> Any:
    """One rule's run (default: the first simulated) as a rollout log in the long layout: one row per sampled answer.

    Columns ``step`` (1..steps), ``prompt`` (``p000000``...), ``reward`` (1 right, 0 wrong; the
    group's k right answers first) and ``true_p`` (the pass rate the group was drawn at: the
    truth a forecast is checked against; loaders ignore the column). DAPO logs the group it
    kept (its last draw), like trainers that dump after filtering. Needs a run simulated with
    ``record=True``.
    """
    import polars as pl

    run = result.runs[0] if rule is None else result.run(rule)
    if run is None:
        raise ValueError(f"rule {rule!r} was not simulated")
    if run.k_by_step is None or run.p_by_step is None:
        raise ValueError("this run was simulated without record=True: no groups to write")
    ks, ps = run.k_by_step, run.p_by_step
    steps, prompts = ks.shape
    G = result.config.G
    width = len(str(prompts - 1))
    names = pl.Series("prompt", [f"p{i:0{max(width, 6)}d}" for i in range(prompts)])
    sample = np.arange(G)
    reward = (sample[None, None, :] < ks[:, :, None]).astype(np.int8).ravel()
    return pl.DataFrame({
        "step": np.repeat(np.arange(1, steps + 1, dtype=np.int64), prompts * G),
        "prompt": names.gather(np.tile(np.repeat(np.arange(prompts), G), steps)),
        "reward": reward,
        "true_p": np.repeat(ps.ravel(), G),
    })
