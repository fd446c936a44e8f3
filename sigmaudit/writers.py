"""Every file sigmaudit writes: reports (``-o``) and per-prompt tables (``--alloc-out``, ...).

Files are written only after the work succeeded; inputs are never opened for writing, and a
path that names one of the inputs read in this process (the same file, also through a symlink or
a hard link: :func:`protect`) is refused rather than replaced.

- ``-`` means standard output.
- A regular file (new or existing) is written atomically: a temporary file in the same folder,
  then a rename, so a reader never sees half a report and a failed run leaves no file.
- A symlink is followed: its target is replaced atomically, the link stays a link.
- A device, FIFO or socket (``/dev/null``, ``/dev/stdout``, a named pipe) is written through,
  never replaced: renaming a file over ``/dev/null`` would destroy it for the whole machine.
- Operating-system failures (full disk, read-only file system, no permission, name too long)
  become one :class:`~sigmaudit.errors.OutputError` line naming the file.
- CSV tables get their formula-like text cells neutralised (:func:`sigmaudit.fmt.csv_cell`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError, OutputError

if TYPE_CHECKING:
    import polars as pl

TABLE_SUFFIXES = (".csv", ".parquet", ".jsonl", ".ndjson")
"""File types of a per-prompt table, chosen by the file's suffix."""

STDOUT = "-"
"""The path that means standard output."""

_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOENT: "cannot create a file in that folder",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "is a directory",
    errno.ELOOP: "too many levels of symbolic links",
}


def is_stdout(path: Path | str | None) -> bool:
    """``-o -``: write to standard output."""
    return path is not None and str(path) == STDOUT


def output_error(path: Path, exc: OSError, flag: str = "-o") -> OutputError:
    """The one-line error for an operating-system failure while writing ``path``."""
    reason = _REASONS.get(exc.errno or 0) or (exc.strerror or type(exc).__name__)
    return OutputError(f"cannot write: {reason}", location=str(path), remedy=f"choose another {flag} path")


_PROTECTED: set[tuple[int, int]] = set()
"""(device, inode) of every input file read by the running command: never written over."""


@contextlib.contextmanager
def guarding_inputs() -> Iterator[None]:
    """One command's run: the inputs it reads (:func:`protect`) are forgotten when it ends (an inode
    number is reused once its file is deleted, so a long-lived process must not keep them)."""
    _PROTECTED.clear()
    try:
        yield
    finally:
        _PROTECTED.clear()


def protect(paths: Iterable[Path | str | int]) -> None:
    """Remember ``paths`` (input logs) so that :func:`write_file` refuses to replace them.

    A path may be an open descriptor (standard input redirected from a file); remote URLs and
    paths that no longer exist are ignored."""
    for p in paths:
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            _PROTECTED.add((st.st_dev, st.st_ino))


def _refuse_input(path: Path, flag: str) -> None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if (st.st_dev, st.st_ino) in _PROTECTED:
        raise OutputError("is one of the input logs; sigmaudit never writes over its inputs",
                          location=str(path), remedy=f"choose another {flag} path")


def write_file(path: Path, data: str | bytes, flag: str = "-o") -> None:
    """Write ``data`` to ``path``: stdout for ``-``, through for devices and FIFOs, else atomically;
    never over an input file (:func:`protect`)."""
    if is_stdout(path):
        _write_stdout(data)
        return
    _refuse_input(path, flag)
    try:
        try:
            mode = os.stat(path).st_mode  # follows symlinks
        except FileNotFoundError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            raise OutputError("is a directory", location=str(path), remedy=f"give {flag} a file name")
        if (mode is not None and not stat.S_ISREG(mode)) or str(path).startswith(_STREAM_PATHS):
            _write_through(path, data)  # open() follows the link to the device, pipe or descriptor
        else:
            target = Path(os.path.realpath(path))  # a symlink is followed (also a chain of them)
            write_atomic(target, data, mode)
    except OSError as exc:
        raise output_error(path, exc, flag) from exc


_STREAM_PATHS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/")
"""Names of already-open descriptors: always written through, whatever they point at."""


def _write_stdout(data: str | bytes) -> None:
    if isinstance(data, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(data)
        sys.stdout.flush()


def _write_through(target: Path, data: str | bytes) -> None:
    """Write into an existing device, FIFO or open descriptor without replacing it."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    if str(target).startswith(_STREAM_PATHS) and stat.S_ISREG(os.stat(target).st_mode):
        flags |= os.O_TRUNC  # `> out.json` with `-o /dev/stdout`: the file holds the report alone
    fd = os.open(target, flags)
    try:
        view = memoryview(raw)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def write_atomic(path: Path, data: str | bytes, old_mode: int | None = None) -> None:
    """Write ``data`` to the regular file ``path`` via a temporary file in the same folder and a rename."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError("folder does not exist", location=str(folder), remedy="create it or choose another path")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        # mkstemp creates the file 0600; give it the mode a plain open() would (or the old file's).
        if old_mode is None and path.is_file():
            old_mode = path.stat().st_mode
        os.chmod(tmp, old_mode & 0o777 if old_mode is not None else 0o666 & ~_umask())
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
    """Write ``frame`` as csv, parquet or jsonl (by ``path``'s suffix) with :func:`write_file`; in a
    csv, text cells a spreadsheet would run as formulas get a leading ``'`` (OWASP CSV injection)."""
    suffix = table_suffix(path, option)
    if suffix == ".parquet":
        buf = io.BytesIO()
        frame.write_parquet(buf)
        write_file(path, buf.getvalue(), option)
    elif suffix == ".csv":
        write_file(path, neutralise_formulas(frame).write_csv(), option)
    else:
        write_file(path, frame.write_ndjson(), option)


def neutralise_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every text cell starting with = + - @ tab or CR prefixed by ``'``."""
    import polars as pl

    from .fmt import FORMULA_START

    def formula(c: str) -> pl.Expr:
        return pl.any_horizontal(*(pl.col(c).str.starts_with(x) for x in FORMULA_START)).fill_null(False)

    text = [c for c, t in frame.schema.items() if t == pl.Utf8]
    return frame.with_columns(pl.when(formula(c)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
                              for c in text)
