"""Trainer and evaluator dumps, one module per framework (each module's docstring names the
writer function and the commit it follows; ``docs/trainers.md`` has the table).

A framework module may define any of:

- ``recognize(schema, opts, where) -> ColumnMap | None``: the dump is one row per sample with
  plain columns; the ordinary streaming reduction reads it (verl, the older prime-rl layout).
- ``claims(path, schema) -> bool`` and ``read(path, opts) -> Normalised``: the dump needs
  restructuring; ``read`` returns a long frame (step, group, prompt, reward) that the ordinary
  reduction then counts (see :mod:`._common`). ``claims_path(path)`` for files that are not
  tables at all (inspect_ai's ``.eval`` zip).
- ``skip(path, files) -> str | None``: a file the framework writes beside its rollouts that is
  not rollouts (metadata, metrics, the ``effective`` copy of ``all``): skipped with a note.
- ``check(per_group, missing, plan)``: refuse counts the dump cannot give (verl legacy with a
  prompt drawn twice in one step).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import polars as pl

from ..columns import ColumnMap
from ..options import LoadOptions
from . import (
    areal,
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
from ._common import Normalised

FRAMEWORKS: tuple[ModuleType, ...] = (lm_eval, verl, trl, open_instruct, prime_rl, nemo_rl, areal,
                                       roll, skyrl, inspect_ai)
"""Tried in this order; the first that claims a file reads it."""

BY_LAYOUT = {m.NAME: m for m in FRAMEWORKS}

__all__ = ["BY_LAYOUT", "FRAMEWORKS", "Normalised", "check", "needs_reader", "reader",
           "recognize", "skip_reasons"]


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """The column map for a dump read as rows (a trainer recognised by its keys), or None."""
    for module in FRAMEWORKS:
        fn = getattr(module, "recognize", None)
        plan = fn(schema, opts, where) if fn else None
        if plan is not None:
            return plan
    return None


def needs_reader(path: Path) -> bool:
    """The file is not a table (it must be read by its framework's reader)."""
    return any(getattr(m, "claims_path", None) and m.claims_path(path) for m in FRAMEWORKS)


def reader(path: Path, schema: dict[str, pl.DataType] | None) -> ModuleType | None:
    """The framework module that restructures this file, or None."""
    for module in FRAMEWORKS:
        if getattr(module, "claims_path", None) and module.claims_path(path):
            return module
        if schema is not None and getattr(module, "claims", None) and module.claims(path, schema):
            return module
    return None


def skip_reasons(files: Sequence[Path]) -> dict[Path, str]:
    """Files a framework writes beside its rollouts that are not rollouts, with the reason."""
    known = frozenset(files)  # hashable (and its hash cached): modules cache summaries of it
    out: dict[Path, str] = {}
    for f in files:
        for module in FRAMEWORKS:
            fn = getattr(module, "skip", None)
            reason = fn(f, known) if fn else None
            if reason:
                out[f] = reason
                break
    return out


def check(layout: str, plans: Sequence[ColumnMap], per_group: pl.DataFrame | None,
          missing: int, where: str) -> None:
    """Let the framework refuse group counts its dump cannot give."""
    module = BY_LAYOUT.get(layout)
    fn = getattr(module, "check", None) if module else None
    if fn and per_group is not None:
        fn(per_group, missing, plans, where)
