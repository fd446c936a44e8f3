"""One error hierarchy for everything sigmaudit refuses to do.

Every error carries *where* the problem is (``location``: a file, a line, a
column, an option) and *what fixes it* (``remedy``: usually a flag). Only the
CLI edge turns them into a one-line message on stderr and exit code 2.
"""

from __future__ import annotations


class SigmauditError(Exception):
    """Base class: sigmaudit could not run."""

    def __init__(self, message: str, *, location: str | None = None, remedy: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.remedy = remedy

    def one_line(self) -> str:
        """The message as one line: ``location: message (remedy)``."""
        text = self.message
        if self.location:
            text = f"{self.location}: {text}"
        if self.remedy:
            text = f"{text}; {self.remedy}"
        return " ".join(text.split())


class InputError(SigmauditError):
    """A file is missing, unreadable, empty or corrupt."""


class NoDataError(InputError):
    """A file that holds no data: empty, no columns, a header only, not JSON lines from its first
    line, or a JSON document holding no records. Found in a folder or by a glob beside other inputs, it
    is skipped with a note (it is not a log); named, it is refused."""


class SchemaError(SigmauditError):
    """A file was read but its columns or values do not fit any layout."""


class OutputError(SigmauditError):
    """A report or table could not be written (full disk, read-only, no permission, bad path)."""


class ConfigError(SigmauditError):
    """Options are out of range or contradict each other."""
