"""``sigmaudit trend``: observed and forecast silent groups per training step.

JSON contract (``--format json``), besides ``schema_version``:

- ``steps``: one object per step (or bucket of ``every`` steps), in step order, with ``step`` (first
  logged step of the bucket), ``step_last``, ``groups``, ``pass_rate`` (mean k/n over groups),
  ``observed_silent`` = ``observed_all_wrong`` + ``observed_all_correct`` (shares of groups with
  k = 0 / k = n), ``ahead_silent`` (the one-step-ahead forecast from earlier steps only; null at the
  first step), ``naive_silent`` (the previous step's observed share), ``forecast_silent`` =
  ``forecast_all_wrong`` + ``forecast_all_correct`` (the *implied* rate: mean estimate at each
  group's logged size from the step's own outcomes, not a forecast), ``forecast`` ``{"G": rate or
  null}`` (implied) for each ``-G``.
- ``forecast_error``: ``{ahead_mae, naive_mae, steps, note}``: mean absolute error over steps of the
  one-step-ahead forecast and of the naive baseline (``note`` says why they are null, if they are).
- ``G_logged``: the logged group size (null when sizes differ; ``G_logged_sizes`` lists them).
- ``every``, ``estimator`` (bayes, plugin or unbiased), ``G`` (the extra sizes), ``dropped_groups``.
- ``filtered``: null, or ``{source, message}`` when the log is a post-filter dump (its observed shares
  are the dump's, not the run's).
- ``by``: null, or with ``--by COLUMN`` ``{column, groups: [{value, ...these keys...}]}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...loaders import LoadedCounts

from ..options import (
    FormatOpt,
    OutputOpt,
    PostFilterOpt,
    emit_result,
    estimator_option,
    gen_batch_option,
    group_size_option,
    train_batch_option,
)


@reads_logs(series_ok=True, by_ok=True)
def trend(
    loaded: LoadedCounts,
    G: Annotated[list[int] | None, group_size_option(
        "Also give the implied silent rate at this G (repeatable).")] = None,
    every: Annotated[int, typer.Option("--every", min=1, help="One row per bucket of this many steps.")] = 1,
    estimator: Annotated[str, estimator_option(
        "Estimator of the implied rate: auto (default, as in scan, plan and check: unbiased at a -G every "
        "group reaches, else bayes; bayes at the logged size), bayes (prior fitted to the run), plugin, or "
        "unbiased (G ≤ n).")] = "auto",
    post_filter: PostFilterOpt = False,
    train_batch: Annotated[int | None, train_batch_option(
        "A verl DAPO metrics log (train/num_gen_batches): data.train_batch_size; with --gen-batch, each step's "
        "generation batches bound its silent share (columns silent ≥, silent ≤).")] = None,
    gen_batch: Annotated[int | None, gen_batch_option(
        "With --train-batch: data.gen_batch_size (prompts per generation batch) [default: --train-batch, as "
        "verl].")] = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Silent groups per training step: observed (all-wrong / all-correct) against the forecast.

    Needs a training-step column (detected, or named with --step-col). The forecast of step t is made
    from earlier steps only (corpus prior + each prompt's earlier visits; what 'backtest' scores), next
    to a naive baseline (the previous step's share), with both errors. 'implied' is the step's own
    outcomes read through an estimator of p^G + (1 − p)^G (at the logged size and at each -G): it
    follows the step's noise and is not a forecast. With --by, also each value's steps on their own.

    \b
    Example:
      sigmaudit trend rollouts.parquet -G 16 --every 5
    """
    from ...audits.trend import trend_logs

    if loaded.series is not None and G:
        from ...loaders.series import g_refused

        raise g_refused(loaded.files[0])
    batches = _batches(loaded, train_batch, gen_batch)
    emit_result(trend_logs(loaded, G=G or (), every=every, estimator=estimator,  # type: ignore[arg-type]
                           post_filter=post_filter, batches=batches), fmt, output)


def _batches(loaded: LoadedCounts, train_batch: int | None, gen_batch: int | None) -> tuple[int, int] | None:
    """(train, generation) batch sizes for a DAPO metrics series' bounds; what is missing said (a note when the
    series has shares of its own, a refusal when the generation batches are all it holds)."""
    from ...errors import ConfigError

    if train_batch is None:
        if gen_batch is not None:
            raise ConfigError("--gen-batch needs --train-batch", location="--gen-batch",
                              remedy="add --train-batch B (verl's data.train_batch_size)")
        series = loaded.series
        if series is not None and "gen_batches" in series.columns:
            from ...loaders.series import gen_batches_missing

            missing = gen_batches_missing(loaded.files[0])
            if not any(c in series.columns for c in ("observed_silent", "observed_all_wrong", "observed_all_correct")):
                raise missing
            from ..output import note

            note(missing.message)
        return None
    if loaded.series is None:
        raise ConfigError("--train-batch bounds a DAPO metrics log's silent share; a rollout log's groups give it",
                          location="--train-batch", remedy="drop it ('check' and 'plan' read DAPO's loop from a "
                                                           "rollout log with --train-batch)")
    return train_batch, gen_batch or train_batch
