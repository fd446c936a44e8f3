"""The counts hand-off: a reduced log as a table that loads back to the same counts.

``sigmaudit reduce`` writes it; a warehouse can write the same table with one SQL statement (README,
"Scaling"); ``sigmaudit scan counts.parquet`` reads it back as the ``counts`` layout, with one row
per logged group when groups are known:

- ``step`` (int64, null when the log has no steps), ``group_id`` (int64, one id per row), ``prompt``
  (string), ``n``, ``k`` (int64): when group membership is known (``per_group``);
- ``prompt``, ``n``, ``k`` only: when it is not (a log without steps or group ids), so the reloaded
  counts have no groups either;
- and, when the log had missing (null or NaN) rewards, ``missing_rewards``: those of each row, excluded
  from its n, with one more row (n = k = 0) per step and prompt where rewards were missing (grouped
  table; per prompt otherwise), so the reloaded counts report the same missing rewards and the same
  prompts whose rewards were all missing.

Shaped rewards read with ``--threshold`` are refused when some group's zero spread (what the observed
figures count) differs from its silence on correctness (what n and k record): the table would audit
differently from the log.
"""

from __future__ import annotations

import polars as pl

from ..errors import SchemaError
from .options import LoadedCounts
from .reduce import HANDOFF_MISSING

GROUPED_COLUMNS = ("step", "group_id", "prompt", "n", "k")
"""Columns of the table when groups are known."""
PROMPT_COLUMNS = ("prompt", "n", "k")
"""Columns of the table when they are not."""


def counts_table(loaded: LoadedCounts) -> pl.DataFrame:
    """The hand-off table for ``loaded`` (see the module docstring); refuses a per-step series."""
    if loaded.layout == "series":
        raise SchemaError("a per-step series has no counts to hand off", location=loaded.files[0])
    if getattr(loaded, "filtered", None) is not None:
        raise SchemaError("this dump was written after zero-variance filtering, which a counts table "
                          "cannot record (its audit would lose the warning)", location=loaded.files[0],
                          remedy="audit the dump itself")
    _refuse_lost_spread(loaded)
    missing = loaded.missing_at if loaded.missing_rewards and loaded.missing_at is not None else None
    if loaded.per_group is None:
        table = loaded.per_prompt.select(pl.col("prompt"), pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64))
        if missing is None:
            return table
        by_prompt = missing.group_by("prompt").agg(pl.col("missing").sum().alias(HANDOFF_MISSING))
        return (table.join(by_prompt, on="prompt", how="full", coalesce=True)
                .with_columns(pl.col("n", "k", HANDOFF_MISSING).fill_null(0)).sort("prompt"))
    table = loaded.per_group.select(
        pl.col("step").cast(pl.Int64), pl.int_range(pl.len(), dtype=pl.Int64).alias("group_id"),
        pl.col("prompt"), pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64))
    if missing is None:
        return table
    extra = missing.select(pl.col("step"), (pl.int_range(pl.len(), dtype=pl.Int64) + table.height).alias("group_id"),
                           pl.col("prompt"), pl.lit(0, pl.Int64).alias("n"), pl.lit(0, pl.Int64).alias("k"),
                           pl.col("missing").alias(HANDOFF_MISSING))
    return pl.concat([table.with_columns(pl.lit(0, pl.Int64).alias(HANDOFF_MISSING)), extra])


def _refuse_lost_spread(loaded: LoadedCounts) -> None:
    """Shaped rewards read with --threshold: the observed figures count a group silent when its raw rewards
    have zero spread (rmin = rmax), which n and k cannot record. SchemaError when some group's zero spread
    differs from its silence on correctness (k = 0 or k = n): its counts would audit differently."""
    groups = loaded.per_group
    if groups is None or "rmin" not in groups.columns:
        return
    spread = (pl.col("rmin") == pl.col("rmax")).fill_null(False)
    unanimous = (pl.col("k") == 0) | (pl.col("k") == pl.col("n"))
    differ = groups.filter(spread != unanimous).height
    if differ:
        raise SchemaError(f"{differ:,} of {groups.height:,} logged groups are silent on correctness (all on one "
                          "side of --threshold) but their raw rewards differ, or the reverse: the observed "
                          "figures count zero spread, which a counts table (n, k) cannot record",
                          location=str(loaded.files[0]) if loaded.files else None,
                          remedy="audit the log itself, with --threshold")
