"""Per-file partial counts -> one :class:`~.options.LoadedCounts`: groups split over files summed,
per-prompt sums, the framework's own check, and every note of the load."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError, SchemaError
from . import trainers
from .columns import ColumnMap, key_note
from .keys import refuse_oversized
from .numbered import numbered_remedy, steps_from_names
from .options import PROMPT_CELLS, FileCounts, LoadedCounts
from .reduce import LENGTH_COLUMNS, PARTIAL_SCHEMA, SPREAD_COLUMNS
from .rules import GENERIC, copies_note, skip_notes
from .runs import separate


def conclude(files: Sequence[Any], counted: Sequence[FileCounts], copies: Sequence[str],
             skipped: dict[Any, str], relogged: Sequence[str] = (),
             pooling: tuple[bool, ...] = (False, False, False), max_group: int | None = None) -> LoadedCounts:
    """The load of ``files`` from their counts (one :class:`FileCounts` per file, or one for all the
    files an engine reduced at once): runs kept apart (:func:`.runs.separate`: refused, or pooled as
    ``pooling`` says: :attr:`.options.LoadOptions.pooling`), assembled, checked by the framework, with
    every note (``relogged``: the notes of :func:`.rules.drop_relogged`); a group formed from a key larger than
    ``max_group`` is refused (:func:`.keys.refuse_oversized`)."""
    counted, named = steps_from_names(files, counted)
    try:
        counted, pooled = separate(files, counted, *pooling)
    except SchemaError as exc:
        raise numbered_remedy(exc, files, counted) from None
    plans = [c.plan for c in counted]
    read = sum(c.rows for c in counted)
    null_keys = sum(c.null_keys for c in counted)
    if null_keys and read == 0:
        raise SchemaError(f"every row has a null prompt key ({key_note(plans[0].prompt)})",
                          location=", ".join(str(f) for f in files),
                          remedy="pick the key column with --prompt-col")
    missing = sum(c.missing for c in counted)
    frames, length_source = _lengths_of(counted)
    loaded = assemble(list(files), plans, frames, sum(c.duplicates for c in counted), read, missing)
    mine = []
    if null_keys:
        mine.append(f"{null_keys} rows with a null prompt key ({key_note(plans[0].prompt)}) dropped")
    if copies:
        mine.append(copies_note(copies))
    refuse_oversized(loaded.per_group, plans, max_group, _locator(files, counted))
    trainers.check(loaded.layout, plans, loaded.per_group, missing, _locator(files, counted))
    norms = [(c.filtered, c.reward_source) for c in counted if c.framework]
    filtered = norms[0][0] if norms and all(n[0] for n in norms) else None
    extra = [*relogged, *(note for c in counted for note in c.extra_notes)]
    notes = [*loaded.notes, *filter(None, [named]), *pooled, *mine, *extra[:3]]
    if len(extra) > 3:
        notes.append(f"... and {len(extra) - 3} more such notes")
    notes.extend(skip_notes(skipped))
    source = norms[0][1] if norms else loaded.reward_source
    where = [c.missing_at for c in counted if c.missing_at is not None and c.missing_at.height]
    if length_source is not None:
        notes.append(f"generated tokens per rollout from {length_source}")
    return dataclasses.replace(loaded, notes=tuple(notes), filtered=filtered, reward_source=source,
                               n_null_keys=null_keys, missing_at=pl.concat(where) if where else None,
                               length_source=length_source)


def _locator(files: Sequence[Any], counted: Sequence[FileCounts]) -> Any:
    """A step -> the file(s) holding its rows (for a framework's refusal to name), else the first file."""
    def locate(step: Any) -> str:
        hits = [str(c.path) for c in counted
                if c.frame is not None and "step" in c.frame.columns and bool((c.frame["step"] == step).any())]
        return ", ".join(hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "") if hits else str(files[0])
    return locate


def _lengths_of(counted: Sequence[FileCounts]) -> tuple[list[pl.DataFrame], str | None]:
    """The files' frames and where their token counts came from: kept only when every file has them from
    one source (else dropped from every frame: tokens are then not known for the load)."""
    frames = [c.frame for c in counted]
    sources = {c.length_source for c in counted}
    if len(sources) == 1 and None not in sources and all(set(LENGTH_COLUMNS) <= set(f.columns) for f in frames):
        return frames, sources.pop()
    return [f.drop([c for c in LENGTH_COLUMNS if c in f.columns]) for f in frames], None


def _may_overlap(partials: list[pl.DataFrame], plans: list[ColumnMap]) -> bool:
    """Could one group be split over several files? Not if each file holds its own steps
    (per-step shards) or each row is its own group (grouped layouts)."""
    if len(partials) < 2 or all(p.list_rewards for p in plans):
        return False
    steps = [set(p["step"].unique().to_list()) for p in partials]
    if any(None in s for s in steps):
        return True
    return sum(len(s) for s in steps) != len(set().union(*steps))


def _ids_over_prompts(allp: pl.DataFrame, plans: list[ColumnMap]) -> str | None:
    """A note when a group-id column holds several prompts under one id (then a group is the rows
    of one prompt under one id: right for a batch id, wrong for an id that is not a group id)."""
    column = next((p.group for p in plans if p.group), None)
    if column is None or allp.height == 0:
        return None
    ids = allp.filter(pl.col("n") > 0).group_by("step", "gid").agg(pl.col("prompt").n_unique().alias("prompts"))
    mixed = int((ids["prompts"] > 1).sum())
    if not mixed:
        return None
    return (f"group id {column!r} holds several prompts under one id ({mixed:,} of {ids.height:,} ids): a group "
            f"is taken as one prompt's rows under one id; if {column!r} is not a group id, name the right "
            f"column with --group-col")


def _split_note(joined: int, files: int, layout: str) -> str | None:
    """The note for groups of a generic log read in parts from several files and summed (a trainer's reader
    knows its own dump's parts: no note)."""
    if joined <= 0 or layout not in GENERIC:
        return None
    return (f"{joined:,} logged groups are split over the {files} files and summed (the files read as parts of one "
            "log); if they are separate logs, audit each with --by file")


SLICE_ROWS = 2_000_000
"""Per-prompt sums over more groups than this are taken slice by slice (smaller hash tables)."""


def _spread_merged(frame: pl.DataFrame) -> tuple[pl.Expr, ...]:
    """The raw-reward range of a group read in parts (its smallest minimum, its largest maximum), and its
    tokens (summed)."""
    spread = (pl.col("rmin").min(), pl.col("rmax").max()) if "rmin" in frame.columns else ()
    return (*spread, *(pl.col(c).sum() for c in LENGTH_COLUMNS if c in frame.columns))


def prompt_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """The groups of ``frame`` (``prompt, n, k``) counted per (prompt, size) cell: ``prompt``, ``n``, ``groups``,
    ``silent`` (groups with k = 0 or k = n), ``k_sum``; in no order. Over zero-copy slices of ``frame`` and then
    over their counts (smaller hash tables)."""
    silent = (pl.col("k") == 0) | (pl.col("k") == pl.col("n"))
    aggs = (pl.len().alias("groups"), silent.sum().alias("silent"), pl.col("k").sum().alias("k_sum"))
    parts = [part.group_by("prompt", "n").agg(*aggs) for part in frame.iter_slices(SLICE_ROWS)]
    if len(parts) <= 1:
        return parts[0] if parts else frame.group_by("prompt", "n").agg(*aggs)
    return pl.concat(parts).group_by("prompt", "n").agg(pl.col("groups", "silent", "k_sum").sum())


def _sum_by_prompt(cells: pl.DataFrame) -> pl.DataFrame:
    """n and k summed per prompt from its (prompt, size) cells (:func:`prompt_cells`)."""
    return cells.group_by("prompt").agg((pl.col("n") * pl.col("groups")).sum().cast(pl.Int64).alias("n"),
                                        pl.col("k_sum").sum().cast(pl.Int64).alias("k"))


def assemble(files: list[Path], plans: list[ColumnMap], partials: list[pl.DataFrame],
              duplicates: int, n_rows: int, missing: int) -> LoadedCounts:
    if n_rows == 0:
        raise InputError("no data rows", location=", ".join(map(str, files)))
    allp = pl.concat(partials, how="vertical") if partials else pl.DataFrame(schema=PARTIAL_SCHEMA)
    layout = plans[0].layout
    grouped = all(p.has_groups for p in plans)
    per_group = None
    split = None
    if grouped:
        if _may_overlap(partials, plans):
            before = allp.height
            allp = (allp.group_by(["step", "gid", "prompt"])
                    .agg(pl.col("n").sum(), pl.col("k").sum(), *_spread_merged(allp))
                    .sort(["step", "prompt", "gid"], nulls_last=True))
            split = _split_note(before - allp.height, len(files), plans[0].layout)
        per_group = allp.select("step", "prompt", "n", "k",
                                *(c for c in (*SPREAD_COLUMNS, *LENGTH_COLUMNS) if c in allp.columns))
        mixed = _ids_over_prompts(allp, plans)
        if (per_group["n"] == 0).any():  # filter only when needed: it copies every column
            per_group = per_group.filter(pl.col("n") > 0)
    # One group-by gives the per-prompt counts, the prompts whose rewards are all missing (dropping per_group's
    # n = 0 rows changes no prompt's sums) and the (prompt, size) cells of the logged groups (the drift test's).
    cells = prompt_cells(allp)
    summed = _sum_by_prompt(cells)
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
        notes.append(f"{duplicates} duplicate rows dropped (a block of rows written twice); "
                     "--keep-duplicates reads them")
    if missing:
        notes.append(f"{missing} missing (null/NaN) rewards excluded, not counted as wrong")
    if n_all_missing:
        notes.append(f"{n_all_missing} prompts dropped: all their rewards are missing")
    if singles:
        have = "prompt has" if singles == 1 else "prompts have"
        notes.append(f"{singles} {have} a single sample (counted; its p̂ is 0 or 1)")
    if grouped and mixed:
        notes.append(mixed)
    if split:
        notes.append(split)
    plan = plans[0]
    reward_source = (plan.k or plan.rate or "") if layout == "counts" else (plan.reward or "")
    if reward_source == "__rewards":  # the older prime-rl layout
        reward_source = "traces[].reward"
    loaded = LoadedCounts(
        per_prompt=per_prompt, per_group=per_group, layout=layout,
        files=tuple(str(f) for f in files), n_rows=n_rows, missing_rewards=missing,
        n_single_sample_prompts=singles, notes=tuple(notes), reward_source=reward_source,
        has_steps=any(p.step for p in plans))
    if per_group is not None:
        loaded.cache[PROMPT_CELLS] = (per_group, cells.filter(pl.col("n") > 0))
    return loaded
