"""SIGINT (Ctrl-C) and SIGTERM on the command line: one line on stderr, exit 2, temporary files removed.

:func:`install` runs first thing in the console script, before the heavy imports (a Ctrl-C in the
first fraction of a second used to print an import traceback). Each signal raises :class:`Stop` in
the main thread, which unwinds (``with`` blocks remove the run's temporary folder) to the CLI's edge,
where it becomes ``sigmaudit: error: interrupted (SIGINT)`` and exit 2.

Native code (a Polars read stalled on a network socket, a JVM call) does not return to Python, so a
handler alone could wait forever: the C-level handler also writes the signal to a wake-up socket, and
a watchdog thread that wakes on it gives the main thread :data:`GRACE` seconds to unwind; if the run
is still going, the watchdog removes the live temporary folders itself, writes the same line and
ends the process with exit 2.

Light on purpose: nothing here imports Polars or Typer, and :func:`install` sets the handlers before it
imports anything more (``socket`` for the wake-up): a signal during the rest of start-up is a :class:`Stop`
that :func:`sigmaudit.cli.run` reports. Before this module is imported only the interpreter's own start-up
(``site``) and two small package ``__init__`` modules run; a Ctrl-C in that window is Python's (issue 36
item 26: a SIGINT 0.26-0.30 s after start raised ``Stop`` out of :func:`install` as a traceback, exit 1).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

GRACE = 3.0
"""Seconds the main thread has to unwind after a signal before the watchdog ends the process."""
MESSAGES = {signal.SIGINT: "interrupted (SIGINT)", signal.SIGTERM: "terminated (SIGTERM)"}

_finished = threading.Event()


class Stop(BaseException):  # noqa: N818 - not an error: a request to stop
    """SIGINT or SIGTERM arrived: unwind and exit 2 (a BaseException, so no ``except Exception`` and
    no Typer/Click ``KeyboardInterrupt`` handler swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def message(self) -> str:
        return MESSAGES.get(self.signum, f"stopped by signal {self.signum}")


_deferring = 0  # depth of deferred() blocks in the main thread
_pending: int | None = None  # a signal that arrived inside one
_received: int | None = None  # the last signal this run's handler took (see check())


def _raise(signum: int, frame: object) -> None:
    global _pending, _received
    _received = signum
    if _deferring:
        _pending = signum  # raised where the deferred block ends
        return
    raise Stop(signum)


def check() -> None:
    """Raise :class:`Stop` if a signal arrived whose Stop never reached the CLI's edge: Python runs a handler
    wherever the main thread is, and a Stop raised inside a weakref callback or a ``__del__`` is printed as
    "Exception ignored" and dropped (seen: importlib's module-lock callback during polars' import; the scan then
    ran to its end and printed its report, exit 0, after the Ctrl-C). Called before a report is written, so a
    Ctrl-C is never answered by output; a longer run is ended by the watchdog (:data:`GRACE`)."""
    if _received is not None and not _deferring:
        raise Stop(_received)


def _unraisable(previous: Any) -> Any:
    """``sys.unraisablehook``: a :class:`Stop` dropped where Python cannot raise it is silent (check() and the
    watchdog still stop the run); anything else goes to ``previous``."""
    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Stop):
            return
        previous(unraisable)

    hook.wraps = previous  # type: ignore[attr-defined]
    return hook


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A SIGINT/SIGTERM that arrives inside is raised as :class:`Stop` when the block ends, not where it arrived:
    for Python code that a native library runs and cannot unwind through. Polars' import runs its Rust start-up
    (``__register_startup_deps``), which imports modules through Python and unwraps the result: a Stop raised in
    one of those imports became a Rust panic, its backtrace on stderr and "internal error" (seen on 3.13, SIGINT
    0.3 s into a scan)."""
    global _deferring, _pending
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _pending is not None:
            signum, _pending = _pending, None
            raise Stop(signum)


NATIVE_START_UPS = ("polars",)
"""Packages whose import runs Python code from native code that cannot unwind a :class:`Stop`; imported inside
:func:`deferred` (:class:`_DeferredImports`)."""


class _DeferredImports:
    """A meta-path finder: the packages of :data:`NATIVE_START_UPS` are found by the finders after it and executed
    inside :func:`deferred`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in NATIVE_START_UPS:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _DeferringLoader(spec.loader)
                return spec
        return None


class _DeferringLoader:
    """A loader that executes the module inside :func:`deferred`; everything else is the wrapped loader's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        with deferred():
            self._inner.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def handle() -> dict[int, object]:
    """Install the raising handlers (main thread only); returns the previous ones for :func:`restore`."""
    global _pending, _received
    if threading.current_thread() is not threading.main_thread():
        return {}
    _pending = _received = None  # a run's own signals (tests run main() many times in one process)
    return {s: signal.signal(s, _raise) for s in MESSAGES}


def restore(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]


def install() -> None:
    """Handlers and the watchdog, for the life of this process (the console script only)."""
    if threading.current_thread() is not threading.main_thread():
        return
    handle()  # first: from here on a signal is a Stop, which run() reports in one line
    if not any(isinstance(f, _DeferredImports) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredImports())
    if not hasattr(sys.unraisablehook, "wraps"):
        sys.unraisablehook = _unraisable(sys.unraisablehook)
    import socket

    try:
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (OSError, ValueError):  # no wake-up: the handlers alone
        return
    threading.Thread(target=_watch, args=(reader, writer), name="sigmaudit-signals", daemon=True).start()


def finished() -> None:
    """The run has reported its outcome: the watchdog stands down."""
    _finished.set()


def decided(code: int) -> None:
    """The outcome is reported: a later SIGINT/SIGTERM (during the exit) ends the process at once with that
    exit code instead of raising a traceback over it."""
    def leave(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

    if threading.current_thread() is threading.main_thread():
        for signum in MESSAGES:
            signal.signal(signum, leave)


def _watch(reader: Any, writer: Any) -> None:
    while True:
        data = reader.recv(64)
        if not data:
            return
        # a command with handlers of its own (watch ends between two polls) is left to them
        signums = [b for b in data if b in MESSAGES and signal.getsignal(b) is _raise]
        if signums:
            break
    if _finished.wait(GRACE):
        return
    last_resort(signums[0])


def last_resort(signum: int) -> None:
    """The main thread is stuck in native code: remove the live temporary folders, one line, exit 2."""
    tempdirs = sys.modules.get("sigmaudit.loaders.tempdirs")
    if tempdirs is not None:
        try:
            tempdirs.remove_live()
        except Exception:  # noqa: BLE001, S110 - leave the rest to the next run's sweep
            pass
    line = f"sigmaudit: error: {MESSAGES.get(signum, 'stopped')}\n"
    streams, supervisor = sys.modules.get("sigmaudit.cli.streams"), sys.modules.get("sigmaudit.cli.supervise")
    if supervisor is not None:
        supervisor.tell(2)
    try:
        os.write(streams.error_fd() if streams is not None else 2, line.encode())
    finally:
        os._exit(2)


def report(stop: Stop | KeyboardInterrupt) -> int:
    """One line on stderr for a signal that arrived before the CLI proper was running; exit 2."""
    message = stop.message if isinstance(stop, Stop) else MESSAGES[signal.SIGINT]
    try:
        sys.stderr.write(f"sigmaudit: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 2
