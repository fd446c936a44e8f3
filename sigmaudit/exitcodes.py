"""Exit statuses of every sigmaudit command (documented in the README)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """0 ok, 1 a gate or target failed, 2 could not run."""

    OK = 0
    """The command ran and every gate or target it was given holds."""
    FAILED = 1
    """The command ran and a gate (``check``) or target (``plan``) failed."""
    ERROR = 2
    """The command could not run: usage, input or internal error."""
