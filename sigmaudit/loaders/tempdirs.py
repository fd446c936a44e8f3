"""Where decompressed inputs live while a run reads them, and how leftovers are cleaned.

Each run works in ``$TMPDIR/sigmaudit/run-<pid>-<random>``, removed when the run ends (also on
SIGINT/SIGTERM: the CLI turns both into an exception, so the ``with`` block unwinds; if native code
does not return, its watchdog removes the live folders, :func:`remove_live`). A run killed outright
(SIGKILL, power loss) cannot clean up, so each run first sweeps the folders left by others. A folder is
live while its run holds an exclusive ``flock`` on the folder's ``.lock`` file (which names the host);
the lock, not the pid, decides (a pid means nothing across hosts or containers sharing TMPDIR):

- lock held: live, never removed, however old;
- lock free and written on this host: its run is gone, removed;
- lock free but written on another host (whose locks this host may not see, e.g. over NFS), or no lock
  file (a folder being created, or left by an older version): removed only when untouched for
  :data:`STALE_SECONDS`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

FREE_RESERVE = 512 << 20
"""Bytes a run leaves free in TMPDIR when it decompresses or copies an input there."""
STALE_SECONDS = 24 * 3600
"""A folder whose lock this host cannot judge is removed once untouched for this long."""
LOCK = ".lock"
_LIVE: dict[Path, int] = {}
"""This process's run folders and the descriptors holding their locks."""


def temp_root() -> Path:
    """``$TMPDIR/sigmaudit`` (created on first use, private to the user)."""
    root = Path(tempfile.gettempdir()) / "sigmaudit"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def _host() -> str:
    return socket.gethostname() or "?"


def _lock(folder: Path) -> int:
    """Create and hold ``folder/.lock`` (exclusive flock, released when this process dies), naming the host."""
    import fcntl

    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a file system without flock: the age rule alone protects this folder
        pass
    os.write(fd, f"{_host()} {os.getpid()}\n".encode())
    return fd


def _is_stale(entry: Path, age: float) -> bool:
    """The rule of the module docstring for one folder."""
    import fcntl

    try:
        fd = os.open(entry / LOCK, os.O_RDWR)
    except OSError:  # no lock file (being created, or an older version's folder)
        return age > STALE_SECONDS
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # held: the run is alive
        except OSError:  # no flock here: age only
            return age > STALE_SECONDS
        host = os.read(fd, 4096).decode("utf-8", "replace").split(" ")[0]
        return host == _host() or age > STALE_SECONDS
    finally:
        os.close(fd)


def clean_stale(root: Path) -> int:
    """Remove run folders left by runs that no longer exist (see the module docstring); returns how many."""
    removed = 0
    now = time.time()
    for entry in root.glob("run-*"):
        if entry in _LIVE:
            continue
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        if _is_stale(entry, age):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


@contextlib.contextmanager
def run_folder() -> Iterator[Path]:
    """A private folder for this run's temporary files, locked while in use and removed on exit; stale
    ones are cleaned first."""
    root = temp_root()
    clean_stale(root)
    folder = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=root))
    _LIVE[folder] = _lock(folder)
    try:
        yield folder
    finally:
        fd = _LIVE.pop(folder)
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


def remove_live() -> None:
    """Remove this process's run folders now (the CLI's last resort when a signal finds it stuck)."""
    for folder in list(_LIVE):
        shutil.rmtree(folder, ignore_errors=True)


def no_space(exc: BaseException) -> bool:
    """``exc`` (or an error it wraps) says the disk is full."""
    while exc is not None:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(exc) or "os error 28" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def temp_failure(exc: BaseException, folder: Path, location: str):  # noqa: ANN201
    """The InputError for a failure of the temporary folder itself (full disk, or the folder removed
    under a running read), which must not be blamed on the input; None for any other failure."""
    from ..errors import InputError

    if no_space(exc):
        free = _free(folder)
        tmpdir = folder.parent if folder.name.startswith("run-") else folder
        return InputError(f"not enough free space in TMPDIR ({tmpdir}{free}) to hold this run's temporary copy",
                          location=location,
                          remedy="point TMPDIR at a larger disk, or free space there")
    if isinstance(exc, FileNotFoundError) and not folder.exists():
        return InputError(f"the temporary folder {folder} was removed while this run used it (by another "
                          "process sharing TMPDIR?); the input is not at fault", location=location,
                          remedy="run again, or give this run its own TMPDIR")
    return None


def _free(folder: Path) -> str:
    try:
        return f": {shutil.disk_usage(folder if folder.exists() else folder.parent).free / 2**20:,.0f} MiB free"
    except OSError:
        return ""


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held back (delivered when the block ends) in the main thread, where the handlers run."""
    import signal
    import threading

    block = getattr(signal, "pthread_sigmask", None)
    if block is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = block(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def native_stderr_held() -> Iterator[None]:
    """Hold what native code writes to file descriptor 2 while reading: a Rust panic in polars prints
    its message (and, with RUST_BACKTRACE set, a backtrace) there before Python sees the exception.

    On success the held text is written out unchanged; on an exception it is dropped, since the
    caller reports the failure as one line. Python's own ``sys.stderr`` is flushed first.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    with tempfile.TemporaryFile() as held:
        with _signals_deferred():  # a Ctrl-C between the swap and the try would leave 2 in the file
            os.dup2(held.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            with _signals_deferred():
                os.dup2(saved, 2)
                os.close(saved)
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            if not failed:
                held.seek(0)
                while chunk := held.read(1 << 16):
                    os.write(2, chunk)
