"""Runs are never pooled silently (issue 21 item 6, issue 23 item 16).

Each file belongs to a run: its framework's run folder (``TrainerReader.run_root``: verl's
``rollout_data_dir``, TRL's ``output_dir``, AReaL's trial...), or for a generic layout the file's
folder (part files of one log share a folder; two logs in one folder are not told apart). Files of
one run are one corpus (their groups may be split over files). When two runs hold the same group
keys -- the same (step, prompt), or the same prompt in logs without steps (two experiments over one
dataset, one eval folder per model) -- the load is refused in one line naming the runs and ``--by
run`` (each run audited on its own) and ``--pool-runs``. With ``--pool-runs`` the runs are pooled
with their groups kept apart (groups of 8 never become groups of 16) and a note says so. Runs whose
keys do not meet (per-step shards of one dump) are one corpus, as before.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import SchemaError
from . import trainers
from .options import FileCounts

PSEUDO_COLUMNS = ("run", "file")
"""``--by`` values that name no column of the files: each run (see :func:`roots`), each file."""


def roots(files: Sequence[Any], layouts: Sequence[str]) -> list[Any]:
    """The run of each file (a URL's: its folder, the prefix before its last ``/``)."""
    return [trainers.run_root(f, layout) if isinstance(f, Path) else str(f).rsplit("/", 1)[0]
            for f, layout in zip(files, layouts, strict=True)]


def labels(runs: Sequence[Any]) -> dict[Any, str]:
    """A short name for each run: its path relative to the folder all runs share."""
    distinct = list(dict.fromkeys(runs))
    paths = [str(r) for r in distinct]
    try:
        common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    except ValueError:
        common = ""
    out = {}
    for r, p in zip(distinct, paths, strict=True):
        rel = os.path.relpath(p, common) if common else p
        out[r] = rel if rel not in (".", "") else Path(p).name
    return out


def _shared_keys(frames: Sequence[pl.DataFrame], runs: Sequence[str]) -> int:
    """How many (step, prompt) keys occur under two or more runs."""
    keyed = [f.select("step", "prompt").unique().with_columns(pl.lit(r).alias("run"))
             for f, r in zip(frames, runs, strict=True) if f is not None and f.height]
    if len(keyed) < 2:
        return 0
    both = pl.concat(keyed).unique().group_by("step", "prompt").agg(pl.col("run").n_unique().alias("runs"))
    return int((both["runs"] > 1).sum())


def separate(files: Sequence[Any], counted: Sequence[FileCounts], pool: bool) -> tuple[list[FileCounts], list[str]]:
    """``counted`` (one per file) unchanged when the files hold one run (or runs whose keys never
    meet); with several runs sharing keys, refused -- or with ``pool`` (``--pool-runs``) each group id
    prefixed with its run, and a note."""
    if len(counted) != len(files) or len(files) < 2:
        return list(counted), []
    runs = roots(files, [c.plan.layout if c.plan is not None else "" for c in counted])
    names = labels(runs)
    if len(names) < 2:
        return list(counted), []
    shared = _shared_keys([c.frame for c in counted], [names[r] for r in runs])
    if not shared:
        return list(counted), []
    shown = ", ".join(list(names.values())[:4]) + (", ..." if len(names) > 4 else "")
    has_steps = any(c.frame is not None and c.frame["step"].null_count() < c.frame.height for c in counted)
    key = "(step, prompt) groups" if has_steps else "prompts"
    if not pool:
        raise SchemaError(f"{len(names)} runs in one load ({shown}): {shared:,} {key} appear in more than one, and "
                          f"runs are never pooled silently", location=str(files[0]),
                          remedy="audit each run with --by run, or pool them with --pool-runs")
    out = []
    for c, r in zip(counted, runs, strict=True):
        label = names[r]
        frame = c.frame.with_columns(pl.concat_str([pl.lit(label + "|"), pl.col("gid").fill_null("")]).alias("gid"))
        out.append(dataclasses.replace(c, frame=frame))
    note = (f"pooled {len(names)} runs ({shown}) as asked (--pool-runs, or the overall line of --by run): {shared:,} "
            f"{key} appear in more than one; each logged group is kept within its run")
    return out, [note]


def split(files: Sequence[Path], layout: str, column: str) -> list[tuple[str, list[Path]]]:
    """(name, files) per run (``column`` ``run``) or per file (``file``), in order."""
    keys = roots(files, [layout] * len(files)) if column == "run" else list(files)
    names = labels(keys)
    out: dict[str, list[Path]] = {}
    for f, k in zip(files, keys, strict=True):
        out.setdefault(names[k], []).append(f)
    return list(out.items())
