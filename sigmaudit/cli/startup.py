"""Python's cyclic garbage collector around a command's run (the ``sigmaudit`` process only).

Start-up (Typer, the options, numpy, then Polars: ~30,000 objects when a command starts, ~56,000 at the
end of a scan, nearly all living until exit) creates little garbage, yet the collector runs every 700
allocations, traverses the survivors again in its older generations, and all of them once more at exit:
~0.15 s CPU of a 0.8 s scan of the sample log. :func:`begin` (first thing in
:func:`sigmaudit.cli.run`) collects rarely until the command starts; :func:`over` (when the command's
function starts) moves every object alive into the collector's permanent generation (``gc.freeze``) and
restores the usual thresholds, so the data work runs with the collector as Python sets it; :func:`finish`
(after the command) freezes again, so the exit does not traverse them once more. In-process calls of
:func:`sigmaudit.cli.app.main` (tests, library users) never called :func:`begin`, and nothing changes for them.
"""

from __future__ import annotations

import gc

START_THRESHOLD = 20_000
"""Allocations between young collections during start-up (Python's default: 700)."""
_usual: tuple[int, ...] | None = None
"""The thresholds :func:`begin` replaced (None: not in start-up)."""
_begun = False


def begin() -> None:
    """Start-up of the ``sigmaudit`` process: young collections every :data:`START_THRESHOLD` allocations."""
    global _usual, _begun
    _usual = gc.get_threshold()
    _begun = True
    gc.set_threshold(START_THRESHOLD, *_usual[1:])


def over() -> None:
    """The command starts: start-up's objects frozen, the usual thresholds back (once; only after :func:`begin`)."""
    global _usual
    if _usual is not None:
        gc.freeze()
        gc.set_threshold(*_usual)
        _usual = None


def finish() -> None:
    """The command is done (its outputs written): the exit need not traverse what is alive."""
    if _begun:
        gc.freeze()
