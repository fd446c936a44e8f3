"""``sigmaudit check``: a CI gate on rollout logs at one group size G."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ...core.weighting import EXTREME
from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.check import Threshold
    from ...loaders import LoadedCounts

from ..options import FormatOpt, OutputOpt, PostFilterOpt, emit_result, unit_interval

_GATE = "Thresholds (at least one)"


def _rate(help_text: str, flag: str) -> object:
    return typer.Option(flag, rich_help_panel=_GATE, show_default=False, help=help_text, callback=unit_interval)


def _thresholds(
    *, max_silent: float | None, max_all_wrong: float | None, max_all_correct: float | None,
    max_extreme_share: float | None, min_fidelity: float | None, max_never_solved: float | None, **_: object,
) -> list[Threshold]:
    """The thresholds given (each already checked to lie in [0, 1]); at least one is required."""
    from ...audits.check import Threshold
    from ...errors import ConfigError

    given = {"silent_rate": max_silent, "all_wrong_rate": max_all_wrong, "all_correct_rate": max_all_correct,
             "extreme_share": max_extreme_share, "fidelity": min_fidelity, "never_solved_rate": max_never_solved}
    thresholds = [Threshold(name, v) for name, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check",
                          remedy="e.g. --max-silent 0.4 (see 'sigmaudit check --help')")
    return thresholds


@reads_logs(validate=_thresholds, by_ok=True)
def check(
    loaded: LoadedCounts,
    G: Annotated[int, typer.Option("-G", "--group-size", min=1, help="Group size the training run uses.")],
    max_silent: Annotated[float | None, _rate("Fail when the silent rate exceeds X.", "--max-silent")] = None,
    max_all_wrong: Annotated[float | None, _rate("Fail when the all-wrong rate exceeds X.", "--max-all-wrong")] = None,
    max_all_correct: Annotated[float | None, _rate("Fail when the all-correct rate exceeds X.",
                                                   "--max-all-correct")] = None,
    max_extreme_share: Annotated[float | None, _rate(
        f"Fail when the share of GRPO gradient mass on {EXTREME.describe('p̂')} exceeds X.",
        "--max-extreme-share")] = None,
    min_fidelity: Annotated[float | None, _rate("Fail when the mean fidelity φ at G is below Y.",
                                                "--min-fidelity")] = None,
    max_never_solved: Annotated[float | None, _rate("Fail when the share of prompts with k = 0 exceeds X.",
                                                    "--max-never-solved")] = None,
    post_filter: PostFilterOpt = False,
    groups_generated: Annotated[int | None, typer.Option(
        "--groups-generated", min=1, show_default=False,
        help="Groups sampled before the zero-variance filter: on a post-filter log, --max-silent is then "
             "checked against the pre-filter silent fraction (N - logged + silent logged) / N.")] = None,
    allow_filtered: Annotated[bool, typer.Option(
        "--allow-filtered", help="Check silent/all-wrong/all-correct thresholds on a post-filter log anyway "
                                 "(they read understated rates).")] = False,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Gate: exit 0 when every threshold holds at G, 1 when any fails, 2 when it cannot run.

    Silent rates use the scan's default estimate (unbiased when every prompt has n ≥ G samples,
    else bayes). On a post-filter log (the dump says so, --post-filter, or no silent group where
    some are expected) a silent/all-wrong/all-correct threshold exits 2 unless --groups-generated
    N or --allow-filtered. With --by, fails when any value fails. Under GitHub Actions
    (GITHUB_ACTIONS set) each failure is also printed on stderr as an ::error:: annotation and a
    markdown summary is appended to $GITHUB_STEP_SUMMARY.

    Example: sigmaudit check rollouts.parquet -G 16 --max-silent 0.4 --min-fidelity 0.85
    """
    import os
    import sys

    from ...audits.check import check_logs, github_annotations
    from ...exitcodes import ExitCode

    thresholds = _thresholds(max_silent=max_silent, max_all_wrong=max_all_wrong, max_all_correct=max_all_correct,
                             max_extreme_share=max_extreme_share, min_fidelity=min_fidelity,
                             max_never_solved=max_never_solved)
    result = check_logs(loaded, G, thresholds, post_filter=post_filter, groups_generated=groups_generated,
                        allow_filtered=allow_filtered)
    emit_result(result, fmt, output)
    if result.failed_groups:
        from ..output import note

        note(f"check failed for {result.by.column} = {', '.join(result.failed_groups)}")  # type: ignore[union-attr]
    if os.environ.get("GITHUB_ACTIONS"):
        for line in github_annotations(result):
            sys.stderr.write(line + "\n")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            from ...render import Format, render
            from ...views import build_view

            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render(build_view(result), Format.markdown) + "\n")
    raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.FAILED))
