"""``sigmaudit reduce``: rows -> the counts table (reduce once, on any engine; audit many times)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs
from ..options import output_option

if TYPE_CHECKING:
    from ...loaders import LoadedCounts

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
"""No csv: a csv for spreadsheets gets its formula-like cells neutralised, which would change prompt keys."""


def _suffix(path: Path) -> Path:
    if path.suffix.lower() not in FORMATS:
        raise typer.BadParameter(f"{path.name}: name a .parquet or .jsonl file")
    return path


@reads_logs
def reduce(
    loaded: LoadedCounts,
    quiet: bool,
    table_out: Annotated[Path, output_option("The counts table to write (.parquet or .jsonl; atomically, after "
                                             "success).", callback=_suffix, dir_okay=False, show_default=True)],
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
    kind = FORMATS[output.suffix.lower()]
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
