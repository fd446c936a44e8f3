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
- Inside one command's run (:func:`run_outputs`) every output is reserved before the work (a
  temporary file beside each target: an unwritable path fails before a row is read), staged as it is
  written (reports on standard output too), and committed together once the command succeeded: all
  renamed into place, then stdout written. A run that fails leaves none of its outputs, old or new.
- A stream written while the command runs (``watch --events``: :class:`LiveFile`) is reserved the same
  way and put in place at its first write, never before: a run that fails before it has anything to
  say leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
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


def write_file(path: Path, data: str | bytes, flag: str = "-o", *, staged: bool = True) -> None:
    """Write ``data`` to ``path``: stdout for ``-``, through for devices and FIFOs, else atomically;
    never over an input file (:func:`protect`). Inside :func:`run_outputs` the write is staged until
    the run commits (``staged=False``: written now, for a file kept current while a command runs)."""
    if staged and _RUN is not None:
        _RUN.stage(path, data, flag)
        return
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


def _is_through(path: Path) -> bool:
    """A device, FIFO, socket or open descriptor: written through, never replaced."""
    if str(path).startswith(_STREAM_PATHS):
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


class _Slot:
    """One reserved or staged output file: its temporary file beside the target, or a write-through."""

    def __init__(self, path: Path, flag: str) -> None:
        self.path, self.flag = path, flag
        self.through = _is_through(path)
        self.target = path if self.through else Path(os.path.realpath(path))
        self.tmp: Path | None = None
        self.data: bytes | None = None

    def reserve(self) -> None:
        """Check the target can be written and, for a regular file, create its temporary file now."""
        if os.path.isdir(self.target):
            raise OutputError("is a directory", location=str(self.path), remedy=f"give {self.flag} a file name")
        if self.through or self.tmp is not None:
            return
        try:
            os.stat(self.target)  # a name too long, a part of the path that is not a folder, ...
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise output_error(self.path, exc, self.flag) from exc
        folder = self.target.parent
        if not folder.is_dir():
            raise OutputError("folder does not exist", location=str(folder),
                              remedy="create it or choose another path")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.target.name[:200]}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise output_error(self.path, exc, self.flag) from exc
        os.close(fd)
        self.tmp = Path(tmp)

    def stage(self, data: str | bytes) -> None:
        _refuse_input(self.path, self.flag)
        self.reserve()
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if self.through:
            self.data = raw
            return
        assert self.tmp is not None
        try:
            self.tmp.write_bytes(raw)
        except OSError as exc:
            raise output_error(self.path, exc, self.flag) from exc
        self.data = b""  # written (into the temporary file)

    def commit(self) -> None:
        if self.data is None:  # reserved, never written (the command had nothing for it)
            self.discard()
            return
        try:
            if self.through:
                _write_through(self.target, self.data)
                return
            assert self.tmp is not None
            old_mode = self.target.stat().st_mode if self.target.is_file() else None
            os.chmod(self.tmp, old_mode & 0o777 if old_mode is not None else 0o666 & ~_umask())
            os.replace(self.tmp, self.target)
            self.tmp = None
        except OSError as exc:
            raise output_error(self.path, exc, self.flag) from exc

    def discard(self) -> None:
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None


class _Run:
    """One command's outputs (see the module docstring)."""

    def __init__(self) -> None:
        self.slots: dict[str, _Slot] = {}
        self.stdout: list[str | bytes] = []
        self.after: list[Callable[[], None]] = []

    def _slot(self, path: Path, flag: str) -> _Slot:
        slot = _Slot(Path(path), flag)
        return self.slots.setdefault(str(slot.target), slot)

    def reserve(self, path: Path, flag: str) -> None:
        """One of the command's outputs, before any work; two outputs naming one file are refused."""
        if is_stdout(path):
            return
        slot = self._slot(path, flag)
        if slot.flag != flag:
            raise ConfigError(f"{slot.flag} and {flag} name the same file", location=str(path),
                              remedy="give each output its own file")
        slot.reserve()

    def stage(self, path: Path, data: str | bytes, flag: str) -> None:
        if is_stdout(path):
            self.stdout.append(data)
        else:
            self._slot(path, flag).stage(data)

    def commit(self) -> None:
        for slot in self.slots.values():
            slot.commit()
        for data in self.stdout:
            _write_stdout(data)
        for callback in self.after:
            callback()

    def discard(self) -> None:
        for slot in self.slots.values():
            slot.discard()


_RUN: _Run | None = None
"""The running command's outputs (None outside :func:`run_outputs`: every write happens at once)."""


@contextlib.contextmanager
def run_outputs(outputs: Iterable[tuple[Path, str]] = ()) -> Iterator[Callable[[], None]]:
    """One command's outputs: ``outputs`` ((path, flag) pairs) are reserved now; every write inside is
    staged; the caller calls the yielded ``commit`` once the command succeeded. Leaving without a commit
    (an error, a signal) removes every temporary file: no output of a failed run exists."""
    global _RUN
    run, previous = _Run(), _RUN
    _RUN = run

    def commit() -> None:
        global _RUN
        _RUN = previous  # callbacks after the commit write at once
        run.commit()

    try:
        for path, flag in outputs:
            run.reserve(path, flag)
        yield commit
    finally:
        _RUN = previous
        run.discard()  # every temporary file of a run not committed, or that a failed commit left


def after_commit(callback: Callable[[], None]) -> None:
    """Run ``callback`` once the command's outputs are committed (at once outside :func:`run_outputs`):
    a note that names a written file, or a verdict printed after the report."""
    if _RUN is None:
        callback()
    else:
        _RUN.after.append(callback)


def refuse_inputs(outputs: Iterable[tuple[Path, str]]) -> None:
    """OutputError when one of ``outputs`` ((path, flag) pairs) is an input read so far (:func:`protect`)."""
    for path, flag in outputs:
        if not is_stdout(path):
            _refuse_input(Path(path), flag)


class LiveFile:
    """An output written while the command runs, one flushed piece at a time (``watch --events``).

    Reserved like every output of a run (:func:`run_outputs`: its temporary file beside the target, two
    outputs naming one file refused); the first :meth:`write` checks it is not an input
    (:func:`protect`), writes the temporary file and renames it into place, so the old file stays as it
    was until the command has something to write; later writes append. A run committed without a write
    leaves an empty file (there was nothing to report); a failed one leaves the old file. A device or
    FIFO is written through. ``-`` (standard output) is the caller's to refuse or handle."""

    def __init__(self, path: Path, flag: str) -> None:
        self.path, self.flag = Path(path), flag
        slot = _Slot(self.path, flag)
        if _RUN is not None:
            slot = _RUN.slots.setdefault(str(slot.target), slot)
        slot.reserve()
        if not slot.through:
            slot.data = b""  # committed empty when nothing was written
        self._slot = slot
        self._fh: io.BufferedWriter | None = None

    def write(self, text: str) -> None:
        """Append ``text`` now (flushed); OutputError naming the file when it cannot be written."""
        try:
            if self._fh is None:
                self._fh = self._place()
            self._fh.write(text.encode("utf-8"))
            self._fh.flush()
        except OSError as exc:
            raise output_error(self.path, exc, self.flag) from exc

    def _place(self) -> io.BufferedWriter:
        _refuse_input(self.path, self.flag)
        slot = self._slot
        if slot.through:
            return open(slot.target, "ab")  # noqa: SIM115 - kept open for the run: closed by close()
        assert slot.tmp is not None
        fh = open(slot.tmp, "wb")  # noqa: SIM115 - kept open for the run: closed by close()
        old_mode = slot.target.stat().st_mode if slot.target.is_file() else None
        os.chmod(slot.tmp, old_mode & 0o777 if old_mode is not None else 0o666 & ~_umask())
        os.replace(slot.tmp, slot.target)  # the descriptor now writes the file in place
        slot.tmp, slot.data = None, None  # nothing left for the commit to do
        return fh

    def close(self) -> None:
        """Close the file (outside :func:`run_outputs`, a file never written is not created)."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        if _RUN is None:
            self._slot.discard()


def append_file(path: Path, text: str, flag: str) -> None:
    """Append ``text`` to ``path`` now (a log the environment names, e.g. $GITHUB_STEP_SUMMARY: call it
    from :func:`after_commit`), never to an input (:func:`protect`: OutputError). OSError passes up."""
    _refuse_input(path, flag)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


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


def write_table(frame: pl.DataFrame, path: Path, option: str, *, staged: bool = True) -> None:
    """Write ``frame`` as csv, parquet or jsonl (by ``path``'s suffix) with :func:`write_file`; in a
    csv, text cells a spreadsheet would run as formulas get a leading ``'`` (OWASP CSV injection)."""
    suffix = table_suffix(path, option)
    if suffix == ".parquet":
        buf = io.BytesIO()
        frame.write_parquet(buf)
        write_file(path, buf.getvalue(), option, staged=staged)
    elif suffix == ".csv":
        write_file(path, neutralise_formulas(frame).write_csv(), option, staged=staged)
    else:
        write_file(path, frame.write_ndjson(), option, staged=staged)


def neutralise_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every text cell starting with = + - @ tab or CR prefixed by ``'``."""
    import polars as pl

    from .fmt import FORMULA_START

    def formula(c: str) -> pl.Expr:
        return pl.any_horizontal(*(pl.col(c).str.starts_with(x) for x in FORMULA_START)).fill_null(False)

    text = [c for c, t in frame.schema.items() if t == pl.Utf8]
    return frame.with_columns(pl.when(formula(c)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
                              for c in text)
