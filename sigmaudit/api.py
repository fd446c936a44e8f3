"""The commands as library calls on paths: ``sigmaudit.scan``, ``sigmaudit.check``, ``sigmaudit.backtest_logs``,
``sigmaudit.forecast_logs``, and the incremental :class:`~sigmaudit.audits.forecaster.Forecaster`.

Each call reads the logs as the command does (:func:`sigmaudit.loaders.load_counts`, with the same
layout detection and overrides in ``options``), runs the same audit, and returns its frozen result,
whose ``to_dict()`` is the command's ``--format json`` output without ``schema_version`` (NaN where
the JSON has null). Loader notes are in ``result.notes`` (scan) or not printed at all: a library
never writes to stderr. Errors raise :class:`sigmaudit.SigmauditError` subclasses (``InputError``,
``SchemaError``, ``ConfigError``) carrying ``location`` and ``remedy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .audits.backtest import BacktestResult
    from .audits.check import CheckResult
    from .audits.forecast import ForecastResult
    from .audits.scan import ScanReport
    from .loaders import LoadedCounts, LoadOptions

PathsLike = str | Path | Sequence[str | Path]
"""One path (file, folder, glob or URL) or several."""

DEFAULT_SCAN_G: tuple[int, ...] = (4, 8, 16, 32, 64)
"""Group sizes ``scan`` reports by default (as the command)."""


def _load(paths: PathsLike, options: LoadOptions | None, by: str | None = None, steps: str | None = None,
          last_steps: int | None = None) -> LoadedCounts:
    """The logs read as the commands read them, cut to the step window ``steps`` (``"A:B"``, inclusive)
    or the last ``last_steps`` steps (the whole log's span otherwise; ``--steps``/``--last-steps``)."""
    from .loaders import load_by, load_counts
    from .loaders.window import cut

    listed = [paths] if isinstance(paths, str | Path) else list(paths)
    loaded = load_counts(listed, options) if by is None else load_by(listed, by, options)
    return cut(loaded, steps, last_steps)


def scan(paths: PathsLike, *, G: Sequence[int] = DEFAULT_SCAN_G, g_main: int | None = None, eps: float = 0.05,
         estimator: str = "auto", post_filter: bool = False, by: str | None = None,
         steps: str | None = None, last_steps: int | None = None, options: LoadOptions | None = None) -> ScanReport:
    """``sigmaudit scan PATHS``: silent groups, wasted compute, gradient mass and group size.

    ``G`` are the group sizes of the silent-group table, ``g_main`` the one of wasted compute (default
    the most common logged group size), ``options`` the layout overrides (``--prompt-col`` ...)."""
    from .audits.scan import audit
    from .views import worded

    return worded(audit(_load(paths, options, by, steps, last_steps), G=tuple(G), g_main=g_main, eps=eps,
                        post_filter=post_filter, estimator=estimator))


def check(paths: PathsLike, *, G: int | None = None, max_silent: float | None = None,
          max_all_wrong: float | None = None, max_all_correct: float | None = None,
          max_extreme_share: float | None = None, min_fidelity: float | None = None,
          max_never_solved: float | None = None, estimator: str = "auto", bootstrap: int = 200, level: float = 0.9,
          confidence: float | None = None, post_filter: bool = False, groups_generated: int | None = None,
          allow_filtered: bool = False, by: str | None = None, basis: str | None = None,
          consecutive: int | None = None, silent_by: str | None = None, steps: str | None = None,
          last_steps: int | None = None, options: LoadOptions | None = None) -> CheckResult:
    """``sigmaudit check PATHS``: the gate; ``result.passed`` is the verdict (the command's exit 0 or 1).

    ``G`` defaults to the log's most common group size; at least one threshold is required;
    ``bootstrap`` replicates give each value its interval (0: none, faster)."""
    from .audits import logged_group_size
    from .audits.check import Threshold, check_logs
    from .errors import ConfigError

    given = {"silent_rate": max_silent, "all_wrong_rate": max_all_wrong, "all_correct_rate": max_all_correct,
             "extreme_share": max_extreme_share, "fidelity": min_fidelity, "never_solved_rate": max_never_solved}
    thresholds = [Threshold(name, float(v)) for name, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check", remedy="e.g. max_silent=0.4")
    loaded = _load(paths, options, by, steps, last_steps)
    source = "given"
    if G is None:
        G, source = logged_group_size(loaded), "log"
        if G is None:
            raise ConfigError("this log has no groups, so there is no group size to default to", location="G",
                              remedy="give the run's group size, e.g. G=8")
    from .views import worded

    return worded(check_logs(loaded, G, thresholds, post_filter=post_filter, groups_generated=groups_generated,
                             allow_filtered=allow_filtered, estimator=estimator, replicates=bootstrap, level=level,
                             confidence=confidence, G_source=source, basis=basis, consecutive=consecutive,
                             silent_by=silent_by))


def _per_group(loaded: LoadedCounts) -> object:
    from .audits.forecast import NO_STEPS, STEPS_REMEDY
    from .errors import SchemaError

    if loaded.per_group is None or not loaded.has_steps:
        raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
    return loaded.per_group


def backtest_logs(paths: PathsLike, *, G: int | None = None, max_lost: float | None = None,
                  post_filter: bool = False, steps: str | None = None, last_steps: int | None = None,
                  options: LoadOptions | None = None) -> BacktestResult:
    """``sigmaudit backtest PATHS``: replay the log in step order and score the forecasts."""
    from .audits.backtest import MAX_LOST, backtest
    from .audits.scan import filtered_of

    loaded = _load(paths, options, None, steps, last_steps)
    return backtest(_per_group(loaded), G=G, max_lost=MAX_LOST if max_lost is None else max_lost,  # type: ignore[arg-type]
                    filtered=filtered_of(loaded, post_filter))


def forecast_logs(paths: PathsLike, *, G: int | None = None, max_p_silent: float | None = None,
                  target_saving: float | None = None, post_filter: bool = False, steps: str | None = None,
                  last_steps: int | None = None, options: LoadOptions | None = None) -> ForecastResult:
    """``sigmaudit forecast PATHS``: each prompt's P(silent) at its next visit, and a skip list."""
    from .audits import logged_group_size
    from .audits.forecast import forecast
    from .audits.scan import filtered_of

    loaded = _load(paths, options, None, steps, last_steps)
    per_group = _per_group(loaded)
    size = logged_group_size(loaded) if G is None else G
    from dataclasses import replace

    from .audits.drift import context

    result = forecast(per_group, size, max_p_silent=max_p_silent, target_saving=target_saving,  # type: ignore[arg-type]
                      filtered=filtered_of(loaded, post_filter))
    from .views import worded

    return worded(replace(result, **context(loaded)))  # type: ignore[arg-type]
