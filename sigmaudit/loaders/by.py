"""``--by``: one load split by the values of a column, each value its own load (its own corpus)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from ..errors import SchemaError
from .engines.polars import Opened, open_file
from .options import LoadedCounts, LoadOptions
from .pipeline import load_counts
from .readers import POLARS_ERRORS
from .runs import PSEUDO_COLUMNS, split
from .tempdirs import run_folder

NULL_VALUE = "(null)"
"""The ``--by`` value of the rows whose column is null (or that come from a file without it)."""


def load_by(paths: Sequence[str | Path], column: str, opts: LoadOptions | None = None,
            progress: Callable[[int], None] | None = None) -> LoadedCounts:
    """:func:`load_counts` of every row, with ``parts``: the counts of each value of ``column``.

    Each part is its own load (its own corpus, so its own prior fit); rows whose ``column`` is
    null, or that come from a file without it, are the part :data:`NULL_VALUE`. ``run`` and ``file``, when no
    file has such a column, split by run folder or by file (:mod:`.runs`).
    """
    opts = opts or LoadOptions()
    pseudo = column in PSEUDO_COLUMNS
    pooled = load_counts(paths, dataclasses.replace(opts, pool_runs=True) if pseudo else opts, progress)
    if pooled.layout == "series":
        raise SchemaError("a per-step series has no rows to split", location=pooled.files[0],
                          remedy="drop --by")
    files = [Path(f) for f in pooled.files]
    if pseudo and not any(column in _schema(f, opts) for f in files):
        return _by_runs(pooled, files, column, opts)
    values: set[str] = set()
    seen = nulls = False
    have: list[str] = []
    with run_folder() as tmp:
        for path in files:
            item = open_file(path, tmp, opts, series_ok=False)
            assert isinstance(item, Opened)
            have += [c for c in item.src.schema if c not in have]
            if column not in item.src.schema:
                nulls = True  # its rows have no value: they go to "(null)", not nowhere
                continue
            seen = True
            col = pl.col(column).cast(pl.Utf8)
            try:
                found = item.src.lf.select(col.unique()).collect().to_series().to_list()
            except POLARS_ERRORS as exc:
                raise item.src.fail(exc) from exc
            nulls = nulls or None in found
            values.update(v for v in found if v is not None)
    if not seen:
        raise SchemaError(f"--by column {column!r} is in none of the files read",
                          location=", ".join(map(str, files[:3])),
                          remedy=f"pick a column the files have: {', '.join(have[:12])}"
                                 + (f" (and {len(have) - 12} more)" if len(have) > 12 else ""))
    if not values:
        raise SchemaError(f"--by column {column!r} holds only nulls", location=str(files[0]))
    if len(values) > MAX_BY_VALUES:
        raise SchemaError(f"--by column {column!r} holds {len(values):,} values; --by audits each value on its own "
                          f"(at most {MAX_BY_VALUES})", location=str(files[0]),
                          remedy="pick a column of runs, models or datasets; per-prompt figures are in "
                                 "'sigmaudit scan --per-prompt FILE'")
    parts = tuple((v, load_counts(files, dataclasses.replace(opts, subset=(column, v))))
                  for v in sorted(values, key=_natural))
    if nulls:  # rows with no value are audited too, as one more value (issue 23 item 22)
        null_name = NULL_VALUE if NULL_VALUE not in values else f"{NULL_VALUE} (no value)"
        parts += ((null_name, load_counts(files, dataclasses.replace(opts, subset=(column, None)))),)
    notes = (*pooled.notes, f"split by {column}: {len(parts)} values, each audited on its own"
             + (f" (rows with no {column} as {parts[-1][0]!r})" if nulls else ""))
    return dataclasses.replace(pooled, by=column, parts=parts, notes=notes)


def _schema(path: Path, opts: LoadOptions) -> dict:
    with run_folder() as tmp:
        item = open_file(path, tmp, opts, series_ok=False)
        return item.src.schema if isinstance(item, Opened) else {}


def _by_runs(pooled: LoadedCounts, files: list[Path], column: str, opts: LoadOptions) -> LoadedCounts:
    """``--by run`` / ``--by file`` when no file has such a column: each run folder (or file) its own load."""
    groups = split(files, pooled.layout, column)
    if len(groups) > MAX_BY_VALUES:
        raise SchemaError(f"--by {column}: {len(groups):,} {column}s; --by audits each on its own (at most "
                          f"{MAX_BY_VALUES})", location=str(files[0]), remedy="pass fewer files")
    parts = tuple((name, load_counts(members, opts)) for name, members in groups)
    what = "run folders" if column == "run" else "files"
    notes = (*pooled.notes, f"split by {column}: {len(parts)} {what}, each audited on its own")
    return dataclasses.replace(pooled, by=column, parts=parts, notes=notes)


MAX_BY_VALUES = 256
"""Most values a ``--by`` column may hold (each is loaded and audited on its own)."""


def _natural(value: str) -> tuple[int, float, str]:
    """Sort key: numbers in numeric order (2 before 10), then text."""
    try:
        number = float(value)
    except ValueError:
        return (1, 0.0, value)
    return (0, number, value) if number == number else (1, 0.0, value)
