"""Per-step series: an already-aggregated curve, one row per training step with shares.

Some logs (and papers) keep only the per-step shares, not the groups: e.g. DAPO's published
"proportion of samples with accuracy 1" per step (``step,allcorrect_fraction``). Such a file has
a step column, no prompt, reward or count columns, and one or more share columns named below.
``sigmaudit trend`` shows it as the observed series; there are no groups to forecast from.
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


def series_columns(schema: dict[str, pl.DataType], step_col: str | None) -> tuple[str, dict[str, str]] | None:
    """(step column, {field: column}) when the schema is a per-step series, else None.

    A series has a step column, at least one share column of :data:`SERIES_NAMES` and no
    prompt, reward or count column (which would make it a log of samples or prompts).
    """
    cols = list(schema)
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

    try:
        df = lf.select(pl.col(step).cast(pl.Int64).alias("step"),
                       *(pl.col(col).cast(pl.Float64).alias(field) for field, col in mapping.items())).collect()
    except POLARS_ERRORS as exc:
        raise SchemaError(f"step column {step!r} or a share column is not numeric (steps must be whole numbers)",
                          location=f"{where}: column {step}", remedy="pass --step-col with an integer column") from exc
    df = df.filter(pl.col("step").is_not_null()).sort("step")
    if df.height == 0:
        raise SchemaError("no rows with a step value", location=where)
    for field, col in mapping.items():
        bad = df.filter(~pl.col(field).is_between(0.0, 1.0) & pl.col(field).is_not_null())
        if bad.height:
            raise SchemaError(f"column {col} must hold shares in [0, 1], got {bad[field][0]!r} at step "
                              f"{bad['step'][0]}", location=where)
    return df
