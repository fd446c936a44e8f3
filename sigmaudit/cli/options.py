"""Options shared by every command, and the one way a command emits its result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..render import Format


def unit_interval(value: float | None) -> float | None:
    """Typer callback: a probability or rate in [0, 1] (None passes)."""
    if value is not None and not 0.0 <= value <= 1.0:
        raise typer.BadParameter(f"must lie in [0, 1], got {value:g}")
    return value


def open_unit_interval(value: float) -> float:
    """Typer callback: ε in the open interval (0, 1)."""
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must lie in the open interval (0, 1), got {value:g}")
    return value


EpsOpt = Annotated[
    float,
    typer.Option("--eps", callback=open_unit_interval, help="Fidelity shortfall ε for the group-size law (φ ≥ 1 − ε)."),
]
FormatOpt = Annotated[
    Format | None,
    typer.Option(
        "--format",
        "-f",
        help="Output format: table (terminal), json, markdown or csv. Default: from -o's suffix, else table.",
        case_sensitive=False,
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write the report to this file (atomically, after success) instead of stdout.",
                 dir_okay=False, show_default=False),
]


def emit_result(result: object, fmt: Format | None, output: Path | None) -> None:
    """Render ``result`` in the chosen format and send it to stdout or ``output``."""
    from ..render import render
    from .output import emit, resolve_format, stdout_is_terminal

    chosen = resolve_format(fmt, output)
    color = chosen is Format.table and output is None and stdout_is_terminal()
    width = None
    if color:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns
    emit(render(result, chosen, color=color, width=width), output)  # type: ignore[arg-type]
