"""``sigmaudit backtest``: replay a log in step order and score one-step-ahead silent-group forecasts.

JSON contract (``--format json``), besides ``schema_version``:

- ``brier``, ``log_loss``: of sigmaudit's P(silent) over the scored groups (every group after the
  first logged step, each forecast from earlier steps only).
- ``calibration``: 10 objects ``{bin, predicted, observed, n}`` (bin b holds forecasts in
  [b/10, (b+1)/10)); ``calibration_error``: Σ n |predicted − observed| / Σ n.
- ``tradeoff``: objects ``{rule, threshold, silent_avoided, informative_lost}`` for the rules
  ``sigmaudit`` (skip when P(silent) >= threshold), ``greso`` (threshold = exploration base p_e;
  skip chance 1 − max(p_e^z, 0.01) after a streak of z silent visits) and ``silent-last-time``
  (threshold null).
- ``visits`` (scored groups), ``prompts`` (prompts with a scored group), ``steps``, ``revisited``.
- ``baselines``: ``[{name, brier, log_loss}]`` for ``previous-step`` and ``last-visit``.
- ``avoided_at_max_lost``: ``{rule: share of silent groups avoided at informative loss <= max_lost,
  or null}``; ``max_lost``.
- ``G`` (null: each group's logged size), ``observed_silent``, ``half_life`` (steps; null = no
  down-weighting), ``half_life_gap``, ``half_lives``, ``prior_fits``, ``dropped_groups``.
- ``filtered``: null, or ``{source, message}`` when the log is a post-filter dump (the replay then
  scores forecasts against a log whose silent groups were dropped).

``--format csv`` writes the calibration table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs
from ..options import FormatOpt, OutputOpt, PostFilterOpt, emit_result, group_size_option, unit_interval

if TYPE_CHECKING:
    from ...loaders import LoadedCounts


@reads_logs
def backtest(
    loaded: LoadedCounts,
    G: Annotated[int | None, group_size_option(
        "Score silence at G of each group's answers (G <= logged size) [default: each group's logged size].")
    ] = None,
    max_lost: Annotated[float, typer.Option(
        "--max-lost", callback=unit_interval,
        help="Compare the skip rules at this share of informative groups lost.")] = 0.05,
    post_filter: PostFilterOpt = False,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Replay the log in step order: forecast each group's silence from earlier steps only, then compare.

    Reports the Brier score and log loss of P(silent) next to two baselines (the previous step's
    silent fraction; P(silent | the prompt's last visit)), a 10-bin calibration table, and the
    trade-off each skip rule buys (silent groups avoided vs informative groups lost): sigmaudit's
    forecast, GRESO's streak rule (Zheng et al. 2025) and "skip if silent last time". Needs a
    training-step column. Logs dumped after zero-variance filtering hold no silent groups to score.

    \b
    Example:
      sigmaudit backtest rollouts.parquet --format json
    """
    from ...audits.backtest import backtest as run_backtest
    from ...audits.forecast import NO_STEPS, STEPS_REMEDY
    from ...audits.observed import filtered_of
    from ...errors import SchemaError

    if loaded.per_group is None or not loaded.has_steps:
        raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
    emit_result(run_backtest(loaded.per_group, G=G, max_lost=max_lost, filtered=filtered_of(loaded, post_filter)),
                fmt, output)
