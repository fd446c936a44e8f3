"""Turning a reward column into right/wrong.

Accepted without options: booleans, 0/1, and ±1 (−1 is wrong). Any other real value needs a
threshold (reward >= threshold is right). Null and NaN rewards are *missing*: counted,
excluded, never treated as wrong. Text rewards are refused.
"""

from __future__ import annotations

import polars as pl

from ..errors import SchemaError

BINARY_VALUES = (0.0, 1.0, -1.0)


def is_reward_dtype(dtype: pl.DataType) -> bool:
    """Numeric or boolean."""
    return dtype == pl.Boolean or dtype.is_numeric()


def check_reward_dtype(dtype: pl.DataType, column: str, where: str) -> None:
    """Refuse text (and other non-numeric) reward columns with the flag that helps."""
    if not is_reward_dtype(dtype):
        raise SchemaError(
            f"reward column {column!r} holds {dtype} values, not numbers or booleans",
            location=f"{where}: column {column}",
            remedy="convert rewards to 0/1, or choose another column with --reward-col",
        )


def reward_flags(x: pl.Expr, threshold: float | None) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(valid, correct, bad) boolean expressions for a Float64 reward expression ``x``.

    ``bad`` marks a valid value that is not binary when no threshold is set.
    """
    valid = x.is_not_null() & x.is_not_nan()
    if threshold is None:
        correct = valid & (x == 1.0)
        bad = valid & ~x.is_in(BINARY_VALUES)
    else:
        correct = valid & (x >= threshold)
        bad = pl.lit(False)
    return valid, correct, bad


def non_binary_error(values: list[float], column: str, where: str, twin: str | None = None) -> SchemaError:
    """The error for non-binary rewards, quoting a few of them; ``twin``: a binary column beside it to name."""
    shown = ", ".join(_exact(v) for v in values[:5])
    beside = f"; column {twin!r} beside it holds 0/1 only" if twin else ""
    return SchemaError(
        f"reward column {column!r} is not binary (values such as {shown}){beside}",
        location=f"{where}: column {column}",
        remedy=(f"pass --reward-col {twin} to read it, or " if twin else "pass ")
        + "--threshold T (reward >= T counts as correct)",
    )


def _exact(value: float) -> str:
    """A reward as short as it reads back exactly: 0.5, 2, but 1.0000001 (never "1", which would
    hide why it is not binary)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))
