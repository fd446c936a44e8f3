"""Which prompts to drop before choosing G: the data as the first lever (``plan``'s curation).

docs/theory.md, "Curating the data". Three rules, each per prompt from its counts (n, k) and its
posterior under the corpus prior:

- ``log``: never or always solved in the log (k ∈ {0, n});
- ``posterior``: posterior P(p ∈ {0, 1} | n, k) > ``drop_above`` (default :data:`DEFAULT_DROP_ABOVE`);
- ``band``: p̂ = k/n outside the open band (LO, HI) of ``--keep-band``.

For each rule: the prompts it drops, the share of the corpus's learnable signal they carry
(Σ_dropped E[sqrt(p(1 − p))] / Σ_all, the large-G GRPO mass) and, at given G and the same rollouts per
step, the silent share and the plan's objective of the prompts kept (the corpus prior and each
prompt's posterior stay those of the whole corpus: dropping prompts does not change what their counts
say about the others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import polars as pl

    from ..core.corpus import Corpus
    from ..core.update import Advantage, StdConvention

DEFAULT_DROP_ABOVE = 0.5
"""``--drop-above``: drop a prompt more likely unreachable (p ∈ {0, 1}) than not."""
RULES = ("log", "posterior", "band")
RULE_WORDS = {
    "log": "never or always solved in the log",
    "posterior": "posterior P(p ∈ {{0, 1}}) > {drop_above:g}",
    "band": "p̂ outside ({lo:g}, {hi:g})",
}


@dataclass(frozen=True)
class CuratedAt:
    """One curation's effect at one G (same rollouts per step)."""

    G: int
    """Group size."""
    silent_before: float | None
    """Silent share of every prompt (the sweep's estimator at G)."""
    silent_after: float | None
    """Silent share of the kept prompts (None when none is kept)."""
    objective_before: float | None
    """The plan's objective on every prompt."""
    objective_after: float | None
    """The plan's objective on the kept prompts."""


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
           keep_band: tuple[float, float] | None = None) -> Curation:
    """Each rule's figures at each G of ``Gs`` (the logged and the recommended G)."""
    from .objective import evaluate

    Gs = sorted({int(g) for g in Gs if int(g) >= 1})
    full = evaluate(corpus, Gs, R, advantage=advantage, std=std, estimator=estimator)
    mass = corpus.posterior_sd() * corpus.weight
    total = float(mass.sum())
    rows = []
    for rule, drop in drop_masks(corpus, drop_above, keep_band).items():
        kept_w = np.where(drop, 0.0, corpus.weight)
        after = None if kept_w.sum() <= 0 else evaluate(corpus, Gs, R, advantage=advantage, std=std,
                                                        estimator=estimator, weights=kept_w)
        at = tuple(CuratedAt(
            G=g, silent_before=_num(full.silent[i]), silent_after=None if after is None else _num(after.silent[i]),
            objective_before=_num(full.values[objective][i]),
            objective_after=None if after is None else _num(after.values[objective][i]),
        ) for i, g in enumerate(Gs))
        dropped = int(round(float(corpus.weight[drop].sum())))
        lo, hi = keep_band or (0.0, 1.0)
        rows.append(CurationRow(
            rule=rule, description=RULE_WORDS[rule].format(drop_above=drop_above, lo=lo, hi=hi),
            prompts_dropped=dropped, dropped_share=dropped / corpus.n_prompts,
            signal_share=float(mass[drop].sum() / total) if total > 0 else None, at=at))
    return Curation(drop_above=float(drop_above), keep_band=keep_band, objective=objective, rows=tuple(rows))


def _num(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)


def drop_table(corpus: Corpus, per_prompt: pl.DataFrame, drop_above: float = DEFAULT_DROP_ABOVE,
               keep_band: tuple[float, float] | None = None) -> pl.DataFrame:
    """``--drop-out``: one row per prompt (in ``per_prompt``'s order): ``prompt`` (the key as read; a key of
    several columns is their values joined by `` | ``), ``samples``, ``k``, ``p_hat``, ``p_never`` (P(p = 0)),
    ``p_always`` (P(p = 1)), ``never_or_always_in_log``, ``rule`` (the rule that drops it: ``posterior``, else
    ``band`` with ``--keep-band``; null when kept) and ``drop``."""
    import polars as pl

    pair = corpus.index
    at0, at1 = corpus.unreachable_parts()
    masks = drop_masks(corpus, drop_above, keep_band)
    rule = np.full(corpus.n.size, None, dtype=object)
    if "band" in masks:
        rule[masks["band"]] = "band"
    rule[masks["posterior"]] = "posterior"
    columns: dict[str, Any] = {
        "prompt": per_prompt["prompt"],
        "samples": corpus.n[pair],
        "k": corpus.k[pair],
        "p_hat": corpus.p_hat[pair],
        "p_never": at0[pair],
        "p_always": at1[pair],
        "never_or_always_in_log": masks["log"][pair],
        "rule": pl.Series(rule[pair].tolist(), dtype=pl.Utf8),
        "drop": pl.Series([r is not None for r in rule[pair].tolist()], dtype=pl.Boolean),
    }
    return pl.DataFrame(columns)
