"""Runs and logs are never pooled silently (issue 21 item 6, issue 23 item 16, issue 35 item 3).

Each file belongs to a run: its framework's run folder (``TrainerReader.run_root``: verl's
``rollout_data_dir``, TRL's ``output_dir``, AReaL's trial...), or for a generic layout the file's
folder. Files of one run are one corpus (their groups may be split over files: part files of one log)
-- unless, for a generic layout, the files of one folder are logs of their own over the same keys (two
tasks over the same ids, two runs each with steps 1..N, one file per model): their keys meet and a file
holds at least :data:`WHOLE_SHARE` of its keys in another, while their names do not say they are parts
of one log (:data:`PART_NAME`: ``part-0``, ``shard_1``, ``-00000-of-00004``...). Then each such file is
its own unit. When two units hold the same group keys -- the same (step, prompt), or the same prompt in
logs without steps -- the load is refused in one line naming them with ``--by run`` (runs) or ``--by
file`` (files), each audited on its own, and ``--pool-runs``. With ``--pool-runs`` the units are pooled
with their groups kept apart (groups of 8 never become groups of 16) and, unless ``--pool-prompts``, each
unit's prompts kept its own (a prompt of two models is two prompts: every prediction is the mean of each
unit's, never one of a pooled pass rate). Units whose keys do not meet (per-step shards of one dump) are
one corpus, as before; groups summed over part files are said in a note (:mod:`.assemble`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl

from ..errors import SchemaError, few
from . import trainers
from .options import FileCounts
from .rules import GENERIC

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


def _keys(frame: pl.DataFrame | None) -> pl.DataFrame:
    """The distinct (step, prompt) keys of one file's counts."""
    if frame is None or not frame.height:
        return pl.DataFrame(schema={"step": pl.Int64, "prompt": pl.Utf8})
    return frame.select("step", "prompt").unique()


def _shared_keys(frames: Sequence[pl.DataFrame], units: Sequence[int]) -> int:
    """How many (step, prompt) keys occur under two or more units (``units[i]``: the unit of ``frames[i]``)."""
    keyed = [_keys(f).with_columns(pl.lit(u).alias("unit")) for f, u in zip(frames, units, strict=True)]
    if len({u for u, f in zip(units, frames, strict=True) if f is not None and f.height}) < 2:
        return 0
    both = pl.concat(keyed).unique().group_by("step", "prompt").agg(pl.col("unit").n_unique().alias("units"))
    return int((both["units"] > 1).sum())


PART_NAME = re.compile(r"(^|[._-])(part|shard|rank|chunk|worker|proc|gpu|node|dp|piece)[._-]?\d+"
                       r"|\d+[._-]?of[._-]?\d+|^\d+$", re.IGNORECASE)
"""A file name that says it is one part of a log written in parts: Spark's ``part-00000-….parquet``, pyarrow's
``part-0.parquet``, Dask's ``part.0.parquet``, Hugging Face's ``train-00000-of-00004.parquet``, a rank's
``rollouts_rank1.jsonl``, a bare number (with a step column: a writer's n-th part)."""
WHOLE_SHARE = 0.5
"""Files of one folder whose keys meet are parts of one log (groups split over them summed) when no file
has this share of its keys in another: a log cut into files splits only the groups at the cuts. From it
on, each file holds a log of its own over the same keys (two tasks over the same ids, two runs with
steps 1..N each), unless the names say they are parts (:data:`PART_NAME`)."""


def part_named(path: Any) -> bool:
    """The file's name says it is one part of a log (:data:`PART_NAME`)."""
    name = PurePosixPath(str(path)).name
    return bool(PART_NAME.search(name.split(".")[0]) or PART_NAME.search(name))


def _whole_logs(members: list[int], files: Sequence[Any], frames: Sequence[pl.DataFrame | None],
                shards: bool = False) -> bool:
    """The files of one folder (indices ``members``) are logs of their own over the same keys, not parts of one
    log: their keys meet, at least one file has :data:`WHOLE_SHARE` of its keys in another, not every name says it
    is a part, and the data do not prove them shards of one log (:func:`shards_of_one_log`; ``shards``: the user
    says they are, ``--shards``)."""
    if len(members) < 2 or shards or all(part_named(files[i]) for i in members):
        return False
    keyed = [_keys(frames[i]).with_columns(pl.lit(j).alias("file")) for j, i in enumerate(members)]
    seen = pl.concat(keyed).group_by("step", "prompt").agg(pl.col("file").n_unique().alias("files"))
    shared = pl.concat(keyed).join(seen.filter(pl.col("files") > 1), on=["step", "prompt"], nulls_equal=True)
    if not shared.height:
        return False
    in_others = shared.group_by("file").len()
    sizes = {j: k.height for j, k in enumerate(keyed)}
    whole = any(n >= WHOLE_SHARE * sizes[j] for j, n in in_others.iter_rows())
    return whole and not shards_of_one_log([frames[i] for i in members])


def shards_of_one_log(frames: Sequence[pl.DataFrame | None]) -> bool:
    """The data prove the files shards of one log, each holding part of every group (issue 43: ``rollouts_0.jsonl``
    and ``rollouts_1.jsonl``, ``engine_0``, ``replica0``, ``host-a``..., whatever their names): a group id found in
    two files with the same step and prompt (an id names one group), or, without group ids, groups whose parts
    differ in size from group to group within a file while the parts' sums are one size for every group (a
    trainer's fixed G dealt to engines unevenly). Files each holding whole groups of one size (two runs, two
    tasks) prove nothing: they stay logs of their own, and so do shards split evenly (4 + 4 of every 8), which the
    data cannot tell from two runs of G = 4 (``--shards`` reads them as one log)."""
    parts = [f.with_columns(pl.lit(j).alias("file")) for j, f in enumerate(frames) if f is not None and f.height]
    if len(parts) < 2:
        return False
    rows = pl.concat([p.select("step", "gid", "prompt", "n", "file") for p in parts])
    ids = rows.filter(pl.col("gid").is_not_null()).group_by("step", "gid", "prompt").agg(pl.col("file").n_unique())
    if ids.height:
        return bool((ids["file"] > 1).any())
    by_file = rows.group_by("step", "prompt", "file").agg(pl.col("n").sum())
    keys = by_file.group_by("step", "prompt").agg(pl.col("file").n_unique().alias("files"), pl.col("n").sum())
    shared = keys.filter(pl.col("files") > 1)
    if shared.height < 2 or shared["n"].n_unique() != 1:
        return False
    split = by_file.join(shared.select("step", "prompt"), on=["step", "prompt"], nulls_equal=True)
    return bool((split.group_by("file").agg(pl.col("n").n_unique())["n"] > 1).any())


def units_of(files: Sequence[Any], counted: Sequence[FileCounts], shards: bool = False) -> tuple[list[Any], bool]:
    """The unit each file belongs to (its run root, or the file itself when the files of a generic log's
    folder are logs of their own: :func:`_whole_logs`), and whether any file is its own unit."""
    runs = roots(files, [c.plan.layout if c.plan is not None else "" for c in counted])
    units: list[Any] = list(runs)
    by_run: dict[Any, list[int]] = {}
    for i, r in enumerate(runs):
        by_run.setdefault(r, []).append(i)
    alone = False
    for members in by_run.values():
        plan = counted[members[0]].plan
        if plan is not None and plan.layout in GENERIC and _whole_logs(members, files, [c.frame for c in counted],
                                                                        shards):
            alone = True
            for i in members:
                units[i] = files[i]
    return units, alone


def separate(files: Sequence[Any], counted: Sequence[FileCounts], pool: bool,
             pool_prompts: bool = False, shards: bool = False) -> tuple[list[FileCounts], list[str]]:
    """``counted`` (one per file) unchanged when the files hold one log (or logs whose keys never meet);
    with several runs (or several files of one folder, each a log of its own) sharing keys, refused -- or with
    ``pool`` (``--pool-runs``) each group id and (unless ``pool_prompts``) each prompt prefixed with its run,
    and a note."""
    if len(counted) != len(files) or len(files) < 2:
        return list(counted), []
    units, alone = units_of(files, counted, shards)
    names = labels(units)
    if len(names) < 2:
        return list(counted), []
    index = {u: i for i, u in enumerate(names)}
    shared = _shared_keys([c.frame for c in counted], [index[u] for u in units])
    if not shared:
        return list(counted), []
    shown = few(names.values())
    has_steps = any(c.frame is not None and c.frame["step"].null_count() < c.frame.height for c in counted)
    key = "(step, prompt) groups" if has_steps else "prompts"
    what = "files, each a whole log of its own," if alone else "runs"
    if not pool:
        raise SchemaError(f"{len(names)} {what} in one load: {shared:,} {key} appear in more than one ({shown}), and "
                          f"{'logs' if alone else 'runs'} are never pooled silently", location=str(files[0]),
                          remedy="audit each file with --by file, or pool them with --pool-runs; if each file holds "
                                 "part of every group (shards of one log), read them as one log with --shards"
                          if alone else
                          "audit each run with --by run, or pool them with --pool-runs")
    out = []
    for c, u in zip(counted, units, strict=True):
        label = names[u]
        columns = [pl.concat_str([pl.lit(label + "|"), pl.col("gid").fill_null("")]).alias("gid")]
        if not pool_prompts:
            columns.append(pl.concat_str([pl.lit(label + " | "), pl.col("prompt")]).alias("prompt"))
        out.append(dataclasses.replace(c, frame=c.frame.with_columns(columns)))
    prompts = ("a prompt's samples from every one counted as one prompt (--pool-prompts)" if pool_prompts else
               "each one's prompts its own (a prompt of two is two prompts, so predictions stay each one's; "
               "--pool-prompts counts them as one)")
    units_are = "files (each a whole log)" if alone else "runs"
    note = (f"pooled {len(names)} {units_are} ({shown}) as asked (--pool-runs, or the overall line of --by run/file): "
            f"{shared:,} {key} appear in more than one; each logged group is kept within its own, and {prompts}")
    return out, [note]


def split(files: Sequence[Path], layout: str, column: str) -> list[tuple[str, list[Path]]]:
    """(name, files) per run (``column`` ``run``) or per file (``file``), in order."""
    keys = roots(files, [layout] * len(files)) if column == "run" else list(files)
    names = labels(keys)
    out: dict[str, list[Path]] = {}
    for f, k in zip(files, keys, strict=True):
        out.setdefault(names[k], []).append(f)
    return list(out.items())
