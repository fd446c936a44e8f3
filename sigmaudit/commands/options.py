"""Options shared by every command, and the one way a command emits its result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..render import Format

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
    from ..output import emit, resolve_format, stdout_is_terminal
    from ..render import render

    chosen = resolve_format(fmt, output)
    color = chosen is Format.table and output is None and stdout_is_terminal()
    width = None
    if color:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns
    emit(render(result, chosen, color=color, width=width), output)  # type: ignore[arg-type]
