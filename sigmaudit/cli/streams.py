"""Standard error as a best-effort channel (the ``sigmaudit`` process only).

Notes, progress, the gate's verdict line and error messages go to stderr; the report goes to stdout or
``-o``, and the exit code says what happened. When stderr cannot be written (``2>/dev/full``, a full CI-log
volume, ``2>&-``) a failed write must not change either (issue 44: every command exited 1, the gate-failed
code, with no report). :func:`guard` makes every write and flush of ``sys.stderr`` best-effort, and gives a
closed descriptor 2 to ``/dev/null`` first, so a file the run opens never lands on descriptor 2 (where a
native library's message to stderr would write into it).

``sys.stderr`` then writes to a duplicate of descriptor 2 taken at start-up (:func:`error_fd`), not to
descriptor 2 itself: the polars reader holds descriptor 2 in a temporary file while it reads (a Rust
panic's text, :func:`sigmaudit.loaders.tempdirs.native_stderr_held`), and a Ctrl-C that landed while it
was swapped sent the one-line message into that file (issue 44: exit 2, nothing on stderr).

Light on purpose: it runs at start-up, before the heavy imports.
"""

from __future__ import annotations

import os
import sys
from typing import Any


class BestEffort:
    """A text stream whose ``write``/``flush`` never raise for an unwritable destination; the rest is the
    wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.failed = False
        """True once a write or flush failed (nothing more is attempted)."""

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                return int(self._stream.write(text))
            except (OSError, ValueError):
                self.failed = True
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.failed:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.failed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _reopen_closed_fd2() -> None:
    """Descriptor 2 closed (``2>&-``): point it at ``/dev/null`` (the next descriptor opened would take it)."""
    try:
        os.fstat(2)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 2:
            os.dup2(fd, 2)
            os.close(fd)


_fd: int = 2
"""The descriptor ``sys.stderr`` writes to (a duplicate of 2 after :func:`guard`)."""


def error_fd() -> int:
    """Where a last line goes by ``os.write`` (the signal watchdog): the start-up stderr, whatever 2 is now."""
    return _fd


def guard() -> None:
    """``sys.stderr`` best-effort for the life of the process, on a duplicate of descriptor 2 (a closed one
    reopened on ``/dev/null`` first)."""
    global _fd
    if isinstance(sys.stderr, BestEffort):
        return
    old = sys.stderr
    try:
        _reopen_closed_fd2()
        if old is not None:
            old.flush()
        _fd = os.dup(2)
        os.set_inheritable(_fd, False)
        stream: Any = open(_fd, "w", encoding=getattr(old, "encoding", None) or "utf-8",  # noqa: SIM115
                           errors="backslashreplace", buffering=1, closefd=False)
    except (OSError, ValueError):
        stream = old if old is not None else open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    sys.stderr = BestEffort(stream)
