"""``sigmaudit scan``: audit rollout logs (silent groups, wasted compute, gradient mass, group size)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs
from ..options import (
    BootstrapOpt,
    EpsOpt,
    EstimatorOpt,
    FormatOpt,
    LevelOpt,
    OutputOpt,
    PostFilterOpt,
    emit_result,
    g_main_option,
    group_size_option,
)

if TYPE_CHECKING:
    from ...audits.scan import ScanReport
    from ...loaders import LoadedCounts


def _check_paths(*, per_prompt: Path | None, **_: object) -> None:
    """Refuse a --per-prompt file type we cannot write before any log is read."""
    if per_prompt is not None:
        from ...writers import table_suffix

        table_suffix(per_prompt, "--per-prompt")


@reads_logs(validate=_check_paths, by_ok=True, series_ok=True)
def scan(
    loaded: LoadedCounts,
    G: Annotated[list[int] | None, group_size_option(
        "Group size G >= 1 to report (repeatable; default 4 8 16 32 64).")] = None,
    g_main: Annotated[int | None, g_main_option(
        "G for wasted compute, finite-G mass and the group-size check (default: most common logged group size, "
        "else 8).")] = None,
    eps: EpsOpt = 0.05,
    per_prompt: Annotated[Path | None, typer.Option(
        "--per-prompt", show_default=False, metavar="FILE",
        help="Also write one row per prompt (prompt, n, k, p_hat, p_posterior_mean, G, silent_rate, estimator) "
             "to FILE (.csv, .parquet or .jsonl), at --g-main.")] = None,
    post_filter: PostFilterOpt = False,
    estimator: EstimatorOpt = "auto",
    bootstrap: BootstrapOpt = 0, level: LevelOpt = 0.9,
    summary: Annotated[bool, typer.Option("--summary", help="Print only the dozen lines a person needs: what "
                                                            "happened first, then predictions.")] = False,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Audit rollout logs: silent groups, wasted compute, gradient mass and group size.

    Silent-group rate for each G (plug-in, unbiased, model-based; the default estimate says which), the silent
    fraction of the logged groups, compute wasted at --g-main, where GRPO and Dr. GRPO spend their gradient, and the
    group size each prompt needs for fidelity φ ≥ 1 − ε.

    --format html writes the report page. Never/always-solved shares: the range the data allow; the prior's point
    inside it only with its interval (--bootstrap N).

    \b
    Example:
      sigmaudit scan rollouts.parquet -G 8 -G 16 -f json
    """
    from ...audits.scan import per_prompt_table
    from ...render import Format
    from ..output import emit, filtered_note, note, resolve_format

    if loaded.layout == "series":
        return _scan_series(loaded, per_prompt=per_prompt, fmt=fmt, output=output, sized=bool(G) or g_main is not None)
    if resolve_format(fmt, output) is Format.html:  # the report of this one scan
        from ...audits.report import build_report

        data = build_report(loaded, G=tuple(G) if G else None, g_main=g_main, eps=eps, estimator=estimator,
                            post_filter=post_filter)
        if data.filtered is not None:
            note(filtered_note(data.filtered))
        emit_result(data, fmt, output)
        return
    report = _audited(loaded, G and tuple(G), g_main, eps, post_filter, estimator, bootstrap, level)  # None: thin
    if report.filtered is not None:
        note(filtered_note(report.filtered))
    if per_prompt is not None:
        from ...writers import write_table

        write_table(per_prompt_table(loaded, report.wasted.G), per_prompt, "--per-prompt")
    if summary and resolve_format(fmt, output) is Format.table:
        from ...views.scan import scan_summary

        return emit("\n".join(scan_summary(report)) + "\n", output)
    emit_result(report, fmt, output)


def _scan_series(loaded: LoadedCounts, *, per_prompt: Path | None, fmt: object, output: Path | None,
                 sized: bool = False) -> None:
    """A per-step series of shares (a trainer's metrics): its observed shares step by step (as ``trend`` shows
    them; the detection note says what needs per-prompt data). ``sized``: -G or --g-main was given (refused)."""
    from ...audits.trend import trend_from_series
    from ...errors import ConfigError
    from ...loaders.series import g_refused, gen_batches_missing
    from ...render import Format
    from ..output import resolve_format

    if sized:
        raise g_refused(loaded.files[0])
    if not set(loaded.series.columns) & {"observed_silent", "observed_all_wrong", "observed_all_correct",  # type: ignore[union-attr]
                                         "pass_rate"}:
        raise gen_batches_missing(loaded.files[0])
    if per_prompt is not None or resolve_format(fmt, output) is Format.html:
        raise ConfigError("needs per-prompt counts, and a per-step series holds only shares",
                          location="--per-prompt" if per_prompt is not None else "--format html",
                          remedy="drop it, or give a rollout dump")
    emit_result(trend_from_series(loaded.series), fmt, output)  # type: ignore[arg-type]


def _audited(loaded: LoadedCounts, G: tuple[int, ...] | None, g_main: int | None, eps: float, post_filter: bool,
             estimator: str, bootstrap: int, level: float) -> ScanReport:
    """:func:`~sigmaudit.audits.scan.audit` of ``loaded`` with ``plan``'s recommendation on the same logs (what to
    do; :func:`recommendation_of`: plan's R rule, rule and the logged G), left out where the logs cannot be planned
    on (a corpus the prior does not identify, a step of fewer than two rollouts: scan says the rest)."""
    from ...audits.plan import with_recommendation
    from ...audits.scan import audit

    return with_recommendation(audit(loaded, G, g_main, eps, post_filter, estimator, bootstrap, level), loaded,
                               estimator=estimator)
