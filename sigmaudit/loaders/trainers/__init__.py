"""Trainer and evaluator dumps, one module per framework (each module's docstring names the
writer function and the commit it follows; ``docs/trainers.md`` has the table).

Each framework module defines one :class:`TrainerReader` (``READER``), the protocol every
framework implements: ``recognize`` (a dump read as rows with plain columns), ``claims_path`` /
``claims`` and ``read`` (a dump restructured into a :class:`Normalised` long frame), ``skip``
(files written beside the rollouts that are not rollouts), ``repeats`` (files logging again rows
of another file, with proof from the writer's structure) and ``check`` (refuse counts the dump
cannot give). Files ending in ``.gz`` or ``.zst`` are recognised and read by their writer's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..columns import ColumnMap
from ..options import LoadOptions
from . import (
    areal,
    atropos,
    inspect_ai,
    lm_eval,
    nemo_rl,
    open_instruct,
    prime_rl,
    roll,
    skyrl,
    trl,
    verl,
)
from ._common import Normalised, Repeats, TrainerReader, refuse_ignored

FRAMEWORKS: tuple[TrainerReader, ...] = tuple(m.READER for m in (
    lm_eval, verl, trl, open_instruct, prime_rl, nemo_rl, areal, roll, skyrl, inspect_ai, atropos))
"""Tried in this order; the first that claims a file reads it."""

BY_LAYOUT = {r.name: r for r in FRAMEWORKS}

__all__ = ["BY_LAYOUT", "FRAMEWORKS", "Normalised", "Repeats", "TrainerReader", "check", "drop_repeats",
           "needs_reader", "reader", "recognize", "refuse_ignored", "run_root", "skip_reasons"]


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """The column map for a dump read as rows (a trainer recognised by its keys), or None."""
    for framework in FRAMEWORKS:
        plan = framework.recognize(schema, opts, where)
        if plan is not None:
            return plan
    return None


def needs_reader(path: Path) -> bool:
    """A framework reader claims the file from its name and first line (no table scan needed)."""
    return any(f.claims_path(path) for f in FRAMEWORKS)


def reader(path: Path, schema: dict[str, pl.DataType] | None) -> TrainerReader | None:
    """The framework reader that restructures this file, or None."""
    for framework in FRAMEWORKS:
        if framework.claims_path(path):
            return framework
        if schema is not None and framework.claims(path, schema):
            return framework
    return None


def skip_reasons(files: Sequence[Path]) -> dict[Path, str]:
    """Files a framework writes beside its rollouts that are not rollouts, with the reason."""
    known = frozenset(files)  # hashable (and its hash cached): modules cache summaries of it
    out: dict[Path, str] = {}
    for f in files:
        for framework in FRAMEWORKS:
            reason = framework.skip(f, known)
            if reason:
                out[f] = reason
                break
    return out


def drop_repeats(files: list[Path], keep: bool) -> tuple[list[Path], list[str]]:
    """(files without those a framework proves are its batch logged again, the notes). With ``keep``
    (``--keep-duplicates``) every file is kept and the note says what was kept."""
    local = [f for f in files if isinstance(f, Path)]
    dropped: dict[Path, str] = {}
    notes: list[str] = []
    for framework in FRAMEWORKS:
        found = framework.repeats(local)
        dropped.update(found.dropped)
        notes.extend(found.notes)
    if keep:
        if dropped:
            notes = [f"{len(dropped)} file{'s' if len(dropped) > 1 else ''} logging again the batch of the "
                     f"file before (e.g. {next(iter(dropped)).name}) read as well (--keep-duplicates)",
                     *(n for n in notes if "counted once" not in n)]
        return files, notes
    return [f for f in files if f not in dropped], notes


def run_root(path: Path, layout: str) -> Path:
    """The run a file belongs to: its framework's run folder (:meth:`TrainerReader.run_root`); for a
    generic layout (long, grouped, counts) its folder (the part files of one log share a folder, and
    their groups may be split over them)."""
    framework = BY_LAYOUT.get(layout)
    return framework.run_root(path) if framework is not None else path.parent


def check(layout: str, plans: Sequence[ColumnMap], per_group: pl.DataFrame | None,
          missing: int, where: Callable[[Any], str]) -> None:
    """Let the framework refuse group counts its dump cannot give (``where``: a step -> the file(s) holding it)."""
    framework = BY_LAYOUT.get(layout)
    if framework is not None and per_group is not None:
        framework.check(per_group, missing, list(plans), where)
