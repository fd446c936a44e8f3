"""``sigmaudit report``: the scan, the plan, the trend and the backtest of one set of logs, for a chart renderer.

:func:`build_report` runs the existing library calls — :func:`sigmaudit.audits.scan.audit`,
:func:`sigmaudit.audits.plan.plan`, :func:`sigmaudit.audits.trend.trend` and
:func:`sigmaudit.audits.backtest.backtest` (when the logs have steps) and
:func:`sigmaudit.core.fidelity.fidelity` for the per-quartile curves — and returns a
:class:`ReportData`. No new math lives here: every number of the report is one of those
results' fields, or φ(p̂_q, G) at a quartile p̂_q the scan already reports. The HTML renderer
(:mod:`sigmaudit.render.html`) only draws and lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..loaders.options import Window
from .drift import Drift, context_json

if TYPE_CHECKING:
    from ..loaders import LoadedCounts
    from ..loaders.options import Filtered
    from .backtest import BacktestResult
    from .by import ByResult
    from .plan import PlanResult, Targets
    from .scan import ScanReport
    from .trend import TrendResult

CURVE_POINTS = 48
"""Group sizes (log-spaced, whole numbers) at which each fidelity curve is evaluated."""


@dataclass(frozen=True)
class FidelityCurve:
    """Fidelity φ(p̂_q, G) along G at one quantile p̂_q of p̂ over the in-between prompts."""

    quantile: float
    """0.25, 0.5 or 0.75."""
    p_hat: float
    """The quantile of p̂ over prompts with 0 < k < n (from the scan's group-size rows)."""
    G: tuple[int, ...]
    """Group sizes, ascending."""
    fidelity: tuple[float, ...]
    """φ(p_hat, G) for each G (exact sum, :func:`sigmaudit.core.fidelity.fidelity`)."""
    exact_G: int | None
    """Smallest G with φ(p_hat, G) >= 1 − ε (the scan's exact group-size law); None when unreachable."""


@dataclass(frozen=True)
class ReportData:
    """Everything ``sigmaudit report`` draws: the scan, the G sweep, the trend and the fidelity curves."""

    title: str
    """Title of the report."""
    files: tuple[str, ...]
    """Files read, in order."""
    scan: ScanReport
    """The audit (``sigmaudit scan``) at ``g_main`` and ``eps``."""
    plan: PlanResult
    """The G sweep (``sigmaudit plan``; the shared estimator rule) and its recommendation."""
    trend: TrendResult | None
    """Silent groups per training step (``sigmaudit trend``, bayes); None when the logs have no steps."""
    g_main: int
    """The group size of the scan's wasted-compute, finite-G mass and group-size figures."""
    chosen_G: int
    """The G marked on the charts: the plan's recommendation when there is one, else ``g_main``."""
    chosen_by: str
    """Why ``chosen_G``: ``recommended`` (smallest G meeting the targets) or ``g-main``."""
    eps: float
    """Fidelity shortfall ε of the group-size law (φ >= 1 − ε)."""
    fidelity_curves: tuple[FidelityCurve, ...]
    """φ along G at the quartiles and median of p̂ over the in-between prompts (empty when there are none)."""
    backtest: BacktestResult | None = None
    """One-step-ahead forecasts of silent groups scored on the log (``sigmaudit backtest``); None without
    steps (or with one step)."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (the scan's ``filtered``; see :mod:`sigmaudit.audits.filtered`)."""
    by: ByResult | None = None
    """With ``--by COLUMN``: the scan of each value's rows (own prior fit); ``scan`` is the pooled one."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: title, files, g_main, chosen_G, chosen_by, eps, filtered, scan, plan, trend, backtest,
        fidelity_curves, by (null, or ``{column, groups: [{value, ...the scan's keys}]}``)."""
        from dataclasses import asdict

        return {
            "title": self.title,
            "files": list(self.files),
            "g_main": self.g_main,
            "chosen_G": self.chosen_G,
            "chosen_by": self.chosen_by,
            "eps": self.eps,
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "scan": self.scan.to_dict(),
            "plan": self.plan.to_dict(),
            "trend": None if self.trend is None else self.trend.to_dict(),
            "backtest": None if self.backtest is None else self.backtest.to_dict(),
            "fidelity_curves": [
                {"quantile": c.quantile, "p_hat": c.p_hat, "G": list(c.G), "fidelity": list(c.fidelity),
                 "exact_G": c.exact_G}
                for c in self.fidelity_curves
            ],
            "by": None if self.by is None else self.by.to_dict(),
            **context_json(self.window, self.drift),
        }


def curve_G(sweep_G: Sequence[int], points: int = CURVE_POINTS) -> tuple[int, ...]:
    """Whole-number group sizes, log-spaced from the smallest to the largest swept G, plus the swept ones."""
    lo, hi = min(sweep_G), max(sweep_G)
    grid = np.unique(np.round(np.geomspace(lo, hi, points)).astype(np.int64)) if hi > lo else np.array([lo])
    return tuple(sorted({*(int(g) for g in grid), *(int(g) for g in sweep_G)}))


def fidelity_curves(scan: ScanReport, Gs: Sequence[int]) -> tuple[FidelityCurve, ...]:
    """φ(p̂_q, G) along ``Gs`` at each quantile row of the scan's group-size law."""
    from ..core.fidelity import fidelity

    G_arr = np.asarray(Gs, dtype=np.int64)
    return tuple(
        FidelityCurve(
            quantile=q.quantile,
            p_hat=q.p_hat,
            G=tuple(int(g) for g in G_arr),
            fidelity=tuple(float(v) for v in np.atleast_1d(fidelity(q.p_hat, G_arr))),
            exact_G=q.exact,
        )
        for q in scan.group_size.quantiles
    )


def default_title(files: Sequence[str]) -> str:
    """``sigmaudit report — rollouts.parquet`` (first file, and how many more)."""
    from pathlib import Path

    if not files:
        return "sigmaudit report"
    first = Path(files[0]).name
    more = f" and {len(files) - 1} more file{'s' if len(files) > 2 else ''}" if len(files) > 1 else ""
    return f"sigmaudit report — {first}{more}"


def build_report(
    loaded: LoadedCounts,
    G: Sequence[int] | None = None,
    *,
    g_main: int | None = None,
    eps: float = 0.05,
    targets: Targets | None = None,
    title: str | None = None,
    estimator: str = "auto",
    post_filter: bool = False,
) -> ReportData:
    """Audit, plan and (with steps) trend one set of loaded logs.

    Parameters
    ----------
    loaded
        Counts from :func:`sigmaudit.loaders.load_counts`.
    G
        Group sizes for both the scan's silent-group table and the plan's sweep; default each
        command's own (scan 4…64, plan 2…256).
    g_main
        Group size of the scan's wasted-compute, finite-G mass and group-size figures (default: most
        common logged group size, else 8); also the G marked when the plan recommends none.
    eps
        Fidelity shortfall ε of the group-size law.
    targets
        ``--max-silent`` / ``--min-fidelity`` for the plan's recommendation.
    title
        Report title; default names the first file.
    estimator
        The estimator rule shared by the scan, the plan and the trend (:mod:`sigmaudit.core.estimates`).
    post_filter
        The user says the log was written after zero-variance filtering (``--post-filter``); the
        resolved state (:func:`sigmaudit.audits.observed.filtered_of`) is stated by every part.

    With ``loaded.by`` (``--by``) the report gains ``by``: the scan of each value.
    """
    from dataclasses import replace

    from .drift import context
    from .plan import PlanOptions, Targets, plan_logs

    scan, by = _pooled_scan(loaded, G, g_main=g_main, eps=eps, estimator=estimator, post_filter=post_filter)
    filtered = scan.filtered
    # plan's own call: its R rule (the log's median step, else --batch-prompts × the logged G), its rule and
    # its run G (-G given once), so the report's recommendation is plan's on the same file and flags
    plan = replace(plan_logs(replace(loaded, by=None, parts=()), tuple(G) if G else None, targets=targets or Targets(),
                             options=PlanOptions(objective="snr"), run_G=G[0] if G and len(G) == 1 else None,
                             post_filter=post_filter, estimator=estimator), filtered=filtered)
    trend, bt = _step_parts(loaded, estimator, filtered)
    main = scan.wasted.G
    chosen, chosen_by = (plan.recommended_G, "recommended") if plan.recommended_G is not None else (main, "g-main")
    return ReportData(
        title=title or default_title(loaded.files), files=tuple(loaded.files), scan=scan, plan=plan, trend=trend,
        backtest=bt, g_main=main, chosen_G=int(chosen), chosen_by=chosen_by, eps=float(eps),
        fidelity_curves=fidelity_curves(scan, curve_G([r.G for r in plan.sweep])), filtered=filtered, by=by,
        **context(loaded),
    )


def _pooled_scan(
    loaded: LoadedCounts, G: Sequence[int] | None, *, g_main: int | None, eps: float, estimator: str,
    post_filter: bool,
) -> tuple[ScanReport, ByResult | None]:
    """The scan of the pooled logs (without its ``by``) and the scans of each ``--by`` value apart."""
    from dataclasses import replace

    from .scan import audit

    scan = audit(loaded, G=tuple(G) if G else None, g_main=g_main, eps=eps, estimator=estimator,
                 post_filter=post_filter)
    return replace(scan, by=None), scan.by  # the values' scans are the report's ``by``


def _step_parts(
    loaded: LoadedCounts, estimator: str, filtered: Filtered | None
) -> tuple[TrendResult | None, BacktestResult | None]:
    """The trend and the backtest of a log with steps; None for either that cannot run (no steps, a step
    column whose values are all missing, a single step)."""
    from dataclasses import replace

    from ..errors import SchemaError
    from .trend import trend as run_trend

    if not (loaded.has_steps and loaded.per_group is not None and loaded.per_group.height):
        return None, None
    try:
        trend = replace(run_trend(loaded.per_group, estimator=estimator), filtered=filtered)
    except SchemaError:  # a step column whose values are all missing: no trend, the rest stands
        trend = None
    from .backtest import backtest

    try:
        bt = backtest(loaded.per_group, filtered=filtered)
    except SchemaError:  # no step values, or a single step: nothing earlier to forecast from
        bt = None
    return trend, bt
