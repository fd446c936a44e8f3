"""What a framework module returns when its dump needs restructuring, and shared helpers.

A framework whose files are not one row per sample with plain columns (ROLL's one JSON object
of parallel lists, inspect_ai's zip, prime-rl's nested episodes, NeMo-RL's one-element lists...)
reads a file into a :class:`Normalised` long frame: one row per rollout with ``step`` (Int64,
may be null), ``group`` (Utf8, unique within the load), ``prompt`` (Utf8) and ``reward``
(Float64; null = missing), plus any pass-through columns (``data_source``, ``dataset``...).
The ordinary reduction then counts it like any long log.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ...errors import InputError
from ..columns import ColumnMap
from ..options import Filtered
from ..readers import CUT_OFF, Source, cut_off, json_object

FRAME_SCHEMA = {"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8, "reward": pl.Float64}


@dataclass(frozen=True)
class Normalised:
    """One file of a framework dump as a long frame (see the module docstring)."""

    frame: pl.DataFrame
    """Columns ``step``, ``group``, ``prompt``, ``reward`` and pass-through columns."""
    layout: str
    """The framework (one of ``LAYOUTS``)."""
    note: str
    """The detection note: framework, prompt key, group key, step and reward."""
    reward_source: str
    """Where the reward came from, e.g. ``traces[].rewards.*``."""
    filtered: Filtered | None = None
    """Set when this file shows it was written after zero-variance filtering."""
    duplicates: int = 0
    """Rows dropped as written twice."""
    extra_notes: tuple[str, ...] = ()
    """Further one-line notes (e.g. a re-logged batch counted once)."""

    def source(self, path: Path) -> tuple[Source, ColumnMap]:
        """A :class:`Source` over the frame and the column map the reduction needs."""
        frame = self.frame
        for name, dtype in FRAME_SCHEMA.items():
            frame = frame.with_columns(pl.col(name).cast(dtype)) if name in frame.columns else \
                frame.with_columns(pl.lit(None, dtype).alias(name))
        lf = frame.lazy()
        plan = ColumnMap(self.layout, ("prompt",), reward="reward", step="step", group="group",
                         note=self.note)
        return Source(path, path, "frame", lf, dict(frame.schema)), plan


def read_json_lines(path: Path) -> list[dict]:
    """Every JSON object of a jsonl file; a bad line is an InputError with its number."""
    rows = []
    with open(path, encoding="utf-8-sig") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            value, why = json_object(line)
            if value is None:
                text = (f"line {number} is not a JSON object" if why == "not a JSON object"
                        else f"malformed JSON on line {number}: {why}")
                raise InputError(text, location=f"{path}:{number}", remedy=CUT_OFF if cut_off(line, fh) else None)
            rows.append(value)
    return rows


def first_json_line(path: Path) -> dict | None:
    """The first line of a jsonl file as an object, or None (unreadable, not an object); read
    once per file version however many framework modules ask."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _first_json_line(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _first_json_line(path: Path, mtime_ns: int, size: int) -> dict | None:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for line in fh:
                if line.strip():
                    value = json.loads(line)
                    return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None
    return None


def step_from_name(path: Path, pattern: str) -> int | None:
    """The integer captured by ``pattern`` in the file name or one of its folders."""
    for part in (path.name, *(p.name for p in path.parents)):
        m = re.fullmatch(pattern, part)
        if m:
            return int(m.group(1))
    return None


def run_groups(keys: pl.Series, tag: str) -> pl.Series:
    """Group ids for rows where a group is a run of consecutive equal keys.

    Runs are split into blocks of G rows, G the gcd of the run lengths, so a prompt drawn
    twice in a row (a 2G run) gives two groups when every group has G rows.
    """
    if keys.len() == 0:
        return pl.Series("group", [], pl.Utf8)
    frame = pl.DataFrame({"k": keys}).with_columns(
        (pl.col("k").ne_missing(pl.col("k").shift(1))).fill_null(True).cum_sum().alias("run"))
    lengths = frame.group_by("run").len()["len"].to_list()
    g = math.gcd(*lengths)
    frame = frame.with_columns(pl.int_range(pl.len()).over("run").alias("pos"))
    return frame.select(pl.format(f"{tag}:{{}}.{{}}", pl.col("run"), pl.col("pos") // g)
                        .alias("group"))["group"]
