"""``sigmaudit reduce``: rows -> the counts table (reduce once, on any engine; audit many times)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs
from ..options import format_option, output_option

if TYPE_CHECKING:
    from ...loaders import LoadedCounts

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
"""No csv: a csv for spreadsheets gets its formula-like cells neutralised, which would change prompt keys."""


def _table_format(ctx: typer.Context, value: str | None) -> str | None:
    """``-f``: parquet or jsonl (eager, so ``-o``'s check below sees it before any log is read)."""
    if value is not None and value.lower() not in ("parquet", "jsonl"):
        raise typer.BadParameter(f"{value!r} is not a table format; choose parquet or jsonl")
    ctx.meta["reduce_format"] = None if value is None else value.lower()
    return ctx.meta["reduce_format"]


def _suffix(ctx: typer.Context, path: Path) -> Path:
    """``-o``: a suffix that names a table format, or any name with ``--format``; never the two disagreeing."""
    named, given = FORMATS.get(path.suffix.lower()), ctx.meta.get("reduce_format")
    if named is None and given is None:
        raise typer.BadParameter(f"{path.name}: name a .parquet or .jsonl file, or give --format")
    if named is not None and given is not None and named != given:
        raise typer.BadParameter(f"{path.name}: the suffix says {named} but --format says {given}; make them agree")
    return path


@reads_logs
def reduce(
    loaded: LoadedCounts,
    quiet: bool,
    table_out: Annotated[Path, output_option("The counts table to write (.parquet or .jsonl; atomically, after "
                                             "success).", callback=_suffix, dir_okay=False, show_default=True)],
    table_format: Annotated[str | None, format_option(
        "Format of the counts table. Default: from -o's suffix (.parquet/.pq or .jsonl/.ndjson).",
        offered=("parquet", "jsonl"), callback=_table_format, is_eager=True)] = None,
) -> None:
    """Reduce rollout logs to the counts table: one row per logged group (step, group_id, prompt,
    n, k), or per prompt (prompt, n, k) when groups are unknown.

    `sigmaudit scan counts.parquet` (and plan, check, trend, report) then give the
    same audit as the logs themselves, without reading a row of them again.

    \b
    Example:
      sigmaudit reduce s3://bucket/run/ --engine spark \\
          -o counts.parquet
    """
    import io

    from ...loaders.handoff import counts_table
    from ...writers import write_file
    from ..output import note

    table = counts_table(loaded)
    output = table_out  # not named `output`: that is a report's -o, checked against report formats
    kind = table_format or FORMATS[output.suffix.lower()]
    if kind == "parquet":
        buf = io.BytesIO()
        table.write_parquet(buf)
        write_file(output, buf.getvalue(), "--output")
    else:
        write_file(output, table.write_ndjson(), "--output")
    if not quiet:
        rows = ("one per logged group" if "group_id" in table.columns
                else "one per prompt: the logs have no group membership")
        note(f"wrote {output}: {table.height:,} rows, {rows} ({loaded.per_prompt.height:,} prompts)")
