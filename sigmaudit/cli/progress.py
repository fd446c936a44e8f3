"""A Rich progress indicator on stderr for long reads (only used on a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def rows_progress() -> Iterator[Callable[[int], None]]:
    """Yield a callback taking the number of rows read so far; shows a spinner with the count, coloured only when
    the report would be (``--color``, NO_COLOR, FORCE_COLOR: :func:`~sigmaudit.cli.settings.use_color`)."""
    import sys

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .settings import use_color

    console = Console(stderr=True, color_system="auto" if use_color(sys.stderr.isatty()) else None)
    with Progress(SpinnerColumn(), TextColumn("reading logs: {task.fields[rows]:,} rows"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("read", total=None, rows=0)

        def update(rows: int) -> None:
            bar.update(task, rows=rows)

        yield update
