"""``sigmaudit check``: a CI gate on rollout logs at one group size G."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...core.bands import EXTREME
from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.check import CheckResult, Threshold
    from ...loaders import LoadedCounts

from ..options import (
    BootstrapOpt,
    DatasetSizeOpt,
    EstimatorOpt,
    FormatOpt,
    GenBatchOpt,
    LevelOpt,
    MaxGenBatchesOpt,
    OutputOpt,
    PostFilterOpt,
    TrainBatchOpt,
    check_level,
    dapo_settings,
    emit_result,
    group_size_option,
    max_silent_option,
    min_fidelity_option,
    unit_interval,
)

_GATE = "Thresholds (at least one)"
_RATE: dict[str, Any] = {"rich_help_panel": _GATE, "show_default": False, "metavar": "FLOAT",
                         "callback": unit_interval}
"""How every threshold flag of the gate is read: a rate in [0, 1]."""


def _thresholds(
    *, max_silent: float | None, max_all_wrong: float | None, max_all_correct: float | None,
    max_extreme_share: float | None, min_fidelity: float | None, max_never_solved: float | None,
    max_p_raises: float | None = None, max_silent_tokens: float | None = None, **_: object,
) -> list[Threshold]:
    """The thresholds given (each already checked to lie in [0, 1]); at least one is required."""
    from ...audits.check import Threshold
    from ...errors import ConfigError

    given = {"silent_rate": max_silent, "all_wrong_rate": max_all_wrong, "all_correct_rate": max_all_correct,
             "extreme_share": max_extreme_share, "fidelity": min_fidelity, "never_solved_rate": max_never_solved,
             "dapo_p_step_raises": max_p_raises, "silent_token_share": max_silent_tokens}
    thresholds = [Threshold(name, v) for name, v in given.items() if v is not None]
    if not thresholds:
        raise ConfigError("give at least one threshold", location="check",
                          remedy="e.g. --max-silent 0.4 (see 'sigmaudit check --help')")
    return thresholds


GroupSizeOpt = Annotated[int | None, group_size_option(
    "Group size the training run uses. Default: the log's most common group size (when the log has groups).")]
MaxSilentOpt = Annotated[float | None, max_silent_option("Fail when the silent rate exceeds X.", rich_help_panel=_GATE)]
MaxAllWrongOpt = Annotated[float | None, typer.Option(
    "--max-all-wrong", help="Fail when the all-wrong rate exceeds X.", **_RATE)]
MaxAllCorrectOpt = Annotated[float | None, typer.Option(
    "--max-all-correct", help="Fail when the all-correct rate exceeds X.", **_RATE)]
MaxExtremeShareOpt = Annotated[float | None, typer.Option(
    "--max-extreme-share", help=f"Fail when the share of GRPO gradient mass on {EXTREME.describe('p')} exceeds X.",
    **_RATE)]
MinFidelityOpt = Annotated[float | None, min_fidelity_option("Fail when the mean fidelity φ at G is below Y.",
                                                             rich_help_panel=_GATE)]
MaxNeverSolvedOpt = Annotated[float | None, typer.Option(
    "--max-never-solved", help="Fail when the share of never-solved prompts (p = 0) exceeds X.", **_RATE)]
MaxPRaisesOpt = Annotated[float | None, typer.Option(
    "--max-p-raises", help="With --train-batch: fail when P(a DAPO step raises 'Generated too many') in verl's loop "
                           "exceeds X (the larger of the current difficulty's and the next-step forecast's).",
    **_RATE)]
MaxSilentTokensOpt = Annotated[float | None, typer.Option(
    "--max-silent-tokens", help="Fail when the share of the logged generated tokens in silent groups exceeds X "
                                "(observed basis; needs token counts: prime-rl, NeMo-RL or --length-col).", **_RATE)]
GroupsGeneratedOpt = Annotated[int | None, typer.Option(
    "--groups-generated", min=1, show_default=False, metavar="INT",
    help="Groups sampled before the zero-variance filter (the log is then read as post-filter): --max-silent "
         "is checked against the pre-filter silent fraction (N - logged + silent logged) / N. N counts the whole "
         "log, so a step window (--steps, --last-steps) is refused with it.")]
AllowFilteredOpt = Annotated[bool, typer.Option(
    "--allow-filtered", help="Check silent, all-wrong, all-correct, never-solved and extreme-share thresholds on a "
                             "post-filter log anyway (they read understated rates).")]
ConfidenceOpt = Annotated[float | None, typer.Option(
    "--confidence", callback=check_level, metavar="FLOAT", show_default=False,
    help="Gate on the one-sided bound at this confidence instead of the point: a max-limit must hold for "
         "the upper bound, a min-limit for the lower one.")]
BasisOpt = Annotated[str | None, typer.Option(
    "--basis", metavar="observed|model", show_default=False, rich_help_panel=_GATE,
    help="What the silent limits (--max-silent, --max-all-wrong, --max-all-correct) compare. observed (default "
         "on a log with groups at the logged G): the share of the window's logged groups that were silent; model: "
         "the estimate from the "
         "per-prompt counts (always used for another G or a counts-only log).")]
ConsecutiveOpt = Annotated[int | None, typer.Option(
    "--consecutive", min=1, metavar="K", show_default=False, rich_help_panel=_GATE,
    help="Observed basis: fail a silent/all-wrong/all-correct limit only when the per-step share crosses it "
         "in K consecutive logged steps.")]
SilentByOpt = Annotated[str, typer.Option(
    "--silent-by", metavar="zero-spread|correctness", rich_help_panel=_GATE, callback=lambda v: _silent_by(v),
    help="Shaped rewards (--threshold), observed basis: a group is silent when its raw rewards have zero spread "
         "(no gradient at all; default) or when all are on one side of --threshold (correctness).")]


def _silent_by(value: str) -> str:
    if value not in ("zero-spread", "correctness"):
        raise typer.BadParameter(f"choose zero-spread or correctness, got {value!r}")
    return value


JunitOpt = Annotated[Path | None, typer.Option(
    "--junit", metavar="PATH", dir_okay=False, show_default=False,
    help="Also write a JUnit XML report here (one test case per threshold).")]


def _validate(*, confidence: float | None = None, replicates: int = 200, train_batch: int | None = None,
              gen_batch: int | None = None, max_gen_batches: int = 0, dataset_size: int | None = None,
              **kwargs: object) -> None:
    """Reject impossible options before any file is read: no threshold, --confidence without replicates,
    DAPO flags without --train-batch."""
    from ...errors import ConfigError

    _thresholds(**kwargs)  # type: ignore[arg-type]
    dapo_settings(train_batch, gen_batch, max_gen_batches, 100, dataset_size)
    if kwargs.get("max_p_raises") is not None and train_batch is None:
        raise ConfigError("needs DAPO's settings", location="--max-p-raises",
                          remedy="add --train-batch B --gen-batch M --max-gen-batches K (verl's names)")
    if confidence is not None and replicates == 0:
        raise ConfigError("needs bootstrap replicates", location="--confidence",
                          remedy="drop --bootstrap 0, or give --bootstrap 200")


# long: one parameter per option (a Typer command); the work is in check_logs and _series
@reads_logs(validate=_validate, by_ok=True, series_ok=True)
def check(
    loaded: LoadedCounts,
    G: GroupSizeOpt = None,
    max_silent: MaxSilentOpt = None,
    max_all_wrong: MaxAllWrongOpt = None,
    max_all_correct: MaxAllCorrectOpt = None,
    max_extreme_share: MaxExtremeShareOpt = None,
    min_fidelity: MinFidelityOpt = None,
    max_never_solved: MaxNeverSolvedOpt = None,
    max_silent_tokens: MaxSilentTokensOpt = None,
    max_p_raises: MaxPRaisesOpt = None,
    train_batch: TrainBatchOpt = None,
    gen_batch: GenBatchOpt = None,
    max_gen_batches: MaxGenBatchesOpt = 0,
    dataset_size: DatasetSizeOpt = None,
    post_filter: PostFilterOpt = False,
    groups_generated: GroupsGeneratedOpt = None,
    allow_filtered: AllowFilteredOpt = False,
    estimator: EstimatorOpt = "auto",
    replicates: BootstrapOpt = 200,
    level: LevelOpt = 0.9,
    confidence: ConfidenceOpt = None,
    basis: BasisOpt = None,
    consecutive: ConsecutiveOpt = None,
    silent_by: SilentByOpt = "zero-spread",
    junit: JunitOpt = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Gate: exit 0 when every threshold holds at G, 1 when any fails, 2 when it cannot run.

    At the logged G the silent limits compare what happened: the share of the window's logged
    groups that were silent (--basis model: the estimate, as for any other G). On a post-filter
    log a silent, all-wrong, all-correct, never-solved or extreme-share threshold exits 2 unless
    --allow-filtered (--max-silent: or --groups-generated N). --by: fails when any value fails.

    Estimates follow --estimator (as scan and plan) with a bootstrap interval (--confidence gates
    its bound); the verdict goes to stderr (GitHub Actions: also annotations and a summary).

    \b
    Example:
      sigmaudit check rollouts.parquet -G 16 \\
          --max-silent 0.4 --min-fidelity 0.85
    """
    from ...audits.check import check_logs
    from ...exitcodes import ExitCode
    from ...writers import after_commit

    thresholds = _thresholds(max_silent=max_silent, max_all_wrong=max_all_wrong, max_all_correct=max_all_correct,
                             max_extreme_share=max_extreme_share, min_fidelity=min_fidelity,
                             max_never_solved=max_never_solved, max_p_raises=max_p_raises,
                             max_silent_tokens=max_silent_tokens)
    dapo = dapo_settings(train_batch, gen_batch, max_gen_batches, 100, dataset_size)
    if loaded.layout == "series":
        result = _series(loaded, thresholds, G, basis, groups_generated, consecutive, dapo)
    else:
        G, G_source = (G, "given") if G is not None else (_logged_group_size(loaded), "log")
        result = check_logs(loaded, G, thresholds, post_filter=post_filter, groups_generated=groups_generated,
                            allow_filtered=allow_filtered, estimator=estimator, replicates=replicates, level=level,
                            confidence=confidence, G_source=G_source, basis=basis, consecutive=consecutive,
                            silent_by=silent_by, dapo=dapo)
    result = _with_config(result)
    emit_result(result, fmt, output)
    if junit is not None:
        _write_junit(result, junit)
    after_commit(lambda: _verdict(result))  # after the report and --junit are written (a failed run: neither)
    raise typer.Exit(int(ExitCode.OK if result.passed else ExitCode.FAILED))


def _with_config(result: CheckResult) -> CheckResult:
    """``result`` naming the values a config file set for this run (its JSON ``config``, a JUnit property)."""
    from dataclasses import replace

    from ...audits.check import FileSettings
    from .. import config

    return result if config.used is None else replace(result, config=FileSettings(*config.used))


def _series(loaded: LoadedCounts, thresholds: list, G: int | None, basis: str | None, groups_generated: int | None,
            consecutive: int | None, dapo: object = None) -> CheckResult:
    """The check of a per-step series of shares (a trainer's metrics log): its observed shares only."""
    from ...audits.check import check_series
    from ...errors import ConfigError

    if G is not None:
        from ...loaders.series import g_refused

        raise g_refused(loaded.files[0])
    if dapo is not None:
        raise ConfigError("DAPO's loop is read from per-prompt groups (and their forecast); a per-step series "
                          "holds only shares", location="--train-batch", remedy="give the rollout log itself")
    if basis == "model" or groups_generated is not None:
        raise ConfigError("needs per-prompt counts, and a per-step series holds only shares",
                          location="--basis model" if basis == "model" else "--groups-generated",
                          remedy="drop it (the series' observed shares are compared)")
    return check_series(loaded, thresholds, G=G, consecutive=consecutive)


def _verdict(result: CheckResult) -> None:
    """The verdict on stderr, then (under GitHub Actions) annotations and the step summary."""
    from ...views.check import worded
    from ..output import note

    if result.failed_groups:
        note(f"check failed for {result.by.column} = {', '.join(result.failed_groups)}")  # type: ignore[union-attr]
    note(worded(result).verdict())
    _github_actions(result)


def _logged_group_size(loaded: LoadedCounts) -> int:
    """The log's most common group size (the default -G); ConfigError when the log has no groups."""
    from ...audits import logged_group_size
    from ...errors import ConfigError

    G = logged_group_size(loaded)
    if G is None:
        raise ConfigError("this log has no groups, so there is no group size to default to",
                          location="-G/--group-size", remedy="give the run's group size, e.g. -G 8")
    return G


def _write_junit(result: CheckResult, junit: Path) -> None:
    """The JUnit XML report (one test case per threshold), written atomically (never over an input log)."""
    from ...render.junit import render_junit
    from ...views import build_view
    from ...writers import write_file

    write_file(junit, render_junit(build_view(result)), "--junit")


def _github_actions(result: CheckResult) -> None:
    """Under GitHub Actions (GITHUB_ACTIONS set): ::error:: annotations on stderr, and the markdown report
    appended to $GITHUB_STEP_SUMMARY when it is set (a failure to write it is a warning, not an error)."""
    import os

    from ...views.check import github_annotations
    from ..output import note

    if not os.environ.get("GITHUB_ACTIONS"):
        return
    for line in github_annotations(result):
        sys.stderr.write(line + "\n")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from ...errors import OutputError
        from ...render import Format, render
        from ...views import build_view
        from ...writers import append_file

        def warn(reason: str) -> None:
            note(f"warning: could not append the step summary to {summary}: {reason}")
            sys.stderr.write(f"::warning title=sigmaudit check::could not write $GITHUB_STEP_SUMMARY ({reason})\n")

        try:
            append_file(Path(summary), render(build_view(result), Format.markdown) + "\n", "$GITHUB_STEP_SUMMARY")
        except OutputError as exc:  # it names an input log: never written to
            warn(exc.message)
        except OSError as exc:
            warn(exc.strerror or str(exc))
