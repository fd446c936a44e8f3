"""``sigmaudit backtest``: the replay of :mod:`sigmaudit.audits.forecast` scored against what the log shows.

Every group after the first logged step is forecast from earlier steps only
(:func:`~sigmaudit.audits.forecast.replay`); this module scores those forecasts: Brier score
and log loss of P(silent), a 10-bin calibration table, two baselines (the previous step's
silent fraction; P(silent | the prompt's last visit was silent / informative / none),
estimated from earlier steps), and the trade-off curves of three skip rules (sigmaudit's
threshold on P(silent); GRESO's streak rule, Zheng et al. 2025, arXiv:2506.02177; "skip if
silent last time").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from ..core.forecast import CalibrationBin
from ..fmt import none_if_nan
from ..loaders.options import Filtered
from .forecast import Replay, replay

SIGMAUDIT_THRESHOLDS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99)
"""P(silent) thresholds on the trade-off curve of sigmaudit's rule (skip when P(silent) >= threshold)."""
GRESO_BASES: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
"""GRESO exploration bases p_e (the same for easy and hard prompts) on its trade-off curve."""
MAX_LOST = 0.05
"""Informative-group loss at which the skip rules are compared."""
GRESO_SEARCH = np.round(np.linspace(0.0, 1.0, 51), 2)
"""(p_easy, p_hard) grid searched for GRESO's best point at the loss budget."""


@dataclass(frozen=True)
class TradeoffPoint:
    """One point of a skip rule's trade-off curve."""

    rule: str
    """``sigmaudit`` (skip when P(silent) >= threshold), ``greso`` (threshold = exploration base p_e,
    for easy and hard prompts alike) or ``silent-last-time``."""
    threshold: float | None
    """The rule's knob (None for silent-last-time, which has none)."""
    silent_avoided: float
    """Share of the silent groups the rule would have skipped (in expectation for GRESO)."""
    informative_lost: float
    """Share of the informative groups it would have skipped."""


@dataclass(frozen=True)
class Baseline:
    """A simple forecast scored on the same groups."""

    name: str
    """``previous-step`` (the silent fraction of the step before) or ``last-visit`` (P(silent | the
    prompt's last visit silent / informative / none), estimated from earlier steps)."""
    brier: float
    """Brier score."""
    log_loss: float
    """Log loss (natural log)."""


@dataclass(frozen=True)
class BacktestResult:
    """The replay of a log scored against what it shows."""

    G: int | None
    """Group size the silence is forecast at (None: each group's logged size)."""
    visits: int
    """Scored groups (every group after the first logged step)."""
    prompts: int
    """Prompts with at least one scored group."""
    steps: int
    """Logged steps."""
    brier: float
    """Brier score of sigmaudit's P(silent)."""
    log_loss: float
    """Log loss of sigmaudit's P(silent)."""
    calibration: tuple[CalibrationBin, ...]
    """10 equal-width bins of the forecast: mean forecast vs observed silent share."""
    calibration_error: float
    """Σ n |predicted − observed| / Σ n over the bins."""
    baselines: tuple[Baseline, ...]
    """The two baselines on the same groups."""
    tradeoff: tuple[TradeoffPoint, ...]
    """Trade-off curves of the three skip rules."""
    avoided_at_max_lost: dict[str, float | None]
    """Largest share of silent groups each rule avoids losing at most ``max_lost`` of the informative
    ones (GRESO: best over a 51 × 51 grid of its two bases; None when no setting qualifies)."""
    max_lost: float
    """The informative-loss budget of ``avoided_at_max_lost``."""
    observed_silent: float
    """Share of the scored groups that were silent."""
    revisited: int
    """Scored groups whose prompt had been seen before."""
    half_life: float
    """Half-life (steps) with the lowest log loss over the whole replay (what ``forecast`` uses)."""
    half_life_gap: float
    """Typical revisit gap in steps; the half-lives tried are multiples of it."""
    half_lives: tuple[float, ...]
    """Half-lives tried (steps; inf = no down-weighting)."""
    prior_fits: int
    """Corpus priors fitted during the replay (each on earlier steps only)."""
    dropped_groups: int = 0
    """Groups without a step value (left out)."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (see :mod:`sigmaudit.audits.filtered`): the replay scores
    forecasts against a log whose silent groups were dropped."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (see :mod:`sigmaudit.commands.backtest`)."""
        return {
            "brier": self.brier,
            "log_loss": self.log_loss,
            "calibration": [{"bin": c.bin, "predicted": c.predicted, "observed": c.observed, "n": c.n}
                            for c in self.calibration],
            "calibration_error": self.calibration_error,
            "tradeoff": [{"rule": t.rule, "threshold": t.threshold, "silent_avoided": t.silent_avoided,
                          "informative_lost": t.informative_lost} for t in self.tradeoff],
            "visits": self.visits,
            "prompts": self.prompts,
            "baselines": [{"name": b.name, "brier": b.brier, "log_loss": b.log_loss} for b in self.baselines],
            "avoided_at_max_lost": dict(self.avoided_at_max_lost),
            "max_lost": self.max_lost,
            "G": self.G,
            "steps": self.steps,
            "observed_silent": self.observed_silent,
            "revisited": self.revisited,
            "half_life": none_if_nan(self.half_life),
            "half_life_gap": self.half_life_gap,
            "half_lives": [none_if_nan(h) for h in self.half_lives],
            "prior_fits": self.prior_fits,
            "dropped_groups": self.dropped_groups,
            "filtered": None if self.filtered is None else asdict(self.filtered),
        }


def _greso_best(sc: NDArray[np.int64], sw: NDArray[np.int64], y: NDArray[np.float64], max_lost: float) -> float | None:
    """GRESO's largest silent share avoided at informative loss <= max_lost over its (p_easy, p_hard) grid."""
    from ..core.forecast import GRESO_FLOOR

    silent, informative = y.sum(), (1.0 - y).sum()
    if silent == 0 or informative == 0:  # nothing to avoid (a post-filter dump), or nothing to lose
        return None
    best = None
    # sums of outcomes per streak length, each kind apart: the grid search then costs nothing per group
    zmax = int(max(sc.max(initial=0), sw.max(initial=0)))
    z = np.arange(1, zmax + 1, dtype=np.float64)

    def sums(streak: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        m = streak > 0
        s = np.bincount(streak[m], weights=y[m], minlength=zmax + 1)[1:]
        i = np.bincount(streak[m], weights=1.0 - y[m], minlength=zmax + 1)[1:]
        return s, i

    es, ei = sums(sc)
    hs, hi = sums(np.where(sc > 0, 0, sw))
    for pe in GRESO_SEARCH:
        qe = 1.0 - np.maximum(pe**z, GRESO_FLOOR)
        for ph in GRESO_SEARCH:
            qh = 1.0 - np.maximum(ph**z, GRESO_FLOOR)
            lost = (qe @ ei + qh @ hi) / informative
            if lost <= max_lost + 1e-12:
                avoided = float((qe @ es + qh @ hs) / silent)
                best = avoided if best is None else max(best, avoided)
    return best


def backtest(per_group: pl.DataFrame, *, G: int | None = None, max_lost: float = MAX_LOST,
             filtered: Filtered | None = None) -> BacktestResult:
    """Replay the log in step order and score the forecasts (see the module docstring).

    ``filtered`` (:func:`sigmaudit.audits.observed.filtered_of`) is carried to the result. Raises
    SchemaError without steps (or with one step) and ConfigError when ``G`` exceeds a logged
    group's size.
    """
    if G is not None and (int(G) != G or G < 1):
        raise ValueError(f"G must be a whole number >= 1, got {G!r}")
    result = score(replay(per_group, G), G, max_lost)
    return result if filtered is None else replace(result, filtered=filtered)


def score(rp: Replay, G: int | None = None, max_lost: float = MAX_LOST) -> BacktestResult:
    """Score a :func:`replay` (made with the same ``G``): what :func:`backtest` returns."""
    from ..core.forecast import (
        avoided_at_lost,
        brier,
        calibration,
        calibration_error,
        greso_skip_probability,
        log_loss,
        tradeoff,
    )

    d = rp.groups.filter(pl.col("scored"))
    f, y = d["forecast"].to_numpy(), d["outcome"].to_numpy()
    sc, sw = d["streak_correct"].to_numpy(), d["streak_wrong"].to_numpy()
    last = d["last_silent"].fill_null(np.nan).to_numpy()
    table = calibration(f, y)
    points = [TradeoffPoint("sigmaudit", t, *tradeoff(f >= t, y)) for t in SIGMAUDIT_THRESHOLDS]
    points += [TradeoffPoint("greso", pe, *tradeoff(greso_skip_probability(sc, sw, pe, pe), y)) for pe in GRESO_BASES]
    last_rule = np.nan_to_num(last, nan=0.0)
    points.append(TradeoffPoint("silent-last-time", None, *tradeoff(last_rule, y)))
    slt_avoided, slt_lost = tradeoff(last_rule, y)
    at = {
        "sigmaudit": avoided_at_lost(f, y, max_lost),
        "greso": _greso_best(sc, sw, y, max_lost),
        "silent-last-time": slt_avoided if slt_lost <= max_lost else None,
    }
    baselines = (
        Baseline("previous-step", brier(d["naive"].to_numpy(), y), log_loss(d["naive"].to_numpy(), y)),
        Baseline("last-visit", brier(d["markov"].to_numpy(), y), log_loss(d["markov"].to_numpy(), y)),
    )
    return BacktestResult(
        G=G, visits=d.height, prompts=int(d["prompt"].n_unique()), steps=len(rp.steps),
        brier=brier(f, y), log_loss=log_loss(f, y), calibration=table, calibration_error=calibration_error(table),
        baselines=baselines, tradeoff=tuple(points), avoided_at_max_lost=at, max_lost=float(max_lost),
        observed_silent=float(y.mean()), revisited=int((d["visits_before"] > 0).sum()), half_life=rp.half_life_final,
        half_life_gap=rp.gap, half_lives=rp.half_lives, prior_fits=rp.prior_fits, dropped_groups=rp.dropped_groups,
    )
