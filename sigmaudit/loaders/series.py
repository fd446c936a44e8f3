"""Per-step series: an already-aggregated curve, one row per training step with shares.

Some logs (and papers) keep only the per-step shares, not the groups: e.g. DAPO's published
"proportion of samples with accuracy 1" per step (``step,allcorrect_fraction``). Such a file has
a step column, no prompt, reward or count columns, and one or more share columns named below.
``sigmaudit trend`` shows it as the observed series; there are no groups to forecast from.

Trainer metrics logs are series too (:data:`METRICS`; a metric column wins over a ``reward`` column,
which in a metrics log is the batch's mean reward, not a sample's):

- TRL ``trainer_state.json`` (``transformers.TrainerState.save_to_json``: ``log_history``, one record per
  ``log`` call with ``step``); TRL's ``GRPOTrainer.log`` (huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8,
  also 1.16.0) logs ``frac_reward_zero_std`` = ``is_std_zero.float().mean()`` over the generation
  batches since the last log (eval records are ``eval_``-prefixed and left aside);
- a W&B chart export (``"Step","<run> - train/frac_reward_zero_std","<run> - ...__MIN","<run> - ...__MAX"``:
  the ``__MIN``/``__MAX`` columns are left aside; several runs are refused, never pooled);
- a TensorBoard scalar export (``Wall time,Step,Value``), the metric named by the file name
  (``run-x-tag-train_frac_reward_zero_std.csv``);
- ROLL's group metrics (alibaba/ROLL 8eb27cc2dc34c4d1310b169d9b86d339004d811a,
  ``roll/utils/metrics/metrics_manager.py`` ``add_group_metrics``: ``group/all_correct_groups_ratio``,
  ``group/all_incorrect_groups_ratio``, ``group/mixed_groups_ratio`` of the batch's groups), in any of
  those exports or verl's file logger;
- verl's file logger (``verl/utils/tracking.py`` ``FileLogger``: lines ``{"step": N, "data": {...}}``,
  volcengine/verl 0f615578bdbd95a1a56a5525479969fa30c7e5fc).
"""

from __future__ import annotations

import polars as pl

from ..errors import SchemaError
from .columns import K_NAMES, N_NAMES, PROMPT_NAMES, REWARD_NAMES, STEP_NAMES, find

SERIES_NAMES: dict[str, tuple[str, ...]] = {
    "observed_all_correct": ("allcorrect_fraction", "all_correct_fraction", "all_correct", "allcorrect",
                             "all_correct_share", "all_correct_rate", "solve_all_fraction"),
    "observed_all_wrong": ("allwrong_fraction", "all_wrong_fraction", "all_wrong", "allwrong",
                           "all_wrong_share", "all_wrong_rate", "solve_none_fraction"),
    "observed_silent": ("silent_fraction", "silent", "silent_share", "silent_rate", "zero_std_fraction",
                        "zero_std_ratio"),
    "pass_rate": ("pass_rate", "mean_pass_rate", "accuracy", "mean_accuracy", "solve_rate"),
}
"""Series fields and the column names that mean them (lower case)."""


PER_PROMPT = "predictions at another G, fidelity, never-solved and extreme shares, and curation need per-prompt data"
"""What a per-step series cannot give (said once, in its detection note)."""
METRICS: dict[str, tuple[str, ...]] = {
    "observed_silent": ("frac_reward_zero_std", "train/frac_reward_zero_std"),
    "observed_all_correct": ("group/all_correct_groups_ratio", "train/group/all_correct_groups_ratio"),
    "observed_all_wrong": ("group/all_incorrect_groups_ratio", "train/group/all_incorrect_groups_ratio"),
    "observed_mixed": ("group/mixed_groups_ratio", "train/group/mixed_groups_ratio"),
}
"""Trainer metrics that are shares of a step's groups (lower case), by field; ``observed_mixed`` is 1 − silent."""
METRIC_STEPS = ("step", "train/global_step", "global_step", "_step", "trainer/global_step")
W_AND_B_EXTRAS = ("__min", "__max", "_step")
"""Suffixes of a W&B chart export's columns beside each run's value."""


def _metric(column: str) -> str:
    """A column's metric name: a W&B export's ``<run> - <metric>`` without the run."""
    return column.split(" - ", 1)[1] if " - " in column else column


def _runs(cols: list[str]) -> list[str]:
    return list(dict.fromkeys(c.split(" - ", 1)[0] for c in cols if " - " in c))


def tensorboard_metric(schema: dict[str, pl.DataType], name: str | None) -> str | None:
    """The field a TensorBoard scalar export (``Wall time,Step,Value``) holds, named by its file name."""
    if name is None or [c.lower() for c in schema] != ["wall time", "step", "value"]:
        return None
    tag = name.lower().split("-tag-")[-1].rsplit(".", 1)[0]
    if "eval" in tag.split("_")[0]:
        return None
    for field, names in METRICS.items():
        if any(tag.endswith(n.replace("/", "_")) for n in names):
            return field
    return None


def metric_columns(schema: dict[str, pl.DataType], step_col: str | None,
                   where: str = "") -> tuple[str, dict[str, str]] | None:
    """(step column, {field: column}) of a trainer metrics log (:data:`METRICS`), else None; a W&B export
    of several runs is refused (their steps would be pooled)."""
    cols = list(schema)
    found = {}
    for field, names in METRICS.items():
        col = next((c for c in cols if _metric(c).lower() in names and schema[c].is_numeric()), None)
        if col is not None:
            found[field] = col
    if not found or find(cols, PROMPT_NAMES) is not None:
        return None
    runs = _runs([c for c in cols if _metric(c).lower() in {n for v in METRICS.values() for n in v}])
    if len(runs) > 1:
        raise SchemaError(f"a W&B export of {len(runs)} runs ({', '.join(runs[:3])}"
                          f"{f' and {len(runs) - 3} more' if len(runs) > 3 else ''}): their steps would be pooled",
                          location=where, remedy="export one run per file (hide the others in the chart)")
    step = step_col or next((c for name in METRIC_STEPS for c in cols if c.lower() == name), None)
    return (step, found) if step is not None else None


def series_columns(schema: dict[str, pl.DataType], step_col: str | None, name: str | None = None,
                   where: str = "") -> tuple[str, dict[str, str]] | None:
    """(step column, {field: column}) when the schema is a per-step series, else None.

    A series has a step column, at least one share column of :data:`SERIES_NAMES` and no
    prompt, reward or count column (which would make it a log of samples or prompts); or it is a
    trainer metrics log (:func:`metric_columns`), or a TensorBoard export named by its file ``name``.
    """
    cols = list(schema)
    tb = tensorboard_metric(schema, name)
    if tb is not None:
        return cols[1], {tb: cols[2]}
    metrics = metric_columns(schema, step_col, where)
    if metrics is not None:
        return metrics
    step = step_col or find(cols, STEP_NAMES)
    if step is None:
        return None
    if any(find(cols, names, exclude=(step,)) for names in (PROMPT_NAMES, REWARD_NAMES, N_NAMES, K_NAMES)):
        return None
    mapping = {}
    for field, names in SERIES_NAMES.items():
        col = find(cols, names, exclude=(step, *mapping.values()))
        if col is not None and schema[col].is_numeric():
            mapping[field] = col
    return (step, mapping) if mapping else None


def read_series(lf: pl.LazyFrame, step: str, mapping: dict[str, str], where: str) -> pl.DataFrame:
    """The series as ``step`` plus one Float64 column per field, sorted by step; shares checked in [0, 1]."""
    from .readers import POLARS_ERRORS

    from .reduce import fractional_step_error

    try:
        if err := fractional_step_error(lf.select(pl.col(step)).collect().to_series(), step, where):
            raise err
        df = lf.select(pl.col(step).cast(pl.Int64).alias("step"),
                       *(pl.col(col).cast(pl.Float64).alias(field) for field, col in mapping.items())).collect()
    except POLARS_ERRORS as exc:
        raise SchemaError(f"step column {step!r} or a share column is not numeric (steps must be whole numbers)",
                          location=f"{where}: column {step}", remedy="pass --step-col with an integer column") from exc
    if "observed_mixed" in df.columns:  # ROLL's mixed share: the rest of the groups are silent
        df = df.with_columns((1.0 - pl.col("observed_mixed")).alias("observed_silent") if "observed_silent" not in
                             df.columns else pl.col("observed_silent")).drop("observed_mixed")
        mapping = {("observed_silent" if f == "observed_mixed" else f): c for f, c in mapping.items()}
    shares = [f for f in mapping if f in df.columns]
    # a metrics log's records without these metrics (eval records, the run's summary) are not steps of it
    logged = pl.any_horizontal(pl.col(f).is_not_null() for f in shares)
    df = df.filter(pl.col("step").is_not_null() & logged).sort("step")
    if df["step"].is_duplicated().any():
        dup = df.filter(df["step"].is_duplicated())["step"][0]
        raise SchemaError(f"step {dup} is logged twice (a resumed run logging its steps again, or two runs in one "
                          f"file?)", location=where, remedy="keep one record per step")
    if df.height == 0:
        raise SchemaError("no rows with a step value", location=where)
    for field, col in mapping.items():
        bad = df.filter(~pl.col(field).is_between(0.0, 1.0) & pl.col(field).is_not_null())
        if bad.height:
            raise SchemaError(f"column {col} must hold shares in [0, 1], got {bad[field][0]!r} at step "
                              f"{bad['step'][0]}", location=where)
    return df
