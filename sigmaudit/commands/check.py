"""``sigmaudit check``: a CI gate on rollout logs at one group size G."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cli import app
from .inputs import (
    GroupColOpt,
    KColOpt,
    NColOpt,
    PathsArg,
    PromptColOpt,
    QuietOpt,
    RateColOpt,
    RewardColOpt,
    SamplesOpt,
    StepColOpt,
    ThresholdOpt,
)
from .options import FormatOpt, OutputOpt, emit_result

_GATE = "Thresholds (at least one)"


def _rate(help_text: str, flag: str) -> object:
    return typer.Option(flag, rich_help_panel=_GATE, show_default=False, help=help_text)


@app.command()
def check(
    paths: PathsArg,
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
    prompt_col: PromptColOpt = None,
    reward_col: RewardColOpt = None,
    step_col: StepColOpt = None,
    group_col: GroupColOpt = None,
    n_col: NColOpt = None,
    k_col: KColOpt = None,
    rate_col: RateColOpt = None,
    samples: SamplesOpt = None,
    threshold: ThresholdOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Gate: exit 0 when every threshold holds at G, 1 when any fails, 2 when it cannot run.

    Silent rates use the scan's default estimate (unbiased when every prompt has n ≥ G samples,
    else bayes). Under GitHub Actions (GITHUB_ACTIONS set) each failure is also printed on stderr
    as an ::error:: annotation and a markdown summary is appended to $GITHUB_STEP_SUMMARY.

    Example: sigmaudit check rollouts.parquet -G 16 --max-silent 0.4 --min-fidelity 0.85
    """
    import os
    import sys

    from ..errors import ConfigError
    from ..exitcodes import ExitCode
    from ..gate import Threshold, github_annotations
    from ..gate import check as run_check
    from .inputs import load_inputs

    given = {"silent_rate": max_silent, "all_wrong_rate": max_all_wrong, "all_correct_rate": max_all_correct,
             "extreme_share": max_extreme_share, "fidelity": min_fidelity, "never_solved_rate": max_never_solved}
    from ..gate import METRICS

    for name, value in given.items():
        if value is not None and not 0.0 <= value <= 1.0:
            raise ConfigError(f"must lie in [0, 1], got {value:g}", location=METRICS[name][1],
                              remedy="give a rate such as 0.3")
    thresholds = [Threshold(name, v) for name, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check",
                          remedy="e.g. --max-silent 0.4 (see 'sigmaudit check --help')")
    loaded = load_inputs(paths, prompt_col=prompt_col, reward_col=reward_col, step_col=step_col,
                         group_col=group_col, n_col=n_col, k_col=k_col, rate_col=rate_col, samples=samples,
                         threshold=threshold, quiet=quiet)
    result = run_check(loaded.corpus, G, thresholds)
    emit_result(result, fmt, output)
    if os.environ.get("GITHUB_ACTIONS"):
        for line in github_annotations(result):
            sys.stderr.write(line + "\n")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            from ..render.markdown import render_markdown

            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(render_markdown(result.view()) + "\n")
    raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.FAILED))
