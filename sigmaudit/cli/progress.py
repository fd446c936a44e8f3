"""A Rich progress indicator on stderr for long reads (only used on a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def rows_progress() -> Iterator[Callable[[int], None]]:
    """Yield a callback taking the number of rows read so far; shows a spinner with the count."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("reading logs: {task.fields[rows]:,} rows"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("read", total=None, rows=0)

        def update(rows: int) -> None:
            bar.update(task, rows=rows)

        yield update
