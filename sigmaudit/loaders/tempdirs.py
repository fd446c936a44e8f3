"""Where decompressed inputs live while a run reads them, and how leftovers are cleaned.

Each run works in ``$TMPDIR/sigmaudit/run-<pid>-<random>``, removed when the run ends (also on
SIGINT/SIGTERM: the CLI turns both into an exception, so the ``with`` block unwinds). A run
killed outright (SIGKILL, power loss) cannot clean up; the next run removes every
``run-<pid>-*`` folder whose process no longer exists (or that is older than a day).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

STALE_SECONDS = 24 * 3600
"""A run folder older than this is removed even if its pid was reused by another process."""


def temp_root() -> Path:
    """``$TMPDIR/sigmaudit`` (created on first use, private to the user)."""
    root = Path(tempfile.gettempdir()) / "sigmaudit"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale(root: Path) -> int:
    """Remove run folders left by runs that no longer exist; returns how many were removed."""
    removed = 0
    now = time.time()
    for entry in root.glob("run-*"):
        try:
            pid = int(entry.name.split("-")[1])
            old = now - entry.stat().st_mtime > STALE_SECONDS
        except (ValueError, IndexError, OSError):
            continue
        if pid != os.getpid() and (old or not _alive(pid)):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


@contextlib.contextmanager
def run_folder() -> Iterator[Path]:
    """A private folder for this run's temporary files, removed on exit; stale ones are cleaned first."""
    root = temp_root()
    clean_stale(root)
    folder = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=root))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
        os.dup2(held.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                held.seek(0)
                while chunk := held.read(1 << 16):
                    os.write(2, chunk)
