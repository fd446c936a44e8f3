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
        from . import signals
    except KeyboardInterrupt:  # the default handler, before ours: still one line
        sys.stderr.write("sigmaudit: error: interrupted (SIGINT)\n")
        sys.exit(2)
    code = 2
    try:
        signals.install()
        code = _run()
    except (signals.Stop, KeyboardInterrupt) as stop:  # before main() took over (start-up, the imports)
        code = signals.report(stop)
    signals.decided(code)
    signals.finished()
    from . import startup

    startup.finish()
    sys.exit(code)


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
        from . import app as module

        return getattr(module, name)
    raise AttributeError(name)
