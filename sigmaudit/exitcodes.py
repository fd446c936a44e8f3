"""Exit statuses of every sigmaudit command (documented in the README)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """0 ok, 1 a gate or target failed, 2 could not run; 141 standard output closed early."""

    OK = 0
    """The command ran and every gate or target it was given holds."""
    FAILED = 1
    """The command ran and a gate (``check``) or target (``plan``) failed."""
    ERROR = 2
    """The command could not run: usage, input or internal error."""
    CLOSED_PIPE = 141
    """Standard output was closed before the report was written (``sigmaudit scan ... | head -1``): the
    process ends as Unix tools do on SIGPIPE (killed by it from the console: the shell shows 128 + 13 =
    141), silently. Not "could not run": a ``pipefail`` script sees the reader's choice, as with ``yes | head``."""
