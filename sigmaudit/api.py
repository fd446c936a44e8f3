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

from .errors import ConfigError

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
    or the last ``last_steps`` steps (the whole log's span otherwise; ``--steps``/``--last-steps``); every
    argument checked first (ConfigError naming it)."""
    from .audits import arguments as a
    from .loaders import LoadOptions, load_by, load_counts
    from .loaders.window import cut

    if isinstance(paths, str | Path):
        listed = [paths]
    elif isinstance(paths, Sequence) and not isinstance(paths, bytes) and paths \
            and all(isinstance(p, str | Path) for p in paths):
        listed = list(paths)
    else:
        raise ConfigError(f"must be a path or a non-empty sequence of paths, got {paths!r}", location="paths")
    if options is not None and not isinstance(options, LoadOptions):
        raise ConfigError(f"must be a LoadOptions, got {options!r}", location="options",
                          remedy="e.g. sigmaudit.LoadOptions(prompt_col='task_id')")
    by = None if by is None else a.text(by, "by")
    steps = None if steps is None else a.text(steps, "steps")
    last_steps = None if last_steps is None else a.whole(last_steps, "last_steps", 1, a.MAX_STEP)
    loaded = load_counts(listed, options) if by is None else load_by(listed, by, options)
    return cut(loaded, steps, last_steps)


def _estimator(value: str) -> str:
    from .audits.arguments import choice
    from .core.estimates import ESTIMATOR_CHOICES

    return choice(value, "estimator", ESTIMATOR_CHOICES)


def scan(paths: PathsLike, *, G: Sequence[int] = DEFAULT_SCAN_G, g_main: int | None = None, eps: float = 0.05,
         estimator: str = "auto", post_filter: bool = False, by: str | None = None,
         steps: str | None = None, last_steps: int | None = None, options: LoadOptions | None = None) -> ScanReport:
    """``sigmaudit scan PATHS``: silent groups, wasted compute, gradient mass and group size.

    ``G`` are the group sizes of the silent-group table (default: the command's, less the sizes a thin log does
    not identify, with a note), ``g_main`` the one of wasted compute (default the most common logged group size),
    ``options`` the layout overrides (``--prompt-col`` ...)."""
    from .audits import arguments as a
    from .audits.scan import audit
    from .core._validate import EPS_MIN
    from .views import worded

    sizes, estimator = None if G is DEFAULT_SCAN_G else a.group_sizes(G), _estimator(estimator)
    g_main = None if g_main is None else a.group_size(g_main, "g_main")
    eps = a.real(eps, "eps")
    if not EPS_MIN <= eps < 1.0:
        raise ConfigError(f"must lie in [{EPS_MIN:g}, 1), got {eps!r}", location="eps")
    from .audits.plan import with_recommendation

    loaded = _load(paths, options, by, steps, last_steps)
    return worded(with_recommendation(audit(loaded, G=sizes, g_main=g_main, eps=eps, post_filter=post_filter,
                                            estimator=estimator), loaded, estimator=estimator))


def check(paths: PathsLike, *, G: int | None = None, max_silent: float | None = None,
          max_all_wrong: float | None = None, max_all_correct: float | None = None,
          max_extreme_share: float | None = None, min_fidelity: float | None = None,
          max_never_solved: float | None = None, max_silent_tokens: float | None = None, estimator: str = "auto",
          bootstrap: int = 200, level: float = 0.9,
          confidence: float | None = None, post_filter: bool = False, groups_generated: int | None = None,
          allow_filtered: bool = False, by: str | None = None, basis: str | None = None,
          consecutive: int | None = None, silent_by: str | None = None, steps: str | None = None,
          last_steps: int | None = None, options: LoadOptions | None = None) -> CheckResult:
    """``sigmaudit check PATHS``: the gate; ``result.passed`` is the verdict (the command's exit 0 or 1).

    ``G`` defaults to the log's most common group size; at least one threshold is required;
    ``bootstrap`` replicates give each value its interval (0: none, faster)."""
    from .audits import arguments as a
    from .audits import logged_group_size
    from .audits.check import BASES, Threshold, check_logs

    given = {"max_silent": max_silent, "max_all_wrong": max_all_wrong, "max_all_correct": max_all_correct,
             "max_extreme_share": max_extreme_share, "min_fidelity": min_fidelity,
             "max_never_solved": max_never_solved, "max_silent_tokens": max_silent_tokens}
    names = dict(zip(given, ("silent_rate", "all_wrong_rate", "all_correct_rate", "extreme_share", "fidelity",
                             "never_solved_rate", "silent_token_share"), strict=True))
    thresholds = [Threshold(names[arg], a.rate(v, arg)) for arg, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check", remedy="e.g. max_silent=0.4")
    G = None if G is None else a.group_size(G)
    estimator, bootstrap, level = _estimator(estimator), a.replicates(bootstrap), a.level(level, "level")
    confidence = None if confidence is None else a.level(confidence, "confidence")
    if confidence is not None and bootstrap == 0:
        raise ConfigError("needs bootstrap replicates", location="confidence", remedy="drop bootstrap=0")
    groups_generated = None if groups_generated is None else a.whole(groups_generated, "groups_generated")
    basis = None if basis is None else a.choice(basis, "basis", BASES)
    consecutive = None if consecutive is None else a.whole(consecutive, "consecutive", 1, a.MAX_STEP)
    silent_by = None if silent_by is None else a.choice(silent_by, "silent_by", ("zero-spread", "correctness"))
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
    from .audits import arguments as a
    from .audits.backtest import MAX_LOST, backtest
    from .audits.observed import filtered_of

    G = None if G is None else a.group_size(G)
    max_lost = None if max_lost is None else a.rate(max_lost, "max_lost")
    loaded = _load(paths, options, None, steps, last_steps)
    return backtest(_per_group(loaded), G=G, max_lost=MAX_LOST if max_lost is None else max_lost,  # type: ignore[arg-type]
                    filtered=filtered_of(loaded, post_filter))


def forecast_logs(paths: PathsLike, *, G: int | None = None, max_p_silent: float | None = None,
                  target_saving: float | None = None, post_filter: bool = False, steps: str | None = None,
                  last_steps: int | None = None, options: LoadOptions | None = None) -> ForecastResult:
    """``sigmaudit forecast PATHS``: each prompt's P(silent) at its next visit, and a skip list."""
    from .audits import arguments as a
    from .audits import logged_group_size
    from .audits.forecast import forecast
    from .audits.observed import filtered_of

    G = None if G is None else a.group_size(G)
    max_p_silent = None if max_p_silent is None else a.rate(max_p_silent, "max_p_silent")
    target_saving = None if target_saving is None else a.rate(target_saving, "target_saving")
    if max_p_silent is not None and target_saving is not None:
        raise ConfigError("give max_p_silent or target_saving, not both", location="target_saving")
    loaded = _load(paths, options, None, steps, last_steps)
    per_group = _per_group(loaded)
    size = logged_group_size(loaded) if G is None else G
    from dataclasses import replace

    from .audits.drift import context

    result = forecast(per_group, size, max_p_silent=max_p_silent, target_saving=target_saving,  # type: ignore[arg-type]
                      filtered=filtered_of(loaded, post_filter))
    from .views import worded

    return worded(replace(result, **context(loaded)))  # type: ignore[arg-type]
