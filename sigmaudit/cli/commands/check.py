"""``sigmaudit check``: a CI gate on rollout logs at one group size G."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.check import Threshold
    from ...loaders import LoadedCounts

from ..options import FormatOpt, OutputOpt, emit_result

_GATE = "Thresholds (at least one)"


def _rate(help_text: str, flag: str) -> object:
    return typer.Option(flag, rich_help_panel=_GATE, show_default=False, help=help_text)


def _thresholds(
    *, max_silent: float | None, max_all_wrong: float | None, max_all_correct: float | None,
    max_extreme_share: float | None, min_fidelity: float | None, max_never_solved: float | None, **_: object,
) -> list[Threshold]:
    """The thresholds given, each checked to lie in [0, 1]; at least one is required."""
    from ...audits.check import METRICS, Threshold
    from ...errors import ConfigError

    given = {"silent_rate": max_silent, "all_wrong_rate": max_all_wrong, "all_correct_rate": max_all_correct,
             "extreme_share": max_extreme_share, "fidelity": min_fidelity, "never_solved_rate": max_never_solved}
    for name, value in given.items():
        if value is not None and not 0.0 <= value <= 1.0:
            raise ConfigError(f"must lie in [0, 1], got {value:g}", location=METRICS[name][1],
                              remedy="give a rate such as 0.3")
    thresholds = [Threshold(name, v) for name, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check",
                          remedy="e.g. --max-silent 0.4 (see 'sigmaudit check --help')")
    return thresholds


@reads_logs(validate=_thresholds)
def check(
    loaded: LoadedCounts,
    G: Annotated[int, typer.Option("-G", "--group-size", min=1, help="Group size the training run uses.")],
    max_silent: Annotated[float | None, _rate("Fail when the silent rate exceeds X.", "--max-silent")] = None,
    max_all_wrong: Annotated[float | None, _rate("Fail when the all-wrong rate exceeds X.", "--max-all-wrong")] = None,
    max_all_correct: Annotated[float | None, _rate("Fail when the all-correct rate exceeds X.",
                                                   "--max-all-correct")] = None,
    max_extreme_share: Annotated[float | None, _rate(
        "Fail when the share of GRPO gradient mass on p̂ < 0.1 or p̂ > 0.9 exceeds X.", "--max-extreme-share")] = None,
    min_fidelity: Annotated[float | None, _rate("Fail when the mean fidelity φ at G is below Y.",
                                                "--min-fidelity")] = None,
    max_never_solved: Annotated[float | None, _rate("Fail when the share of prompts with k = 0 exceeds X.",
                                                    "--max-never-solved")] = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Gate: exit 0 when every threshold holds at G, 1 when any fails, 2 when it cannot run.

    Silent rates use the scan's default estimate (unbiased when every prompt has n ≥ G samples,
    else bayes). Under GitHub Actions (GITHUB_ACTIONS set) each failure is also printed on stderr
    as an ::error:: annotation and a markdown summary is appended to $GITHUB_STEP_SUMMARY.

    Example: sigmaudit check rollouts.parquet -G 16 --max-silent 0.4 --min-fidelity 0.85
    """
    import os
    import sys

    from ...audits.check import check as run_check
    from ...audits.check import github_annotations
    from ...exitcodes import ExitCode

    thresholds = _thresholds(max_silent=max_silent, max_all_wrong=max_all_wrong, max_all_correct=max_all_correct,
                             max_extreme_share=max_extreme_share, min_fidelity=min_fidelity,
                             max_never_solved=max_never_solved)
    result = run_check(loaded.corpus, G, thresholds)
    emit_result(result, fmt, output)
    if os.environ.get("GITHUB_ACTIONS"):
        for line in github_annotations(result):
            sys.stderr.write(line + "\n")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            from ...render.markdown import render_markdown

            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render_markdown(result.view()) + "\n")
    raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.FAILED))
