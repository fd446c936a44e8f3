"""The flags every command takes, whatever its own options: ``--color``, ``--full``, ``-q/--quiet``.

They are declared once here and added to each command by :class:`~sigmaudit.cli.help.Command` (a command
that declares one itself, such as ``-q`` on the commands that read logs, keeps its own). Their values live
for one run in :data:`current`, read where the output is made (:func:`~sigmaudit.cli.options.emit_result`,
:func:`~sigmaudit.cli.output.note`), so no command's signature repeats them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


@dataclass
class Settings:
    """One run's global flags."""

    color: Color = Color.auto
    full: bool = False
    quiet: bool = False
    debug: bool = False


current = Settings()
"""The settings of the run in progress (reset by :func:`reset` at the start of every ``main()``)."""


DEBUG_ENV = "SIGMAUDIT_DEBUG"
"""Set to 1 (or ``--debug`` before the command): an error prints its Python traceback before its one line, and a
run prints where each option's value came from."""


def debugging() -> bool:
    """``--debug`` was given, or ``SIGMAUDIT_DEBUG`` is set to anything but 0 or empty."""
    return current.debug or os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def reset() -> None:
    global current
    current = Settings()


def use_color(terminal: bool) -> bool:
    """Colour for a terminal report: ``--color always|never`` decides; ``auto`` colours a terminal unless
    ``NO_COLOR`` is set (no-color.org), and ``FORCE_COLOR`` (any value but empty or 0) colours a pipe too.
    ``NO_COLOR`` wins over ``FORCE_COLOR``; ``--color`` wins over both."""
    if current.color is Color.always:
        return True
    if current.color is Color.never or os.environ.get("NO_COLOR"):
        return False
    return terminal or os.environ.get("FORCE_COLOR", "").strip() not in ("", "0")


ColorOpt = Annotated[Color, typer.Option(
    "--color", case_sensitive=False, metavar="auto|always|never",
    help="Colour in terminal output: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR=1 colours a pipe "
         "too), always or never.")]
FullOpt = Annotated[bool, typer.Option(
    "--full", help="Print the whole audit in the terminal: every table (the default first screen shows the "
                   "headline and what to do; JSON, CSV, markdown and HTML always carry everything).")]
QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="Do not print notes (what was detected, what was dropped) on stderr; warnings stay, and so "
                              "does the line naming what a config file set.")]


def _declared(color: ColorOpt = Color.auto, full: FullOpt = False, quiet: QuietOpt = False) -> None:
    """The global flags as Typer parameters (never called: :func:`params` takes its parameters)."""


_PARAMS: list[Any] | None = None
NAMES = ("color", "full", "quiet")


def params() -> list[Any]:
    """The global flags as the parameters Typer builds for them (built once)."""
    global _PARAMS
    if _PARAMS is None:
        holder = typer.Typer(add_completion=False)
        holder.command()(_declared)
        _PARAMS = list(typer.main.get_command(holder).params)
    return _PARAMS


def take(values: dict[str, Any], own: set[str]) -> None:
    """Move the global flags out of a command's parsed ``values`` into :data:`current` (a flag the command
    declares itself stays in ``values`` too: the command reads it as before)."""
    for name in NAMES:
        if name not in values:
            continue
        if name not in own:
            setattr(current, name, values.pop(name))
        elif name != "quiet":  # a command's own -q decides which of its lines are notes (check's verdict is not)
            setattr(current, name, values[name])
