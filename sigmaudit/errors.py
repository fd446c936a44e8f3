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

    def one_line(self, limit: int | None = None) -> str:
        """The message as one line: ``location: message; remedy``. With ``limit``, a line longer than
        that is shortened in the location (its middle) and then the message (its end), never in the
        remedy: what fixes it is the part a reader needs most."""
        location, message, remedy = (" ".join(str(t).split()) if t else "" for t in
                                     (self.location, self.message, self.remedy))
        text = _joined(location, message, remedy)
        if limit is None or len(text) <= limit:
            return text
        location = shorten(location, max(24, limit // 4), middle=True)
        over = len(_joined(location, message, remedy)) - limit
        if over > 0:
            message = shorten(message, max(len(message) - over, limit // 3))
        over = len(_joined(location, message, remedy)) - limit
        if over > 0:
            remedy = shorten(remedy, max(len(remedy) - over, 1))
        return _joined(location, message, remedy)


def _joined(location: str, message: str, remedy: str) -> str:
    text = f"{location}: {message}" if location else message
    return f"{text}; {remedy}" if remedy else text


def shorten(text: str, width: int, middle: bool = False) -> str:
    """``text`` cut to at most ``width`` characters with an ellipsis, at its end or (``middle``: a path,
    whose folder and file name both matter) in its middle."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    if not middle:
        return text[: width - 1] + "…"
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def few(items: object, shown: int = 3, width: int = 60) -> str:
    """A list named in an error or a note: the first ``shown`` items (each at most ``width`` characters,
    cut in its middle) and how many more (``a, b, c and 12 more``), so a long list never pushes the
    remedy past the length an error line may have."""
    names = [shorten(" ".join(str(x).split()), width, middle=True) for x in items]  # type: ignore[attr-defined]
    if len(names) <= shown + 1:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown:,} more"


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


class ResourceError(SigmauditError):
    """The machine, not the input or the options: too little memory for this run (exit 2)."""


_SHORTAGE_MARKS = ("Resource temporarily unavailable", "WouldBlock", "Cannot allocate memory", "memory allocation",
                   "os error 11", "os error 12", "failed to map segment", "Unable to allocate")
"""Text by which a native library's failure says it got no memory or no thread (a thread's stack is memory)."""


def memory_limit() -> int | None:
    """The process's virtual-memory limit in bytes (``ulimit -v``: RLIMIT_AS soft limit), or None without one."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def limit_words() -> str:
    """`` under the virtual-memory limit of N MiB (ulimit -v)`` when there is one, else nothing."""
    limit = memory_limit()
    return "" if limit is None else f" under the virtual-memory limit of {limit / 2**20:,.0f} MiB (ulimit -v)"


def memory_shortage(exc: BaseException) -> ResourceError | None:
    """The ResourceError for an exception that says memory ran out: a MemoryError, or (under a memory limit)
    an OSError ENOMEM/EAGAIN or a native library's text saying an allocation or a thread failed; else None."""
    import errno

    limited = memory_limit() is not None
    if isinstance(exc, MemoryError):
        pass
    elif isinstance(exc, OSError) and exc.errno in (errno.ENOMEM, errno.EAGAIN) and limited:
        pass
    elif not (limited and any(mark in str(exc) for mark in _SHORTAGE_MARKS)):
        return None
    where = limit_words()
    return ResourceError(f"out of memory{where} ({type(exc).__name__})",
                         remedy="raise the limit, or give smaller sizes or fewer files" if where else
                         "free memory, or give smaller sizes or fewer files")
