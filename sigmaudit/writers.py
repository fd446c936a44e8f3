"""Every file sigmaudit writes: reports (``-o``) and per-prompt tables (``--alloc-out``, ...).

Files are written atomically — to a temporary file in the same folder, then renamed — and only
after the work succeeded, so a failed run leaves no file and never a half-written one. Inputs are
never opened for writing.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, InputError

if TYPE_CHECKING:
    import polars as pl

TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl", ".ndjson")
"""File types of a per-prompt table, chosen by the file's suffix."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("folder does not exist", location=str(folder), remedy="create it or choose another path")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
        # mkstemp creates the file 0600; give it the mode a plain open() would (or the old file's).
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def table_suffix(path: Path, option: str) -> str:
    """The file type of a table path (its lower-case suffix); ConfigError naming ``option`` when the
    suffix is unknown or the path is a directory."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ConfigError(f"unknown file type {suffix or '(none)'!r}", location=option,
                          remedy="name the file .csv, .parquet or .jsonl")
    if path.is_dir():
        raise ConfigError("is a directory", location=option, remedy="give a file name")
    return suffix


def write_table(frame: pl.DataFrame, path: Path, option: str) -> None:
    """Write ``frame`` as csv, parquet or jsonl (by ``path``'s suffix), atomically."""
    suffix = table_suffix(path, option)
    if suffix == ".parquet":
        buf = io.BytesIO()
        frame.write_parquet(buf)
        write_atomic(path, buf.getvalue())
    elif suffix == ".csv":
        write_atomic(path, frame.write_csv())
    else:
        write_atomic(path, frame.write_ndjson())
