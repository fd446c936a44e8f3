"""``sigmaudit report``: one self-contained HTML page of charts and tables (scan, plan, trend)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...render import Format
from ..inputs import reads_logs
from ..options import (
    EpsOpt,
    EstimatorOpt,
    PostFilterOpt,
    format_option,
    g_main_option,
    group_size_option,
    max_silent_option,
    min_fidelity_option,
    output_option,
)

if TYPE_CHECKING:
    from ...loaders import LoadedCounts

DEFAULT_OUTPUT = Path("sigmaudit-report.html")
REPORT_FORMATS = (Format.html, Format.json)
_TARGETS = "Targets (for the recommendation)"


@reads_logs(formats=(Format.html, Format.json), by_ok=True)
def report(
    loaded: LoadedCounts,
    output: Annotated[Path | None, output_option(
        "File to write (atomically, only after success); its suffix picks the format; '-' is stdout. "
        "Default: sigmaudit-report.html (or .json with --format json) in the current folder.")
    ] = None,
    fmt: Annotated[Format | None, format_option(
        "html (the page, default) or json (every number the page shows).", offered=REPORT_FORMATS)] = None,
    G: Annotated[list[int] | None, group_size_option(
        "Group size for the silent-group table and the G sweep (repeatable; default: scan 4…64, "
        "sweep 2…256).")] = None,
    g_main: Annotated[int | None, g_main_option(
        "G for wasted compute, finite-G mass and the group-size check; marked on the charts when no G is "
        "recommended (default: most common logged group size, else 8).")] = None,
    eps: EpsOpt = 0.05,
    estimator: EstimatorOpt = "auto",
    max_silent: Annotated[float | None, max_silent_option(
        "Recommend the smallest swept G with silent rate at most X.", rich_help_panel=_TARGETS)] = None,
    min_fidelity: Annotated[float | None, min_fidelity_option(
        "Recommend the smallest swept G with mean fidelity φ at least Y.", rich_help_panel=_TARGETS)] = None,
    title: Annotated[str | None, typer.Option("--title", show_default=False,
                                              help="Page title (default: names the first file).")] = None,
    post_filter: PostFilterOpt = False,
    quiet: bool = False,
) -> None:
    """Write one self-contained HTML report: charts and tables for people who would rather look than read.

    Pass-rate histogram (never/always-solved marked), silent rate versus G split into all-wrong and all-correct,
    fidelity versus G at the quartiles of p̂, GRPO vs Dr. GRPO gradient mass by difficulty, silent groups per
    training step (when the logs have steps), then the scan and plan tables (with --by, a table of each value's
    scan). A post-filter log is flagged at the top (and on stderr). The page has inline SVG and CSS only: it opens
    offline and makes no network request. Targets only choose the G marked as recommended: the report exits 0 even
    when none is met (use 'plan' or 'check' as a gate). Writes sigmaudit-report.html in the current folder unless -o
    says otherwise; the path is printed on stderr.

    \b
    Example:
      sigmaudit report rollouts.parquet --max-silent 0.5 \\
          -o report.html
    """
    from ...audits.plan import Targets
    from ...audits.report import build_report
    from ..options import emit_result
    from ..output import filtered_note, is_stdout, note

    data = build_report(loaded, G=tuple(G) if G else None, g_main=g_main, eps=eps, estimator=estimator,
                        targets=Targets(max_silent, min_fidelity), title=title, post_filter=post_filter)
    if output is None:
        output = DEFAULT_OUTPUT.with_suffix(".json") if fmt is Format.json else DEFAULT_OUTPUT
    if data.filtered is not None:
        note(filtered_note(data.filtered))
    emit_result(data, fmt, output, default=Format.html, offered=REPORT_FORMATS)
    if not is_stdout(output) and not quiet:
        from ...writers import after_commit

        written = output
        after_commit(lambda: note(f"wrote {written} ({written.stat().st_size / 1024:,.0f} KiB)"))
