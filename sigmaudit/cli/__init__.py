"""The command-line edge: options, inputs, output, exit codes (``app.py``) and one module per
command (``commands/``). Nothing below this layer imports it.

``run`` (the console script) installs the signal handling (:mod:`.signals`) before it imports the
rest, so a Ctrl-C at any moment is one line and exit 2; ``app`` and ``main`` load on first use.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["app", "main", "run"]


def run() -> None:
    """Console-script entry point."""
    try:
        from . import streams

        streams.guard()  # notes and errors are best-effort: an unwritable stderr changes no report, no exit code
        from . import supervise

        if supervise.needed():  # under ulimit -v: the run in a child, whose native aborts become one line
            _end(supervise.supervise())
        from . import signals
    except KeyboardInterrupt:  # the default handler, before ours: still one line
        _interrupted_early()
    code = 2
    try:
        signals.install()
        code = _run()
    except (signals.Stop, KeyboardInterrupt) as stop:  # before main() took over (start-up, the imports)
        code = signals.report(stop)
    code = _flushed(code)
    supervise.tell(code)
    signals.decided(code)
    signals.finished()
    from . import startup

    startup.finish()
    _end(code)


def _end(code: int) -> None:
    if code == 141:  # standard output closed early: end as Unix tools do, by SIGPIPE (exitcodes.CLOSED_PIPE)
        _die_of_sigpipe()
    _exit_without_teardown(code)
    sys.exit(code)


def _exit_without_teardown(code: int) -> None:
    """End the process with ``code`` as ``sys.exit`` would, less the interpreter's teardown.

    Past the atexit functions, Python's exit frees every module and object one by one: ~0.05 s of a scan of an
    8M-row log, ~0.015 s of a ``check`` of the sample log (issue 45, under strace), nothing a finished run needs.
    So the exit does what that teardown does for the world outside the process -- waits for no thread (returns,
    for the usual exit, if a non-daemon thread still runs), runs the atexit functions (``weakref.finalize`` hooks,
    coverage's data file), flushes standard output and error (returns if that fails: the usual exit reports it) --
    then ends by ``os._exit``. Every file sigmaudit writes is closed (and renamed into place) before this point, and its
    temporary folders are removed by their context managers."""
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    import atexit

    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _interrupted_early() -> None:
    """A Ctrl-C before the handlers: one line (if stderr takes it), exit 2."""
    try:
        sys.stderr.write("sigmaudit: error: interrupted (SIGINT)\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    supervisor = sys.modules.get("sigmaudit.cli.supervise")
    if supervisor is not None:
        supervisor.tell(2)
    os._exit(2)


def _flushed(code: int) -> int:
    """``code`` once standard output is flushed; a reader that went away (``| head -1``) makes it 141."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from .app import closed_pipe

        return closed_pipe()
    except (OSError, ValueError):
        pass
    return code


def _die_of_sigpipe() -> None:
    """Be killed by SIGPIPE (the default action), as ``yes | head`` kills ``yes``; exit 141 where it cannot."""
    import signal

    sys.stderr.flush()
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    os._exit(141)


def _run() -> int:
    """Start-up past the signal handlers, then the CLI."""
    from . import startup

    startup.begin()
    # numpy's OpenBLAS: one thread unless the user chose (before numpy loads). The fits solve and multiply
    # matrices of a few hundred rows, where OpenBLAS's threads cost more than they give, and on a busy machine
    # far more: check --by run on a 34-run leaderboard took 17-20 s user with the default threads, 8.6-10 s with one
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .app import main

    return main()


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from importlib import import_module

        # not ``from . import app``: its name lookup on this package calls this function again (a RecursionError
        # for ``from sigmaudit.cli import main`` in a fresh interpreter)
        return getattr(import_module(f"{__name__}.app"), name)
    raise AttributeError(name)
