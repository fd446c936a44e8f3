"""``sigmaudit forecast``: each prompt's chance of a silent group at its next visit, and a skip list.

JSON contract (``--format json``), besides ``schema_version``: ``G``, ``next_step`` (last logged
step + 1), ``half_life`` (steps, chosen by the backtest; null = no down-weighting), ``prior``,
``prompts``, ``rule`` (none, max-p-silent or target-saving), ``threshold`` (P(silent) above which a
prompt is skipped), ``skipped``, ``rollouts_saved``, ``silent_avoided``, ``informative_lost``
(expected shares), ``expected_silent``, ``backtest_brier``, and ``per_prompt``: one object per
prompt with ``prompt, visits, last_step, p_estimate, p_silent, p_all_wrong, p_all_correct,
expected_useful_rollouts, skip`` (most likely silent first); ``filtered``: null, or ``{source,
message}`` when the log is a post-filter dump (P(silent) is then understated).

``--skip-out skip.csv|parquet|jsonl`` writes the per-prompt table (every prompt) next to the report;
``--format csv`` (or ``-o skip.csv``) makes the report itself that table. The terminal table shows
the 25 most likely silent prompts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs
from ..options import (
    FormatOpt,
    OutputOpt,
    PostFilterOpt,
    emit_result,
    group_size_option,
    max_p_silent_option,
    skip_out_option,
    unit_interval,
)

if TYPE_CHECKING:
    from ...loaders import LoadedCounts

_SKIP = "Skip list"


def _check_options(*, max_p_silent: float | None, target_saving: float | None, skip_out: Path | None,
                   **_: object) -> None:
    """Reject impossible options before any log is read."""
    from ...errors import ConfigError
    from ...writers import table_suffix

    if max_p_silent is not None and target_saving is not None:
        raise ConfigError("give --max-p-silent or --target-saving, not both", location="--target-saving")
    if skip_out is not None:
        table_suffix(skip_out, "--skip-out")


@reads_logs(validate=_check_options)
def forecast(
    loaded: LoadedCounts,
    quiet: bool,
    G: Annotated[int | None, group_size_option(
        "Group size of the next visit (default: the log's most common group size).")] = None,
    max_p_silent: Annotated[float | None, max_p_silent_option(
        "Skip prompts whose P(silent) exceeds this [default: 0.9, as watch and the Python API; --target-saving "
        "replaces it].", rich_help_panel=_SKIP)] = None,
    target_saving: Annotated[float | None, typer.Option(
        "--target-saving", callback=unit_interval, rich_help_panel=_SKIP, show_default=False,
        help="Skip the most likely silent prompts until this share of rollouts is saved.")] = None,
    skip_out: Annotated[Path | None, skip_out_option(
        "Write the per-prompt table (every prompt, with its skip flag) here: .csv, .parquet or .jsonl.",
        rich_help_panel=_SKIP)] = None,
    post_filter: PostFilterOpt = False,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """P(silent), P(all wrong), P(all correct) of each prompt's next group of G, from its visit history.

    Each prompt's pass rate is estimated from its earlier visits, older ones down-weighted with a
    half-life chosen by the backtest (held-out log loss), under a corpus prior fitted to the log.
    Lists the prompts to skip before rollout (P(silent) > --max-p-silent, 0.9 by default, or the most
    likely silent until --target-saving is saved) and says what that is expected to save (rollouts,
    silent groups) and lose (informative groups). --format csv
    (or -o skip.csv) is the per-prompt table of every prompt; the terminal table shows the 25 most
    likely silent. Needs a training-step column.

    \b
    Example:
      sigmaudit forecast rollouts.parquet -G 8 \\
          --max-p-silent 0.9 --skip-out skip.parquet
    """
    from ...audits.forecast import NO_STEPS, STEPS_REMEDY
    from ...audits.forecast import forecast as run_forecast
    from ...audits.observed import filtered_of
    from ...errors import SchemaError
    from ...writers import write_table

    if loaded.per_group is None or not loaded.has_steps:
        raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
    if G is None:
        from ...audits import logged_group_size
        from ..output import note

        G = logged_group_size(loaded)
        if G is None:
            raise SchemaError("this log has no groups, so there is no group size to default to",
                              location="-G/--group-size", remedy="give the next visit's group size, e.g. -G 8")
        if not quiet:
            note(f"-G not given: forecasting groups of G = {G}, the log's most common group size")
    from dataclasses import replace

    from ...audits.drift import context

    result = replace(run_forecast(loaded.per_group, G, max_p_silent=max_p_silent, target_saving=target_saving,
                                  filtered=filtered_of(loaded, post_filter)), **context(loaded))
    if skip_out is not None:
        write_table(result.table, skip_out, "--skip-out")
    emit_result(result, fmt, output)
