"""``sigmaudit scan``: audit rollout logs for silent groups, wasted compute, gradient mass and group size.

:func:`audit` turns a :class:`~sigmaudit.loaders.LoadedCounts` into a
:class:`ScanReport`. All the math runs on the corpus's distinct (n, k) pairs
with their multiplicities (:class:`~sigmaudit.corpus.Corpus`), never per row
or per prompt; corpus rates are means over prompts (docs/theory.md, "Silent groups").

Default estimates follow one rule everywhere: the unbiased (hypergeometric)
estimate where it exists for every prompt (n >= G), else the model-based one
(posterior mean under a prior over p fitted to the whole corpus, :attr:`Corpus.prior`). Each row says which.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..loaders.options import Filtered, Window
from .by import ByGroup, ByResult
from .drift import Drift, drift_json
from .observed import FILTERED_MIN_EXPECTED as FILTERED_MIN_EXPECTED
from .observed import ObservedSilent, filtered_warning, most_common, observed_silent
from .observed import filtered_of as filtered_of
from .observed import statistical_filter as statistical_filter
from .observed import zero_spread_mask as zero_spread_mask

if TYPE_CHECKING:
    import polars as pl

    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts

DEFAULT_G: tuple[int, ...] = (4, 8, 16, 32, 64)
"""Group sizes reported when ``-G`` is not given."""
FALLBACK_G_MAIN = 8
"""Group size for the wasted-compute, finite-G and group-size figures when the log shows no groups."""
HIST_BINS = 10
"""Bins of the pass-rate histogram and of the gradient-mass shares: [i/10, (i+1)/10), the last closed."""
QUANTILES: tuple[float, ...] = (0.25, 0.5, 0.75)
"""Quantiles of p̂ (over in-between prompts) at which the group-size law is evaluated."""


# --------------------------------------------------------------------------- result objects


@dataclass(frozen=True)
class SamplesPerPrompt:
    """Logged samples (rollouts with a reward) per prompt."""

    min: int
    """Fewest samples of any prompt."""
    median: float
    """Median over prompts (the mean of the two middle values for an even count)."""
    max: int
    """Most samples of any prompt."""


@dataclass(frozen=True)
class PassRate:
    """The per-prompt pass rate p̂ = k / n over the corpus."""

    mean: float
    """Mean of p̂ over prompts (each prompt counts once, whatever its n)."""
    median: float
    """Median of p̂ over prompts."""
    never_solved: float
    """Share of prompts with k = 0 *in the log* (p̂ = 0; from few samples this overstates p = 0)."""
    always_solved: float
    """Share of prompts with k = n *in the log* (p̂ = 1)."""
    histogram: tuple[int, ...]
    """Prompt counts in 10 bins of p̂: bin i holds i/10 <= p̂ < (i+1)/10, the last bin also p̂ = 1."""
    never_solved_posterior: float | None = None
    """Posterior share of prompts with p = 0 under the corpus prior: the prior's choice inside
    ``never_solved_range``, not identified by the counts (None with ``--estimator plugin`` and on a thin
    corpus, where the prior itself is not identified)."""
    always_solved_posterior: float | None = None
    """Posterior share of prompts with p = 1 under the corpus prior (as ``never_solved_posterior``)."""
    never_solved_range: tuple[float, float] = (0.0, 1.0)
    """The shares of prompts with p = 0 that the counts allow: from 0 (every k = 0 prompt has a tiny p > 0,
    which no finite number of samples rules out) to the share with k = 0 (a prompt with p = 0 never has k > 0)."""
    always_solved_range: tuple[float, float] = (0.0, 1.0)
    """The shares of prompts with p = 1 that the counts allow: from 0 to the share with k = n."""
    never_solved_posterior_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``never_solved_posterior`` (scan ``--bootstrap N``; None without replicates): views
    print the posterior point only with it."""
    always_solved_posterior_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``always_solved_posterior`` (as ``never_solved_posterior_ci``)."""


@dataclass(frozen=True)
class SilentRow:
    """Corpus silent-group rate (mean over prompts) for a future group of G, by estimator."""

    G: int
    """Group size."""
    plugin: float
    """Plug-in estimate: mean of p̂^G + (1 − p̂)^G (biased up when n is small)."""
    unbiased: float | None
    """Hypergeometric estimate; None unless every prompt has n >= G."""
    bayes: float
    """Model-based estimate: posterior mean under the prior over p fitted to the corpus (any G)."""
    estimate: float
    """The default estimate: ``unbiased`` where it exists, else ``bayes`` (see ``estimator``)."""
    estimator: str
    """Which estimator gave ``estimate``: ``unbiased`` or ``bayes``."""
    all_wrong: float
    """Plug-in all-wrong branch: mean of (1 − p̂)^G."""
    all_correct: float
    """Plug-in all-correct branch: mean of p̂^G."""
    estimate_all_wrong: float
    """All-wrong branch of ``estimate`` (same estimator)."""
    estimate_all_correct: float
    """All-correct branch of ``estimate`` (same estimator)."""
    estimate_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``estimate`` (scan ``--bootstrap N``; the interval ``check`` gives the silent rate at
    this G with the same replicates); None without replicates."""
    bayes_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``bayes`` (as ``estimate_ci``); None without replicates or on a thin corpus."""


@dataclass(frozen=True)
class Wasted:
    """Compute spent on silent groups: what the logged groups spent (``basis`` ``observed``, when the log's
    groups are known at G), else what a budget sampled in groups of G is predicted to spend."""

    G: int
    """Group size (``--g-main``)."""
    estimator: str
    """Where the shares come from: ``observed`` (the logged groups), ``observed, zero spread`` (shaped
    rewards: the groups whose raw rewards all agree; the all-wrong/all-correct parts stay on correctness),
    or the estimator (``unbiased``, ``bayes``, ``plugin``) of a prediction from the pooled per-prompt counts."""
    silent_rollout_share: float
    """Share of rollouts in silent groups: observed, or predicted (= the silent-group rate at G)."""
    all_wrong_share: float
    """Part of ``silent_rollout_share`` in all-wrong groups."""
    all_correct_share: float
    """Part of ``silent_rollout_share`` in all-correct groups."""
    rollouts: int
    """Rollouts logged (with a reward)."""
    effective_rollouts: float
    """Logged rollouts outside silent groups: rollouts × (1 − the logged silent-rollout share) when the
    log's groups are known at G, else rollouts × (1 − silent_rollout_share)."""
    effective_rollouts_per_group: float
    """G × (1 − silent_rollout_share): signal-carrying rollouts per group of G."""
    effective_from: str = "estimate"
    """What ``effective_rollouts`` used: ``log`` (the logged silent groups) or the estimator's name."""
    basis: str = "predicted"
    """``observed`` (the shares are what the logged groups did) or ``predicted`` (a model of a fresh budget)."""
    predicted: float | None = None
    """The prediction at G from the pooled per-prompt counts (by ``predicted_estimator``), beside an
    observed ``silent_rollout_share``: the two differ when pass rates moved (see ``drift``)."""
    predicted_estimator: str | None = None
    """Estimator of ``predicted``."""


@dataclass(frozen=True)
class MassBands:
    """Shares of one rule's total gradient mass, by band of p̂ (NaN/null when the total is 0)."""

    extreme: float
    """Share on prompts with p̂ < 0.1 or p̂ > 0.9."""
    middle: float
    """Share on prompts with 0.4 <= p̂ <= 0.6."""
    bins: tuple[float, ...]
    """Share in each of 10 bins of p̂ (same bins as the pass-rate histogram)."""


@dataclass(frozen=True)
class MassShare:
    """Where GRPO and Dr. GRPO spend their gradient over the corpus: per-prompt mass as a posterior
    expectation under the corpus prior (``basis`` = ``posterior``; small-sample-proof: p̂ = k/n
    cannot fall inside (0, 0.1) with fewer than 10 samples), or at p = p̂ with ``--estimator plugin``."""

    G: int
    """Group size of the finite-G figures (``--g-main``)."""
    basis: str
    """``posterior`` (bands of p under each prompt's posterior) or ``p_hat`` (bands of p̂ = k/n, plug-in)."""
    grpo: MassBands
    """GRPO, large G: mass ∝ sqrt(p̂ (1 − p̂))."""
    drgrpo: MassBands
    """Dr. GRPO, large G: mass ∝ p̂ (1 − p̂)."""
    grpo_finite: MassBands
    """GRPO at G: mass ∝ E[σ](p̂, G)."""
    drgrpo_finite: MassBands
    """Dr. GRPO at G: mass ∝ p̂ (1 − p̂)(1 − 1/G) (same shares as large G)."""
    grpo_extreme_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``grpo.extreme`` on the posterior basis (scan ``--bootstrap N``; None without)."""


@dataclass(frozen=True)
class GroupSizeRow:
    """The group-size law at one quantile of p̂ over the in-between prompts."""

    quantile: float
    """0.25, 0.5 or 0.75."""
    p_hat: float
    """That quantile of p̂ over prompts with 0 < k < n (linear interpolation)."""
    closed_form: int | None
    """ceil(1 / (8 ε p̂ (1 − p̂)))."""
    exact: int | None
    """Smallest G with fidelity φ(p̂, G) >= 1 − ε."""
    met: bool
    """Whether the chosen G reaches ``exact``."""
    fidelity: float | None = None
    """φ(p̂, G) at this quantile and the chosen G."""


@dataclass(frozen=True)
class GroupSize:
    """The group-size law (φ >= 1 − ε) applied to the corpus, and DAPO's resampling cost at G."""

    eps: float
    """Fidelity shortfall ε."""
    G: int
    """The chosen group size (``--g-main``) checked against each prompt's need."""
    in_between_prompts: int
    """Prompts with 0 < k < n (the only ones any G can serve)."""
    unreachable_prompts: int
    """Prompts with p̂ ∈ {0, 1}: no G helps; counted as unmet."""
    quantiles: tuple[GroupSizeRow, ...]
    """The law at the quartiles and median of p̂ over in-between prompts (empty when there are none)."""
    met_prompts: int
    """Prompts whose exact need (at p = p̂) is at most G."""
    met_share: float
    """``met_prompts`` / all prompts (unreachable prompts count as unmet)."""
    dapo_groups_per_kept_group: float | None
    """DAPO's expected groups drawn per kept group at G: 1 / (1 − corpus silent rate at G), the same
    figure as plan's (DAPO fills its batch with fresh prompts drawn at random); None when every group is silent."""
    least_need: int | None = None
    """The exact need at p = 1/2, the least any prompt needs (φ is largest there)."""
    fidelity_ceiling: float | None = None
    """φ(1/2, G): the largest fidelity any prompt has at G (a G below ``least_need`` meets no prompt's need)."""


@dataclass(frozen=True)
class ScanReport:
    """The audit of one set of rollout logs (``sigmaudit scan``)."""

    prompts: int
    """Distinct prompts with at least one reward."""
    rollouts: int
    """Samples with a reward (Σ n)."""
    rows: int
    """Samples read, including those with a missing reward."""
    files: int
    """Files read."""
    steps: int | None
    """Distinct training steps seen in the groups; None when unknown."""
    layout: str
    """Detected (or forced) log layout."""
    reward_source: str
    """Column the rewards (or counts) came from."""
    missing_rewards: int
    """Null/NaN rewards excluded (never counted as wrong)."""
    single_sample_prompts: int
    """Prompts with exactly one sample (p̂ ∈ {0, 1} by construction)."""
    samples_per_prompt: SamplesPerPrompt
    """Samples per prompt."""
    pass_rate: PassRate
    """Distribution of p̂ over prompts."""
    estimator: str
    """How the default estimates were chosen (e.g. ``unbiased for G <= 10, bayes above``)."""
    silent: tuple[SilentRow, ...]
    """Silent-group rate for each requested G."""
    observed_silent: ObservedSilent | None
    """Silent fraction of the logged groups; None when group membership is unknown."""
    filtered_warning: str | None
    """Set when the log looks filtered (no silent group where some are expected), else None."""
    wasted: Wasted
    """Wasted compute at the chosen G."""
    mass_share: MassShare
    """Gradient-mass shares of GRPO and Dr. GRPO."""
    group_size: GroupSize
    """The group-size law over the corpus."""
    notes: tuple[str, ...]
    """Loader notes and the audit's own notes (also printed on stderr)."""
    prior: dict[str, Any] | None = None
    """The corpus prior behind every posterior figure: ``family`` (``beta+atoms``, ``smooth-grid``),
    its ``components`` or ``bandwidth``, and ``selection`` (how the data chose it)."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump: source ``structure`` (the dump says so), ``flag``
    (``--post-filter``) or ``statistics`` (``filtered_warning``), with a one-line message."""
    by: ByResult | None = None
    """With ``--by COLUMN``: the audit of each value's rows (this report is the pooled one)."""
    recommendation: Any = None
    """``plan``'s recommendation on the same logs (:func:`sigmaudit.audits.plan.recommendation_of`: its R rule,
    its rule, the logged G), set by ``sigmaudit scan`` (None: not asked, or a log too thin to plan on)."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""
    replicates: int = 0
    """Bootstrap replicates over prompts behind the ``*_ci`` intervals (0: none)."""
    level: float = 0.9
    """Two-sided level of the ``*_ci`` intervals."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (field names are the keys; NaN becomes null in the renderer)."""
        d = asdict(replace(self, by=None))
        d["by"] = None if self.by is None else self.by.to_dict()
        d["recommendation"] = None if self.recommendation is None else self.recommendation.to_dict()
        d["drift"] = drift_json(self.drift)
        return d


# --------------------------------------------------------------------------- helpers


def _estimator_description(rows: tuple[SilentRow, ...]) -> str:
    unb = [r.G for r in rows if r.estimator == "unbiased"]
    bay = [r.G for r in rows if r.estimator == "bayes"]
    if not bay:
        return "unbiased"
    if not unb:
        return "bayes"
    return f"unbiased for G <= {max(unb)}, bayes above"


# --------------------------------------------------------------------------- sections


def _corpus_figures(corpus: Corpus, estimator: str = "auto", replicates: int = 0,
                    level: float = 0.9) -> tuple[SamplesPerPrompt, PassRate]:
    from ..core.identify import thin_corpus
    from ..core.weighting import bin_index

    w = corpus.weight
    p = corpus.p_hat
    n_total = w.sum()
    hist = np.bincount(bin_index(p, HIST_BINS), weights=w, minlength=HIST_BINS)
    spp = SamplesPerPrompt(
        min=int(corpus.n.min()),
        median=corpus.quantile(corpus.n, 0.5),
        max=int(corpus.n.max()),
    )
    never, always = float(w[corpus.k == 0].sum() / n_total), float(w[corpus.k == corpus.n].sum() / n_total)
    model = estimator != "plugin" and not thin_corpus(corpus.n, w)  # a thin corpus does not identify the prior
    rate = PassRate(
        mean=corpus.mean(p),
        median=corpus.quantile(p, 0.5),
        never_solved=never,
        always_solved=always,
        histogram=tuple(int(round(c)) for c in hist),
        never_solved_posterior=float(corpus.mixture[corpus.prior.grid == 0.0].sum() / n_total) if model else None,
        always_solved_posterior=float(corpus.mixture[corpus.prior.grid == 1.0].sum() / n_total) if model else None,
        never_solved_range=(0.0, never),
        always_solved_range=(0.0, always),
        **(_extreme_intervals(corpus, replicates, level) if model and replicates else {}),
    )
    return spp, rate


def _extreme_intervals(corpus: Corpus, replicates: int, level: float) -> dict[str, tuple[float, float] | None]:
    """Bootstrap intervals of the posterior never/always-solved shares (the corpus's cached replicates)."""
    est = corpus.estimates(["never_solved_rate", "always_solved_rate"], [1], "bayes", replicates=replicates)
    return {"never_solved_posterior_ci": est.interval("never_solved_rate", 1, level),
            "always_solved_posterior_ci": est.interval("always_solved_rate", 1, level)}


def _silent_rows(corpus: Corpus, sizes: tuple[int, ...] | list[int], estimator: str, replicates: int,
                 level: float) -> tuple[SilentRow, ...]:
    """:func:`silent_row` at each G by one estimator for every G (:func:`sigmaudit.core.estimates.sweep_estimator`:
    ``auto`` is unbiased only when every G is at most the fewest samples, so the shares fall with G), with
    bootstrap intervals of the default and model-based estimates when
    ``replicates`` > 0 (the corpus's cached replicates: the same intervals ``check`` computes); none where the
    figure is not identified."""
    from ..core.estimates import sweep_estimator
    from ..core.identify import NotIdentifiedError, thin_corpus

    Gs = [int(g) for g in sizes]
    estimator = sweep_estimator(estimator, Gs, corpus.min_samples)  # type: ignore[arg-type]  # one per sweep
    out = [silent_row(corpus, g, estimator) for g in Gs]
    for name, rule in () if replicates <= 0 else (("estimate_ci", estimator), ("bayes_ci", "bayes")):
        if rule == "plugin" or (rule == "bayes" and thin_corpus(corpus.n, corpus.weight)):
            continue
        try:
            est = corpus.estimates(["silent_rate"], Gs, rule, replicates=replicates)  # type: ignore[arg-type]
        except NotIdentifiedError:
            continue
        out = [replace(r, **{name: est.interval("silent_rate", r.G, level)}) for r in out]
    return tuple(out)


def silent_row(corpus: Corpus, G: int, estimator: str = "auto") -> SilentRow:
    """Every estimate of the corpus silent rate at one G; ``estimate`` by the shared rule
    (:func:`sigmaudit.core.estimates.resolve`)."""
    from ..core.estimates import resolve

    plug = corpus.silent(G, "plugin")
    unb = corpus.silent(G, "unbiased")
    bay = corpus.silent(G, "bayes")
    used = resolve("silent_rate", int(G), estimator, corpus.min_samples)  # type: ignore[arg-type]
    est = {"plugin": plug, "unbiased": unb, "bayes": bay}[used]
    if est.silent_rate is None:  # unbiased asked for where some prompt has n < G: undefined
        est = bay
    return SilentRow(
        G=int(G),
        plugin=float(plug.silent_rate),  # type: ignore[arg-type]
        unbiased=unb.silent_rate,
        bayes=float(bay.silent_rate),  # type: ignore[arg-type]
        estimate=float(est.silent_rate),  # type: ignore[arg-type]
        estimator=est.estimator,
        all_wrong=float(plug.all_wrong_rate),  # type: ignore[arg-type]
        all_correct=float(plug.all_correct_rate),  # type: ignore[arg-type]
        estimate_all_wrong=float(est.all_wrong_rate),  # type: ignore[arg-type]
        estimate_all_correct=float(est.all_correct_rate),  # type: ignore[arg-type]
    )


def _wasted(corpus: Corpus, row: SilentRow, rollouts: int, observed: ObservedSilent | None = None) -> Wasted:
    """What the logged groups spent on silent groups when they are known at this G (``observed``), with
    the pooled-count prediction beside it; else the prediction at G alone."""
    if observed is None:
        return Wasted(G=row.G, estimator=row.estimator, silent_rollout_share=row.estimate,
                      all_wrong_share=row.estimate_all_wrong, all_correct_share=row.estimate_all_correct,
                      rollouts=rollouts, effective_rollouts=rollouts * (1.0 - row.estimate),
                      effective_from=row.estimator, effective_rollouts_per_group=row.G * (1.0 - row.estimate))
    share = observed.rollout_share if observed.zero_spread is None else observed.zero_spread_rollout_share
    flat = observed.zero_spread is not None
    return Wasted(
        G=row.G, estimator="observed, zero spread" if flat else "observed", silent_rollout_share=share,  # type: ignore[arg-type]
        all_wrong_share=observed.all_wrong_rollout_share, all_correct_share=observed.all_correct_rollout_share,
        rollouts=rollouts, effective_rollouts=rollouts * (1.0 - share), effective_from="log",
        effective_rollouts_per_group=row.G * (1.0 - share), basis="observed", predicted=row.estimate,
        predicted_estimator=row.estimator,
    )


def _bands(p: NDArray[np.float64], mass: NDArray[np.float64]) -> MassBands:
    from ..core.weighting import EXTREME, MIDDLE, band_share, bin_shares

    return MassBands(
        extreme=band_share(p, mass, EXTREME),
        middle=band_share(p, mass, MIDDLE),
        bins=tuple(float(x) for x in bin_shares(p, mass, HIST_BINS)),
    )


def _mass_share(corpus: Corpus, G: int, estimator: str = "auto", replicates: int = 0, level: float = 0.9) -> MassShare:
    """Mass shares by band: per prompt, the posterior expectation of mass × 1{p in band} (all prompts
    together: the corpus's posterior mixture over the grid), or mass at p̂ with ``plugin``."""
    from ..core.weighting import gradient_mass

    if estimator == "plugin":
        p, w = corpus.p_hat, corpus.weight
    else:
        p, w = corpus.prior.grid, corpus.mixture

    def bands(rule: str, g: int | None) -> MassBands:
        mass = np.asarray(gradient_mass(p, rule, g), dtype=np.float64)  # type: ignore[arg-type]
        return _bands(p, mass * w)

    ci = None
    if estimator != "plugin" and replicates:
        est = corpus.estimates(["extreme_share"], [G], "bayes", replicates=replicates)
        ci = est.interval("extreme_share", G, level)
    return MassShare(G=G, basis="p_hat" if estimator == "plugin" else "posterior", grpo=bands("grpo", None),
                     drgrpo=bands("drgrpo", None), grpo_finite=bands("grpo", G), drgrpo_finite=bands("drgrpo", G),
                     grpo_extreme_ci=ci)


def _group_size(corpus: Corpus, G: int, eps: float, silent: float) -> GroupSize:
    """The group-size law over the in-between prompts; DAPO's draws from the corpus silent rate ``silent`` at G."""
    from ..core.fidelity import fidelity
    from ..core.group_size import group_size_closed_form, group_size_exact

    p, w = corpus.p_hat, corpus.weight
    inner = (corpus.k > 0) & (corpus.k < corpus.n)
    n_inner = int(w[inner].sum())
    quantiles: list[GroupSizeRow] = []
    met_prompts = 0
    if n_inner:
        p_in, w_in = p[inner], w[inner]
        need = np.asarray(group_size_exact(p_in, eps), dtype=np.float64)
        met_prompts = int(w_in[need <= G].sum())
        for q in QUANTILES:
            pq = corpus.quantile(p, q, where=inner)
            closed = group_size_closed_form(pq, eps)
            exact = group_size_exact(pq, eps)
            quantiles.append(GroupSizeRow(q, pq, closed, exact, exact is not None and G >= exact,  # type: ignore[arg-type]
                                          float(fidelity(pq, G))))
    return GroupSize(
        eps=float(eps),
        G=G,
        in_between_prompts=n_inner,
        unreachable_prompts=corpus.n_prompts - n_inner,
        quantiles=tuple(quantiles),
        met_prompts=met_prompts,
        met_share=met_prompts / corpus.n_prompts,
        # at G = 1 every group is silent: 1 - silent is 0, or 1e-16 by rounding (numpy 1.26): no draws figure
        dapo_groups_per_kept_group=1.0 / (1.0 - silent) if silent < 1.0 - 1e-12 else None,
        least_need=group_size_exact(0.5, eps),  # type: ignore[arg-type]
        fidelity_ceiling=float(fidelity(0.5, G)),
    )


# --------------------------------------------------------------------------- the audit


def _validate(G: tuple[int, ...], g_main: int | None, eps: float) -> None:
    from ..errors import ConfigError
    from . import check_eps

    if not G:
        raise ConfigError("give at least one group size", location="G")
    for g in (*G, *(() if g_main is None else (g_main,))):
        if isinstance(g, bool) or int(g) != g or g < 1:
            raise ConfigError(f"group sizes must be whole numbers >= 1, got {g!r}", location="G")
    check_eps(eps)


def audit(
    loaded: LoadedCounts,
    G: tuple[int, ...] | list[int] | None = None,
    g_main: int | None = None,
    eps: float = 0.05,
    post_filter: bool = False, estimator: str = "auto",
    replicates: int = 0, level: float = 0.9,
) -> ScanReport:
    """Audit per-prompt (and per-group) counts: the figures of ``sigmaudit scan``.

    Parameters
    ----------
    loaded
        Counts from :func:`sigmaudit.loaders.load_counts` (or built by hand).
    G
        Group sizes for the silent-group table (sorted, duplicates dropped); None: :data:`DEFAULT_G`, less
        those a thin log does not identify (:func:`~sigmaudit.audits.identified_sizes`, with a note).
    g_main
        Group size for wasted compute, finite-G gradient mass and the group-size check; default the
        most common logged group size, else 8 (where the log does not identify it: the largest G it does).
    eps
        Fidelity shortfall ε of the group-size law (φ >= 1 − ε).
    post_filter
        The user says the log was written after zero-variance filtering (``filtered`` source
        ``flag`` unless the dump itself says so).
    estimator
        The estimator rule shared with plan and check (:mod:`sigmaudit.core.estimates`): the
        ``estimate`` column, and whether mass shares and never/always solved come from the
        posterior (auto, bayes, unbiased) or from p̂ = k/n (plugin).
    replicates, level
        Bootstrap replicates over prompts (0: none) and the level of the intervals (``*_ci``).
    """
    from . import corpus_of
    from .drift import context

    _validate(tuple(DEFAULT_G if G is None else G), g_main, eps)
    corpus = corpus_of(loaded)
    sizes, g_main, more = _sizes(loaded, corpus, G, g_main)

    spp, rate = _corpus_figures(corpus, estimator, replicates, level)
    rows = _silent_rows(corpus, sizes, estimator, replicates, level)
    by_G = {r.G: r for r in rows}
    main_row = _main_row(corpus, by_G, g_main, estimator)
    observed = observed_silent(loaded, corpus)
    warning = filtered_warning(observed)
    rollouts = int(corpus.n @ corpus.weight)
    filtered, notes = _filtered_and_notes(loaded, post_filter, warning, more)
    return ScanReport(
        **_log_facts(loaded, corpus), rollouts=rollouts, samples_per_prompt=spp, pass_rate=rate,
        estimator=_estimator_description(rows), silent=rows, observed_silent=observed,
        filtered_warning=warning,
        wasted=_wasted(corpus, main_row, rollouts, observed if observed is not None and observed.G == g_main else None),
        mass_share=_mass_share(corpus, g_main, estimator, replicates, level),
        group_size=_group_size(corpus, g_main, eps, main_row.estimate),
        notes=notes,
        prior=corpus.prior.describe(),
        filtered=filtered,
        **context(loaded), replicates=int(replicates), level=float(level),
        by=_by(loaded, G, g_main, eps, post_filter, estimator, replicates, level),
    )



def _sizes(loaded: LoadedCounts, corpus: Corpus, G: tuple[int, ...] | list[int] | None,
           g_main: int | None) -> tuple[tuple[int, ...], int, tuple[str | None, ...]]:
    """The silent table's sizes (``G``, else :data:`DEFAULT_G` less what a thin log does not identify), the
    main G (:func:`_main_size`) and the notes saying what was left out."""
    from . import identified_sizes

    sizes, thin = identified_sizes(corpus, DEFAULT_G) if G is None else (tuple(sorted({int(g) for g in G})), None)
    g, main_note = _main_size(loaded, corpus, sizes, g_main)
    return sizes, g, (thin, main_note)


def _main_size(loaded: LoadedCounts, corpus: Corpus, sizes: tuple[int, ...],
               g_main: int | None) -> tuple[int, str | None]:
    """The G of wasted compute and the group-size law: as given, else the most common logged group size
    (:func:`main_group_size`) -- or, when the logs do not identify that one, the largest G they do (the
    shown ``sizes`` and every G up to the fewest samples per prompt), with a note."""
    from ..core.identify import NOT_IDENTIFIED

    if g_main is not None:
        return int(g_main), None
    g = main_group_size(loaded)
    if corpus.identification(g) is None:
        return g, None
    known = [s for s in {*sizes, *range(2, corpus.min_samples + 1)} if corpus.identification(s) is None]
    if not known:
        return g, None
    logged = loaded.per_group is not None and loaded.per_group.height
    return max(known), (f"wasted compute and group size at G = {max(known)}: G = {g} "
                        f"({'the logged group size' if logged else 'the default'}) is {NOT_IDENTIFIED}")


def _main_row(corpus: Corpus, rows: dict[int, SilentRow], G: int, estimator: str) -> SilentRow:
    """The single-G figures (the prediction beside the observed groups, wasted, DAPO's draws) by the per-G rule, as
    check computes them at that G; the sweep's rows use one estimator for every G (:func:`_silent_rows`)."""
    row = silent_row(corpus, G, estimator)
    return rows[G] if G in rows and rows[G].estimator == row.estimator else row  # the same figure, with its interval


def _by(loaded: LoadedCounts, *args: Any) -> ByResult | None:
    """With ``--by``: each value's rows audited on their own (``args``: :func:`audit`'s, after ``loaded``)."""
    if loaded.by is None:
        return None
    return ByResult(loaded.by, tuple(ByGroup(value, audit(part, *args)) for value, part in loaded.parts))


def _log_facts(loaded: LoadedCounts, corpus: Corpus) -> dict[str, Any]:
    """The scan's fields that describe what was read: prompts, rows, files, distinct steps (None without
    steps), layout, reward source, missing rewards and single-sample prompts."""
    per_group = loaded.per_group
    steps = None
    if loaded.has_steps and per_group is not None:
        steps = int(per_group["step"].drop_nulls().n_unique())
    return {
        "prompts": corpus.n_prompts, "rows": int(loaded.n_rows), "files": len(loaded.files), "steps": steps,
        "layout": loaded.layout, "reward_source": loaded.reward_source,
        "missing_rewards": int(loaded.missing_rewards), "single_sample_prompts": int(loaded.n_single_sample_prompts),
    }


def _filtered_and_notes(
    loaded: LoadedCounts, post_filter: bool, warning: str | None, more: tuple[str | None, ...] = ()
) -> tuple[Filtered | None, tuple[str, ...]]:
    """Whether the log is a post-filter dump (the dump's word, ``--post-filter`` or the statistics'
    ``warning``) and the scan's notes: the loader's, then the warning, then the dump's state, then ``more``
    (the sizes a thin log leaves out)."""
    from .filtered import resolve

    filtered = resolve(loaded, post_filter, Filtered("statistics", warning) if warning else None)
    notes = list(loaded.notes)
    if warning:
        notes.append(warning)
    if filtered is not None and filtered.source != "statistics":
        notes.append(f"post-filter dump ({filtered.source}): {filtered.message}")
    return filtered, (*notes, *(n for n in more if n))


def main_group_size(loaded: LoadedCounts) -> int:
    """The most common logged group size, else :data:`FALLBACK_G_MAIN` (the scan's default G)."""
    per_group = loaded.per_group
    return most_common(per_group["n"].to_numpy()) if per_group is not None and per_group.height else FALLBACK_G_MAIN


def per_prompt_table(loaded: LoadedCounts, G: int | None = None) -> pl.DataFrame:
    """One row per prompt: ``prompt, n, k, p_hat, p_posterior_mean`` (under the corpus prior),
    ``G`` and ``silent_rate`` (the chance a group of G is silent, with the scan's default estimator
    at G, named in ``estimator``). ``G`` defaults to :func:`main_group_size`."""
    import polars as pl

    from ..core.estimators import silent_estimate
    from . import corpus_of

    corpus = corpus_of(loaded)
    G = main_group_size(loaded) if G is None else int(G)
    est = corpus.default_estimator(G)
    silent = silent_estimate(corpus.n, corpus.k, G, est, corpus.prior if est == "bayes" else None).silent
    pair = corpus.index
    pp = loaded.per_prompt
    return pl.DataFrame({
        "prompt": pp["prompt"],
        "n": pp["n"],
        "k": pp["k"],
        "p_hat": (pp["k"] / pp["n"]),
        "p_posterior_mean": corpus.posterior_mean_p()[pair],
        "G": pl.Series([G] * pp.height, dtype=pl.Int64),
        "silent_rate": np.asarray(silent, dtype=np.float64)[pair],
        "estimator": pl.Series([est] * pp.height, dtype=pl.Utf8),
    })
