"""Rollout logs -> per-prompt counts (n samples, k right).

>>> from sigmaudit.loaders import LoadOptions, load_counts
>>> lc = load_counts(["sample_logs/rollouts.parquet"], LoadOptions())  # doctest: +SKIP

Files (parquet, csv, jsonl/ndjson, csv/jsonl as .gz/.zst), directories (recursively) and
globs are accepted together. Each file is scanned lazily and reduced by one streaming group-by;
the math layer only ever sees the resulting counts. See :mod:`.detect` for the layout rules.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from ..errors import InputError, SchemaError, SigmauditError
from .columns import ColumnMap
from .detect import detect
from .options import LAYOUTS, LoadedCounts, LoadOptions
from .paths import expand_paths
from .readers import scan
from .reduce import PARTIAL_SCHEMA, Partial, reduce_counts, reduce_lists, reduce_samples
from .series import read_series, series_columns

__all__ = ["LAYOUTS", "LoadOptions", "LoadedCounts", "load_counts"]


def _reduce(src, plan: ColumnMap, opts: LoadOptions, index: int,  # noqa: ANN001
            tick: Callable[[int], None] | None = None) -> Partial:
    if plan.layout == "counts":
        return reduce_counts(src, plan, opts.samples)
    if plan.list_rewards:
        return reduce_lists(src, plan, opts.threshold, index)
    return reduce_samples(src, plan, opts.threshold, tick)


def load_counts(paths: Sequence[str | Path], opts: LoadOptions | None = None,
                progress: Callable[[int], None] | None = None) -> LoadedCounts:
    """Read rollout logs and reduce them to per-prompt (and per-group) counts.

    ``progress``, if given, is called after each file with the number of samples read so far.
    Raises InputError (unreadable input), SchemaError (columns or values fit no layout) or
    ConfigError (bad options); inputs are never modified.
    """
    opts = opts or LoadOptions()
    files = expand_paths(paths)
    partials: list[pl.DataFrame] = []
    plans: list[ColumnMap] = []
    duplicates = read = missing = 0
    like = None  # the last jsonl file whose schema was inferred (readers.scan may reuse it)
    with tempfile.TemporaryDirectory(prefix="sigmaudit-") as tmp:
        for index, path in enumerate(files):
            src = scan(path, Path(tmp), like)
            if index == 0 and len(files) == 1 and _is_plain(opts):
                found = series_columns(src.schema, opts.step_col)
                if found is not None:
                    return _series(path, src, *found)
            tick = None if progress is None else functools.partial(_tick, progress, read)
            try:
                plan, part = _read(src, opts, index, files, plans, tick)
            except SigmauditError:
                if not src.reused:
                    raise
                # the schema reused from an earlier jsonl file did not fit: read the file as if alone
                src = scan(path, Path(tmp))
                plan, part = _read(src, opts, index, files, plans, tick)
            if src.fmt == "jsonl" and not src.reused:
                like = src
            plans.append(plan)
            partials.append(part.frame)
            duplicates += part.duplicates
            read += part.rows
            missing += part.missing
            if progress is not None:
                progress(read)
    return _assemble(files, plans, partials, duplicates, read, missing)


def _read(src, opts: LoadOptions, index: int, files: list[Path], plans: list[ColumnMap],  # noqa: ANN001
          tick: Callable[[int], None] | None) -> tuple[ColumnMap, Partial]:
    """Detect one file's layout (it must match the first file's) and reduce it."""
    plan = detect(src.schema, opts, str(src.path))
    if plans and plan.layout != plans[0].layout:
        raise SchemaError(
            f"files mix layouts: {files[0]} is {plans[0].layout}, this is {plan.layout}",
            location=str(src.path), remedy="load them in separate runs")
    return plan, _reduce(src, plan, opts, index, tick)


def _tick(progress: Callable[[int], None], before: int, rows: int) -> None:
    progress(before + rows)


def _is_plain(opts: LoadOptions) -> bool:
    """No option names a prompt, reward or count column (which would rule out a series)."""
    return not any((opts.prompt_col, opts.reward_col, opts.group_col, opts.n_col, opts.k_col, opts.rate_col))


def _series(path: Path, src, step: str, mapping: dict[str, str]) -> LoadedCounts:  # noqa: ANN001
    frame = read_series(src.lf, step, mapping, str(path))
    cols = ", ".join(f"{col} as {field}" for field, col in mapping.items())
    return LoadedCounts(
        per_prompt=pl.DataFrame(schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}), per_group=None,
        layout="series", files=(str(path),), n_rows=frame.height, missing_rewards=0, n_single_sample_prompts=0,
        notes=(f"detected a per-step series ({frame.height} steps, step from {step}; {cols}): shares only, "
               "no groups or prompts",),
        reward_source=", ".join(mapping.values()), has_steps=True, series=frame)


def _may_overlap(partials: list[pl.DataFrame], plans: list[ColumnMap]) -> bool:
    """Could one group be split over several files? Not if each file holds its own steps
    (per-step shards) or each row is its own group (grouped layouts)."""
    if len(partials) < 2 or all(p.list_rewards for p in plans):
        return False
    steps = [set(p["step"].unique().to_list()) for p in partials]
    if any(None in s for s in steps):
        return True
    return sum(len(s) for s in steps) != len(set().union(*steps))


SLICE_ROWS = 2_000_000
"""Per-prompt sums over more groups than this are taken slice by slice (smaller hash tables)."""


def _sum_by_prompt(frame: pl.DataFrame) -> pl.DataFrame:
    """n and k summed per prompt, over zero-copy slices of ``frame`` and then over their sums."""
    sums = (pl.col("n").sum(), pl.col("k").sum())
    parts = [part.group_by("prompt").agg(*sums) for part in frame.iter_slices(SLICE_ROWS)]
    if len(parts) <= 1:
        return parts[0] if parts else frame.group_by("prompt").agg(*sums)
    return pl.concat(parts).group_by("prompt").agg(*sums)


def _assemble(files: list[Path], plans: list[ColumnMap], partials: list[pl.DataFrame],
              duplicates: int, n_rows: int, missing: int) -> LoadedCounts:
    if n_rows == 0:
        raise InputError("no data rows", location=", ".join(map(str, files)))
    allp = pl.concat(partials, how="vertical") if partials else pl.DataFrame(schema=PARTIAL_SCHEMA)
    layout = plans[0].layout
    grouped = all(p.has_groups for p in plans)
    per_group = None
    if grouped:
        if _may_overlap(partials, plans):
            allp = (allp.group_by(["step", "gid", "prompt"])
                    .agg(pl.col("n").sum(), pl.col("k").sum())
                    .sort(["step", "prompt", "gid"], nulls_last=True))
        per_group = allp.select("step", "prompt", "n", "k")
        if (per_group["n"] == 0).any():  # filter only when needed: it copies every column
            per_group = per_group.filter(pl.col("n") > 0)
    # One group-by gives both the per-prompt counts and the prompts whose rewards are all
    # missing: dropping per_group's n = 0 rows changes no prompt's sums.
    summed = _sum_by_prompt(allp)
    per_prompt = summed.filter(pl.col("n") > 0).sort("prompt")
    if per_prompt.height == 0:
        raise SchemaError("every reward is missing (null or NaN)", location=str(files[0]),
                          remedy="check --reward-col")
    n_all_missing = summed.height - per_prompt.height
    singles = int((per_prompt["n"] == 1).sum())
    notes = list(dict.fromkeys(p.note for p in plans))
    if len(files) > 1:
        notes.append(f"read {len(files)} files")
    if duplicates:
        notes.append(f"{duplicates} duplicate rows dropped")
    if missing:
        notes.append(f"{missing} missing (null/NaN) rewards excluded, not counted as wrong")
    if n_all_missing:
        notes.append(f"{n_all_missing} prompts dropped: all their rewards are missing")
    if singles:
        have = "prompt has" if singles == 1 else "prompts have"
        notes.append(f"{singles} {have} a single sample (counted; its p̂ is 0 or 1)")
    plan = plans[0]
    reward_source = (plan.k or plan.rate or "") if layout == "counts" else (plan.reward or "")
    if reward_source == "__rewards":
        reward_source = "traces[].reward"
    return LoadedCounts(
        per_prompt=per_prompt, per_group=per_group, layout=layout,
        files=tuple(str(f) for f in files), n_rows=n_rows, missing_rewards=missing,
        n_single_sample_prompts=singles, notes=tuple(notes), reward_source=reward_source,
        has_steps=any(p.step for p in plans))
