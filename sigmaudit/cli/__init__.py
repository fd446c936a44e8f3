"""The command-line edge: options, inputs, output, exit codes (``app.py``) and one module per
command (``commands/``). Nothing below this layer imports it."""

from __future__ import annotations

from .app import app, main, run

__all__ = ["app", "main", "run"]
