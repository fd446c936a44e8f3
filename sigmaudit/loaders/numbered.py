"""Steps read from file names (issue 35 item 6): a generic log written one file per step without a step
column -- ``1.jsonl 2.jsonl 3.jsonl`` as verl names its ``{rollout_data_dir}/{global_steps}.jsonl``, or
``step_1.csv``, ``global_step_2.parquet``, ``iter-3.jsonl`` -- holds each step's groups in its own file; read
without the name, every prompt's samples of every step pool into one count and no logged group is known.
When every file of a folder (two or more) of a long or grouped log without step and group columns is named
so, each file's number is its rows' step, and a note says so."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import polars as pl

from ..errors import SchemaError, few
from .options import FileCounts
from .runs import part_named

STEP_WORD = re.compile(r"(?:^|[^a-z])(?:(?:global_?)?step|iter(?:ation)?|epoch)[_-]?$|^$", re.IGNORECASE)
"""The text before a file name's number that says the number is a step (or no text: a bare number)."""
FROM_NAME = "(file name)"
"""The step "column" of a log whose steps come from its file names (no column of the file is called so)."""


def _numbers(files: Sequence[Any]) -> tuple[list[int], bool] | None:
    """(each file's number, the text before it says "step") when the names differ only by one number, else None."""
    tokens = [re.split(r"(\d+)", PurePosixPath(str(f)).name.split(".")[0]) for f in files]
    suffixes = {".".join(PurePosixPath(str(f)).name.split(".")[1:]) for f in files}
    if len({len(t) for t in tokens}) != 1 or len(suffixes) != 1 or len(tokens[0]) < 2:
        return None
    varying = [i for i in range(len(tokens[0])) if len({t[i] for t in tokens}) > 1]
    if len(varying) != 1 or varying[0] % 2 == 0:  # one position, and a number's (odd positions of re.split)
        return None
    at = varying[0]
    return [int(t[at]) for t in tokens], bool(STEP_WORD.search(tokens[0][at - 1]))


def _keys_meet(counted: Sequence[FileCounts]) -> bool:
    """A prompt key appears in two files."""
    seen: set = set()
    for c in counted:
        prompts = set(c.frame["prompt"].unique().to_list()) if c.frame is not None else set()
        if seen & prompts:
            return True
        seen |= prompts
    return False


def _grouped(note: str) -> str:
    """The detection note of a long log without groups, now grouped by the step of its file name."""
    head, sep, _ = note.partition(", no group membership")
    return f"{head}, groups by (step, from the file name)" if sep else note


def steps_from_names(files: Sequence[Any], counted: Sequence[FileCounts]) -> tuple[list[FileCounts], str | None]:
    """``counted`` with each file's step taken from its name when the rule above holds (its plan's step set to
    :data:`FROM_NAME`), and the note; else unchanged and None."""
    plans = [c.plan for c in counted]
    if len(counted) != len(files) or len(files) < 2 or any(
            p is None or p.layout not in ("long", "grouped") or p.step or p.group for p in plans):
        return list(counted), None
    found = _numbers(files)
    folders = {PurePosixPath(str(f)).parent for f in files}
    if found is None or len(set(found[0])) != len(files) or len(folders) != 1 or (
            not found[1] and (_keys_meet(counted) or all(part_named(f) for f in files))):
        return list(counted), None
    steps = found[0]
    out = [dataclasses.replace(c, plan=dataclasses.replace(c.plan, step=FROM_NAME, note=_grouped(c.plan.note)),
                               frame=c.frame.with_columns(pl.lit(s, dtype=pl.Int64).alias("step")))
           for c, s in zip(counted, steps, strict=True)]
    names = [f"{PurePosixPath(str(f)).name} → step {s}" for f, s in zip(files, steps, strict=True)]
    return out, (f"steps read from the file names ({few(names)}): the files have no step column, one file per step; "
                 "--step-col names a column instead")


def numbered_remedy(error: SchemaError, files: Sequence[Any], counted: Sequence[FileCounts]) -> SchemaError:
    """``error`` (files refused as logs of their own) with one more remedy when their names differ only by a number
    that was not read as a step because the files' prompts meet (``train_1``, ``train_2``): it may count steps or
    shards, so the user says which."""
    found = _numbers(files) if len(files) == len(counted) else None
    if found is None or found[1] or any(c.plan is None or c.plan.step or c.plan.group for c in counted):
        return error
    error.remedy = (f"{error.remedy}; if each file is one step, rename them step_N"
                    f"{''.join(PurePosixPath(str(files[0])).suffixes)} (the number is then read as the step)")
    return error
