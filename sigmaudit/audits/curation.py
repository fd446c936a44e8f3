"""Which prompts to drop before choosing G: the data as the first lever (``plan``'s curation).

docs/theory.md, "Curating the data". Three rules, each per prompt from its counts (n, k) and its
posterior under the corpus prior:

- ``log``: never or always solved in the log (k ∈ {0, n});
- ``posterior``: posterior P(p ∈ {0, 1} | n, k) > ``drop_above`` (default :data:`DEFAULT_DROP_ABOVE`);
- ``band``: p̂ = k/n outside the open band (LO, HI) of ``--keep-band``.

- ``value`` (when ``value_G`` is given): the ``drop`` class of the value rule at that G (docs/theory.md,
  "Curating by value"; :func:`value_curation` is ``sigmaudit curate``'s whole rule).

For each rule: the prompts it drops, the share of the corpus's learnable signal they carry
(Σ_dropped E[sqrt(p(1 − p))] / Σ_all, the large-G GRPO mass) and, at given G and the same rollouts per
step, the silent share and the plan's objective of the prompts kept (the corpus prior and each
prompt's posterior stay those of the whole corpus: dropping prompts does not change what their counts
say about the others). The silent shares before and after are posterior means (bayes) whatever the
sweep's estimator: every rule chooses the kept prompts by their counts, and an estimator unbiased for each
prompt is not unbiased on a subset its own counts chose (the hypergeometric estimate at G = n is 0 for
every prompt with 0 < k < n: dropping the k ∈ {0, n} prompts of an 8-sample log "left" 0 % silent at
G = 8 where 17.7 % is true, tests/test_curate_value.py). A G the counts do not identify gets no silent
share (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:

    from ..core.corpus import Corpus
    from ..core.update import Advantage, StdConvention

DEFAULT_DROP_ABOVE = 0.5
"""``--drop-above``: drop a prompt more likely unreachable (p ∈ {0, 1}) than not."""
RULES = ("log", "posterior", "band", "value")
RULE_WORDS = {
    "log": "never or always solved in the log",
    "posterior": "posterior P(p ∈ {{0, 1}}) > {drop_above:g}",
    "band": "p̂ outside ({lo:g}, {hi:g})",
    "value": "value at G = {value_G}: P(informative group) below {min_value:g} × the corpus mean, sure at "
             "{confidence:g}",
}


@dataclass(frozen=True)
class CuratedAt:
    """One curation's effect at one G (same rollouts per step)."""

    G: int
    """Group size."""
    silent_before: float | None
    """Silent share of every prompt (posterior mean at G)."""
    silent_after: float | None
    """Silent share of the kept prompts (None when none is kept)."""
    objective_before: float | None
    """The plan's objective on every prompt."""
    objective_after: float | None
    """The plan's objective on the kept prompts."""
    signal_cost: float | None = None
    """The dropped prompts' share of the expected update Σ_i E[c(k, G) | n_i, k_i] at G (``curate``'s cost)."""


@dataclass(frozen=True)
class CurationRow:
    """One rule's drop list in figures."""

    rule: str
    """``log``, ``posterior`` or ``band``."""
    description: str
    """The rule in words."""
    prompts_dropped: int
    """Prompts it drops."""
    dropped_share: float
    """Their share of the prompts."""
    signal_share: float | None
    """Their share of the corpus's learnable signal Σ E[sqrt(p(1 − p))] (None when the corpus has none)."""
    at: tuple[CuratedAt, ...]
    """At the logged and the recommended G."""


@dataclass(frozen=True)
class Curation:
    """The curation rules side by side."""

    drop_above: float
    """``--drop-above``."""
    keep_band: tuple[float, float] | None
    """``--keep-band`` (None: the band rule is not shown)."""
    objective: str
    """The objective of ``objective_before``/``objective_after``."""
    rows: tuple[CurationRow, ...]
    """One per rule shown."""
    value_G: int | None = None
    """The G the ``value`` rule valued prompts at (None: not shown)."""

    def row(self, rule: str) -> CurationRow | None:
        """The row of ``rule`` (None when not shown)."""
        return next((r for r in self.rows if r.rule == rule), None)


def drop_masks(corpus: Corpus, drop_above: float = DEFAULT_DROP_ABOVE,
               keep_band: tuple[float, float] | None = None) -> dict[str, NDArray[np.bool_]]:
    """Per rule, which distinct (n, k) pairs it drops."""
    at0, at1 = corpus.unreachable_parts()
    masks = {"log": (corpus.k == 0) | (corpus.k == corpus.n), "posterior": (at0 + at1) > drop_above}
    if keep_band is not None:
        lo, hi = keep_band
        p = corpus.p_hat
        masks["band"] = ~((p > lo) & (p < hi))
    return masks


def curate(corpus: Corpus, Gs: Sequence[int], R: int, objective: str, *, advantage: Advantage = "grpo",
           std: StdConvention = "sample", estimator: str = "auto", drop_above: float = DEFAULT_DROP_ABOVE,
           keep_band: tuple[float, float] | None = None, value_G: int | None = None) -> Curation:
    """Each rule's figures at each G of ``Gs`` (the logged and the recommended G); with ``value_G`` also the
    value rule at that G (its defaults: :data:`sigmaudit.core.value.DEFAULT_MIN_VALUE`, ``DEFAULT_CONFIDENCE``).
    Silent shares are posterior means (module docstring); ``estimator`` is kept for the callers' signature."""
    from ..core.value import DEFAULT_CONFIDENCE, DEFAULT_MIN_VALUE
    from .objective import evaluate

    del estimator  # the kept set is chosen by the counts: posterior means only
    Gs = sorted({int(g) for g in Gs if int(g) >= 1})
    known = [g for g in Gs if corpus.identification(g) is None]

    def figures(weights: NDArray[np.float64] | None) -> Any:
        return None if not known else evaluate(corpus, known, R, advantage=advantage, std=std, estimator="bayes",
                                                weights=weights)

    full = figures(None)
    mass = corpus.posterior_sd() * corpus.weight
    total = float(mass.sum())
    masks = drop_masks(corpus, drop_above, keep_band)
    if value_G is not None and corpus.identification(int(value_G)) is None:  # values the counts determine only
        masks["value"] = value_pairs(corpus, int(value_G), DEFAULT_MIN_VALUE, DEFAULT_CONFIDENCE).decision == "drop"
    lo, hi = keep_band or (0.0, 1.0)
    gains = _gains(corpus, Gs, advantage, std)
    rows = []
    for rule, drop in masks.items():
        kept_w = np.where(drop, 0.0, corpus.weight)
        after = None if kept_w.sum() <= 0 else figures(kept_w)
        at = tuple(replace(_at(g, known, full, after, objective), signal_cost=_cost(gains[:, j], corpus.weight, drop))
                   for j, g in enumerate(Gs))
        dropped = int(round(float(corpus.weight[drop].sum())))
        words = RULE_WORDS[rule].format(drop_above=drop_above, lo=lo, hi=hi, value_G=value_G,
                                        min_value=DEFAULT_MIN_VALUE, confidence=DEFAULT_CONFIDENCE)
        rows.append(CurationRow(
            rule=rule, description=words, prompts_dropped=dropped, dropped_share=dropped / corpus.n_prompts,
            signal_share=float(mass[drop].sum() / total) if total > 0 else None, at=at))
    return Curation(drop_above=float(drop_above), keep_band=keep_band, objective=objective, rows=tuple(rows),
                    value_G=None if value_G is None else int(value_G))


def _gains(corpus: Corpus, Gs: Sequence[int], advantage: Advantage, std: StdConvention) -> NDArray[np.float64]:
    """E[c(k, G) | n, k] per distinct pair (rows) and G (columns)."""
    from ..core.update import gain_tables

    return np.asarray(corpus.posterior @ gain_tables(corpus.prior.grid, [int(g) for g in Gs], advantage, std)[0])


def _cost(c: NDArray[np.float64], weight: NDArray[np.float64], drop: NDArray[np.bool_]) -> float | None:
    """The dropped pairs' share of Σ weight · c (None without signal)."""
    total = float(weight @ c)
    return float((weight * drop) @ c / total) if total > 0 else None


def _at(g: int, known: list[int], full: Any, after: Any, objective: str) -> CuratedAt:
    """One G's figures (None where the counts do not identify G, or nothing is kept)."""
    if g not in known:
        return CuratedAt(G=g, silent_before=None, silent_after=None, objective_before=None, objective_after=None)
    i = known.index(g)
    return CuratedAt(G=g, silent_before=_num(full.silent[i]),
                     silent_after=None if after is None else _num(after.silent[i]),
                     objective_before=_num(full.values[objective][i]),
                     objective_after=None if after is None else _num(after.values[objective][i]))


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


# ---------------------------------------------------------------- curation by value (``sigmaudit curate``)


@dataclass(frozen=True)
class ValueClass:
    """One class of the value rule (docs/theory.md, "Curating by value")."""

    decision: str
    """``drop``, ``reprobe`` or ``keep``."""
    prompts: int
    """Prompts in the class."""
    share: float
    """Their share of the prompts."""
    never_solved: int
    """Of them, never solved in the log (k = 0)."""
    always_solved: int
    """Of them, always solved in the log (k = n)."""
    mean_value: float | None
    """Their mean value v (posterior chance of an informative group at G); None for an empty class."""
    settle_samples: tuple[int, int] | None
    """``reprobe`` only: the range over its never/always-solved prompts of the extra samples after which, the
    outcome unchanged, the prompt would be dropped (None when it has none, or more samples cannot settle it)."""


@dataclass(frozen=True)
class ValueAt:
    """The value rule's effect at one G (the same rollouts per step before and after)."""

    G: int
    """Group size."""
    silent_before: float
    """Predicted silent share of every prompt: 1 − mean v (posterior means, bayes)."""
    silent_after: float | None
    """The same over the prompts kept (``keep`` and ``reprobe``); None when none is kept."""
    silent_after_reprobe_dropped: float | None
    """The same were the ``reprobe`` prompts dropped too (the ``keep`` class alone)."""
    snr_change: float | None
    """The plan's step SNR (``snr`` of :mod:`.objective`) on the kept prompts over all of them, − 1."""
    signal_cost: float | None
    """Share of the corpus's expected update Σ_i E[c(k, G) | n_i, k_i] the dropped prompts carried."""


@dataclass(frozen=True)
class ValueCuration:
    """The value rule on a corpus: its threshold, its classes, its effect."""

    G: int
    """The G the prompts are valued at (the G to be run)."""
    corpus_value: float
    """v̄: the mean over prompts of v (1 − the predicted silent share at G)."""
    min_value: float
    """θ (``--min-value``): the threshold as a share of v̄."""
    threshold: float
    """t = θ · v̄."""
    confidence: float
    """ℓ (``--confidence``): the posterior probability P(V < t) a drop needs."""
    classes: tuple[ValueClass, ...]
    """drop, reprobe, keep."""
    at: tuple[ValueAt, ...]
    """At G and at the logged G (when it differs)."""
    advantage: str
    std: str

    def of(self, decision: str) -> ValueClass:
        return next(c for c in self.classes if c.decision == decision)


@dataclass(frozen=True)
class PairValues:
    """Per distinct (n, k) pair: v, q = P(V < t) and the class (``value_pairs``)."""

    value: NDArray[np.float64]
    below: NDArray[np.float64]
    decision: NDArray[np.str_]
    threshold: float
    corpus_value: float


def value_pairs(corpus: Corpus, G: int, min_value: float, confidence: float) -> PairValues:
    """v, q and the class of every distinct (n, k) pair at G (:mod:`sigmaudit.core.value`)."""
    from ..core.value import below_chance, decide, prompt_value

    grid = corpus.prior.grid
    v = prompt_value(corpus.posterior, grid, G)
    mean = corpus.mean(v)
    t = float(min_value) * mean
    q = below_chance(corpus.posterior, grid, G, t)
    return PairValues(v, q, decide(v, q, t, confidence), t, mean)


def value_curation(corpus: Corpus, G: int, also: Sequence[int] = (), *, min_value: float, confidence: float,
                   advantage: Advantage = "grpo", std: StdConvention = "sample") -> ValueCuration:
    """The value rule at G (the classes), and its effect at G and at each G of ``also``."""
    pv = value_pairs(corpus, G, min_value, confidence)
    classes = tuple(_value_class(corpus, pv, d, G, min_value, confidence) for d in ("drop", "reprobe", "keep"))
    at = tuple(_value_at(corpus, pv.decision, g, advantage, std) for g in sorted({int(G), *map(int, also)}))
    return ValueCuration(G=int(G), corpus_value=pv.corpus_value, min_value=float(min_value), threshold=pv.threshold,
                         confidence=float(confidence), classes=classes, at=at, advantage=advantage,
                         std=std if advantage == "grpo" else "n/a")


def _value_class(corpus: Corpus, pv: PairValues, decision: str, G: int, min_value: float,
                 confidence: float) -> ValueClass:
    from ..core.value import samples_to_settle

    sel = pv.decision == decision
    w = corpus.weight * sel
    count = int(round(float(w.sum())))
    settle = None
    if decision == "reprobe":
        ends = [samples_to_settle(corpus.prior.posterior, corpus.prior.grid, int(n), int(k), G, pv.threshold,
                                  confidence)
                for n, k in zip(corpus.n[sel], corpus.k[sel], strict=True) if k in (0, n)]
        known = [m for m in ends if m is not None]
        settle = (min(known), max(known)) if known else None
    return ValueClass(
        decision=decision, prompts=count, share=count / corpus.n_prompts,
        never_solved=int(round(float(w[corpus.k == 0].sum()))),
        always_solved=int(round(float(w[corpus.k == corpus.n].sum()))),
        mean_value=float(w @ pv.value / w.sum()) if count else None, settle_samples=settle)


def _value_at(corpus: Corpus, decision: NDArray[np.str_], G: int, advantage: Advantage,
              std: StdConvention) -> ValueAt:
    """Silent shares (posterior means: the kept set is chosen by the counts, docs/theory.md), the SNR
    change and the signal cost at G."""
    from ..core.value import prompt_value

    v = prompt_value(corpus.posterior, corpus.prior.grid, G)
    kept = corpus.weight * (decision != "drop")
    keep_only = corpus.weight * (decision == "keep")

    def silent(w: NDArray[np.float64]) -> float | None:
        return None if w.sum() <= 0 else float(1.0 - w @ v / w.sum())

    R = int(G) * max(corpus.n_prompts, 1)  # the SNR's change does not depend on R (same N before and after)
    snr_change = None
    # the plan's step SNR (docs/theory.md): the smallest change over the default band; its noise ratio is read at
    # the band's G0, which a thin log may not determine (no SNR change then)
    from .snr_choice import Band
    from .snr_choice import snr_change as change_of

    if kept.sum() > 0 and corpus.identification(Band().G_ref) is None:
        snr_change = change_of(corpus, int(G), R, kept, advantage=advantage, std=std)
    cost = _cost(_gains(corpus, [G], advantage, std)[:, 0], corpus.weight, decision == "drop")
    return ValueAt(G=int(G), silent_before=float(silent(corpus.weight) or 0.0), silent_after=silent(kept),
                   silent_after_reprobe_dropped=silent(keep_only), snr_change=snr_change, signal_cost=cost)
