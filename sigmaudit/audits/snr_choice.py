"""The recommendation of ``plan``, ``scan`` and ``report``: the flat range of the step's SNR over a band of
between-prompt shares, and the least change to the run's G (docs/theory.md, "The recommendation rule").

For each share f of the band (:class:`~sigmaudit.audits.objective.Band`), λ = τ²/ν² follows from the corpus
moments at G₀ (:func:`sigmaudit.core.update.noise_ratio`) and SNR_f(G) ∝ sqrt(N·m1²/(m2 + λ·ma/G)) with
N = ⌊R/G⌋. The flat range is

    F = ∩_f {G : SNR_f(G) ≥ (1 − t) · max SNR_f}

stated as runs of whole numbers (every whole G from 2 to 64, a geometric grid beyond, then every whole G
around each qualifying grid point and each f's best, within :data:`~.objective.DENSIFY_BUDGET`). The run's G
is kept when in F; else the member of F nearest to it; without a run G, the member nearest G₀; with F empty,
the G with the largest worst ratio over the band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from .objective import DENSIFY_BUDGET, Band, Curves, evaluate, full_grid, merge

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..core.update import Advantage, StdConvention

Verdict = Literal["keep", "nearest", "no-run-G", "no-flat-range", "none"]


@dataclass(frozen=True)
class ShareFacts:
    """The SNR's best and the losses of the run's and the recommended G at one share f."""

    share: float
    """f: the share of a step's noise variance from the prompt draw, at the band's G₀."""
    noise_ratio: float
    """λ = τ²/ν² it implies on this corpus."""
    best_G: int
    """The evaluated G with the best SNR (the smallest among ties)."""
    best_prompts_per_step: int
    """N at ``best_G``."""
    run_G_loss: float | None
    """1 − SNR(run G)/best (None without a run G, or a run G that does not fit a step)."""
    recommended_loss: float | None
    """1 − SNR(recommended G)/best."""


@dataclass(frozen=True)
class SnrChoice:
    """The flat range, the recommended G and why."""

    band: Band
    """The shares f and their G₀."""
    tolerance: float
    """``--tolerance`` t."""
    rollouts_per_step: int
    """R."""
    advantage: str
    """``--advantage``."""
    std: str
    """``--std`` (GRPO), else ``n/a``."""
    flat_runs: tuple[tuple[int, int], ...]
    """F as runs (first, last) of whole G, ascending; empty when no G is within t for every f."""
    flat_exact: bool
    """Every whole G inside each run was evaluated (False: past the densify budget, a run's inside was
    evaluated on the grid only)."""
    run_G: int | None
    """The run's G (``-G`` given once, else the logged group size; None: none)."""
    run_G_source: str | None
    """``given`` (-G), ``logged`` or None."""
    verdict: Verdict
    """keep (run G in F), nearest (run G outside F), no-run-G, no-flat-range (F empty) or none (no signal)."""
    recommended_G: int | None
    """The G of the verdict."""
    shares: tuple[ShareFacts, ...]
    """Per f."""
    small_prompts: bool
    """The recommended G leaves fewer than 1/t prompts per step (one prompt is more than t of the step)."""
    G_end: int
    """The largest G searched: min(R, 65,536)."""
    searched: int
    """How many G were evaluated."""

    @property
    def recommended_prompts_per_step(self) -> int | None:
        """⌊R / recommended G⌋."""
        return None if self.recommended_G is None else self.rollouts_per_step // self.recommended_G

    def in_flat(self, G: int) -> bool:
        """G is in F."""
        return any(lo <= G <= hi for lo, hi in self.flat_runs)

    @property
    def worst_loss(self) -> float | None:
        """The recommended G's largest loss over the band."""
        losses = [s.recommended_loss for s in self.shares if s.recommended_loss is not None]
        return max(losses) if losses else None


def band_ratios(curves: Curves, band: Band, end: int | None = None
                ) -> tuple[NDArray[np.float64], tuple[float, ...], NDArray[np.float64]]:
    """(SNR_f(G)/max SNR_f per share (rows) and G (columns), λ per share, the best SNR per share) over the G
    of ``curves`` that fit a step (G ≥ 2, N ≥ 1, G ≤ ``end``; others are 0). ``curves`` must hold G₀ (its
    moments set λ, whether or not G₀ is searched)."""
    from ..core.update import noise_ratio

    i0 = np.flatnonzero(curves.G == band.G_ref)
    if not i0.size:
        raise ValueError(f"the band's reference G = {band.G_ref} was not evaluated")
    m = curves.moments
    fits = (curves.G >= 2) & (curves.N >= 1) & (curves.G <= (end if end is not None else np.iinfo(np.int64).max))
    lams = tuple(noise_ratio(f, float(m["m2"][i0[0]]), float(m["ma"][i0[0]]), band.G_ref) for f in band.shares)
    snr = np.stack([np.where(fits, curves.snr(lam), 0.0) for lam in lams])
    best = snr.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(best[:, None] > 0, snr / best[:, None], 0.0)
    return ratios, lams, best


def _runs(G: NDArray[np.int64], ok: NDArray[np.bool_]) -> tuple[tuple[tuple[int, int], ...], bool]:
    """Runs of qualifying evaluated G with no evaluated non-qualifying G between, and whether each run's
    inside was evaluated whole."""
    runs: list[tuple[int, int]] = []
    exact = True
    start = prev = None
    for g, good in zip(G.tolist(), ok.tolist(), strict=True):
        if good:
            if start is None:
                start = g
            elif g - prev > 1:  # type: ignore[operator]
                exact = False
            prev = g
        elif start is not None:
            runs.append((start, prev))  # type: ignore[arg-type]
            start = None
    if start is not None:
        runs.append((start, prev))  # type: ignore[arg-type]
    return tuple(runs), exact


def _densify(curves: Curves, ratios: NDArray[np.float64], ok: NDArray[np.bool_], end: int,
             extra: Sequence[int]) -> list[int]:
    """Whole G to evaluate so the runs' ends and each share's best are exact: every whole G between the
    neighbours of each qualifying or best grid point, cheapest first, within :data:`DENSIFY_BUDGET` (Σ G)."""
    G = curves.G.tolist()
    have = set(G)
    marked = set(np.flatnonzero(ok).tolist()) | {int(np.argmax(r)) for r in ratios}
    marked |= {i for i, g in enumerate(G) if g in set(extra)}
    want: set[int] = set()
    for i in marked:
        lo = G[i - 1] if i > 0 else G[i]
        hi = G[i + 1] if i + 1 < len(G) else G[i]
        want.update(g for g in range(lo + 1, min(hi, end)) if g not in have and g >= 2)
    out, spent = [], 0
    for g in sorted(want):
        if spent + g > DENSIFY_BUDGET:
            break
        out.append(g)
        spent += g
    return out


def choose_snr(corpus: Corpus, R: int, G_end: int, *, band: Band | None = None, tolerance: float = 0.05,
               run_G: int | None = None, run_G_source: str | None = None, advantage: Advantage = "grpo",
               std: StdConvention = "sample", estimator: str = "auto", shown: Sequence[int] = ()
               ) -> tuple[SnrChoice, Curves]:
    """The rule of the module docstring on ``corpus`` at R rollouts per step, G searched in [2, G_end]."""
    from ..core.estimates import sweep_estimator

    band = band or Band()
    end = max(2, min(int(G_end), int(R)))
    marks = [g for g in (*shown, run_G, band.G_ref) if g is not None]
    grid = full_grid(R, end, [g for g in marks if g <= end])
    rule = sweep_estimator(estimator, [end], corpus.min_samples)  # type: ignore[arg-type]
    conv = {"advantage": advantage, "std": std, "estimator": rule}
    curves = evaluate(corpus, grid, R, **conv)  # type: ignore[arg-type]
    if band.G_ref not in grid:  # past the search's end: only its moments (λ), not a candidate
        curves = merge(curves, evaluate(corpus, [band.G_ref], R, with_silent=False, **conv))  # type: ignore[arg-type]
    ratios, _, _ = band_ratios(curves, band, end)
    ok = (ratios >= 1.0 - tolerance).all(axis=0) & (curves.G >= 2) & (curves.N >= 1) & (curves.G <= end)
    extra = _densify(curves, ratios, ok, end, [g for g in marks if g <= end])
    if extra:
        curves = merge(curves, evaluate(corpus, extra, R, **conv))  # type: ignore[arg-type]
        ratios, _, _ = band_ratios(curves, band, end)
        ok = (ratios >= 1.0 - tolerance).all(axis=0) & (curves.G >= 2) & (curves.N >= 1) & (curves.G <= end)
    ratios, lams, best = band_ratios(curves, band, end)
    runs, exact = _runs(curves.G, ok)
    fits_run = run_G is not None and 2 <= run_G <= end
    verdict, chosen = _verdict(curves, ratios, ok, runs, run_G if fits_run else None, band, best)
    if run_G is not None and not fits_run and verdict == "no-run-G":
        verdict = "nearest"

    def at(g: int | None) -> int | None:
        hit = np.flatnonzero(curves.G == g) if g is not None else np.array([], dtype=np.int64)
        return int(hit[0]) if hit.size else None

    ir, ic = at(run_G if fits_run else None), at(chosen)
    facts = tuple(ShareFacts(
        share=float(f), noise_ratio=float(lam), best_G=int(curves.G[int(np.argmax(ratios[j]))]),
        best_prompts_per_step=int(curves.N[int(np.argmax(ratios[j]))]),
        run_G_loss=None if ir is None else float(1.0 - ratios[j, ir]),
        recommended_loss=None if ic is None else float(1.0 - ratios[j, ic]))
        for j, (f, lam) in enumerate(zip(band.shares, lams, strict=True)))
    small = chosen is not None and tolerance > 0 and (R // chosen) * tolerance < 1.0
    choice = SnrChoice(
        band=band, tolerance=float(tolerance), rollouts_per_step=int(R), advantage=advantage,
        std=std if advantage == "grpo" else "n/a", flat_runs=runs, flat_exact=exact, run_G=run_G,
        run_G_source=run_G_source if run_G is not None else None, verdict=verdict, recommended_G=chosen,
        shares=facts, small_prompts=bool(small), G_end=end, searched=int(curves.G.size))
    return choice, curves


def _verdict(curves: Curves, ratios: NDArray[np.float64], ok: NDArray[np.bool_],
             runs: tuple[tuple[int, int], ...], run_G: int | None, band: Band, best: NDArray[np.float64]
             ) -> tuple[Verdict, int | None]:
    """The verdict and the recommended G (module docstring)."""
    if not (best > 0).any():
        return "none", None
    G = curves.G
    if not ok.any():
        worst = np.where((G >= 2) & (curves.N >= 1), ratios.min(axis=0), -np.inf)
        return "no-flat-range", int(G[int(np.argmax(worst))])
    target = run_G if run_G is not None else band.G_ref
    members = G[ok]
    if run_G is not None and bool(ok[G == run_G].any()):
        return "keep", int(run_G)
    nearest = int(members[np.lexsort((members, np.abs(members - target)))[0]])
    return ("nearest" if run_G is not None else "no-run-G"), nearest


def snr_change(corpus: Corpus, G: int, R: int, weights: NDArray[np.float64], *, band: Band | None = None,
               advantage: Advantage = "grpo", std: StdConvention = "sample") -> float | None:
    """The step SNR at G of the prompts weighted by ``weights`` over that of every prompt, − 1: the smallest
    change over the band's shares, λ of each share from the whole corpus at G₀ (None without signal)."""
    from ..core.update import noise_ratio

    band = band or Band()
    Gs = sorted({int(G), band.G_ref})
    full = evaluate(corpus, Gs, R, advantage=advantage, std=std, estimator="bayes")
    kept = evaluate(corpus, Gs, R, advantage=advantage, std=std, estimator="bayes", weights=weights)
    i, i0 = Gs.index(int(G)), Gs.index(band.G_ref)
    changes = []
    for f in band.shares:
        lam = noise_ratio(f, float(full.moments["m2"][i0]), float(full.moments["ma"][i0]), band.G_ref)
        before, after = float(full.snr(lam)[i]), float(kept.snr(lam)[i])
        if before > 0:
            changes.append(after / before - 1.0)
    return min(changes) if changes else None
