"""The command-line edge: options, inputs, output, exit codes (``app.py``) and one module per
command (``commands/``). Nothing below this layer imports it.

``run`` (the console script) installs the signal handling (:mod:`.signals`) before it imports the
rest, so a Ctrl-C at any moment is one line and exit 2; ``app`` and ``main`` load on first use.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main", "run"]


def run() -> None:
    """Console-script entry point."""
    from . import signals

    signals.install()
    try:
        from .app import main

        code = main()
    except signals.Stop as stop:  # before main() took over (during the imports)
        code = signals.report(stop)
    signals.finished()
    sys.exit(code)


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from . import app as module

        return getattr(module, name)
    raise AttributeError(name)
