"""``sigmaudit plan``: choose the group size before a run, and optionally each prompt's own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.plan import PlanResult
    from ...loaders import LoadedCounts
    from ...render import Format

from ..options import (
    BootstrapOpt,
    EstimatorOpt,
    FormatOpt,
    GenBatchOpt,
    LevelOpt,
    MaxGenBatchesOpt,
    ObjectiveOpt,
    OutputOpt,
    PostFilterOpt,
    RunStepsOpt,
    TrainBatchOpt,
    dapo_settings,
    emit_result,
    eps_option,
    group_size_option,
    max_silent_option,
    min_fidelity_option,
)

_TARGETS = "Targets"
_ALLOC = "Per-prompt allocation"


def _check_options(
    *, max_silent: float | None, min_fidelity: float | None, budget: int | None, eps: float | None,
    min_g: int, max_g: int, alloc_out: Path | None, objective: str | None = None, **_: object,
) -> None:
    """Reject impossible options before any log is read."""
    from ...audits.allocate import validate_options
    from ...errors import ConfigError
    from ...writers import table_suffix

    validate_options(budget, eps, min_g, max_g)  # raises with the parameter's name; the edge adds the flag
    if objective is not None and (max_silent is not None or min_fidelity is not None):
        raise ConfigError("--objective chooses G only when no target is given", location="--objective",
                          remedy="drop --objective, or drop --max-silent/--min-fidelity")
    if alloc_out is not None and budget is None and eps is None:
        raise ConfigError("nothing to write", location="--alloc-out", remedy="add --budget N or --eps E")
    if alloc_out is not None:
        table_suffix(alloc_out, "--alloc-out")


@reads_logs(validate=_check_options, by_ok=True)
def plan(
    loaded: LoadedCounts,
    group_sizes: Annotated[list[int] | None, group_size_option(
        "Group size to sweep (repeatable). Default: 2 4 8 12 16 24 32 48 64 96 128 192 256.")] = None,
    batch_prompts: Annotated[int, typer.Option(
        "--batch-prompts", min=1, help="Prompts per batch B for 'signal prompts per batch'.")] = 512,
    max_silent: Annotated[float | None, max_silent_option(
        "Target: silent rate at most X (recommend the smallest whole G meeting every target, exactly the "
        "smallest G that 'check' passes).", rich_help_panel=_TARGETS)] = None,
    min_fidelity: Annotated[float | None, min_fidelity_option(
        "Target: mean fidelity φ at least Y.", rich_help_panel=_TARGETS)] = None,
    objective: ObjectiveOpt = None,
    budget: Annotated[int | None, typer.Option(
        "--budget", rich_help_panel=_ALLOC, show_default=False,
        help="Allocate per-prompt G_i with Σ G_i ≤ N rollouts per pass, maximising total expected signal.")] = None,
    eps: Annotated[float | None, eps_option(
        "Instead of --budget: G_i = exact group size for φ ≥ 1 − ε at each prompt's estimated p.",
        rich_help_panel=_ALLOC, show_default=False, callback=None)] = None,
    min_g: Annotated[int, typer.Option("--min-g", rich_help_panel=_ALLOC, help="Smallest G_i of a kept prompt.")] = 2,
    max_g: Annotated[int, typer.Option("--max-g", rich_help_panel=_ALLOC, help="Largest G_i.")] = 256,
    alloc_out: Annotated[Path | None, typer.Option(
        "--alloc-out", rich_help_panel=_ALLOC, dir_okay=False, show_default=False,
        help="Write the per-prompt allocation here (.csv, .parquet or .jsonl). -o is the report.")] = None,
    post_filter: PostFilterOpt = False,
    estimator: EstimatorOpt = "auto",
    replicates: BootstrapOpt = 200,
    level: LevelOpt = 0.9,
    train_batch: TrainBatchOpt = None,
    gen_batch: GenBatchOpt = None,
    max_gen_batches: MaxGenBatchesOpt = 0,
    run_steps: RunStepsOpt = 100,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Recommend a group size G, with its price, from what each G would do to this corpus.

    The sweep predicts per G the silent rate, signal per batch, DAPO cost and fidelity (--estimator: the rule of
    scan and check) with bootstrap intervals. Without a target, --objective (default signal) picks the knee of its
    curve: the most per step while a rollout still returns at least half the best per-rollout value, capped where
    returns saturate. --max-silent/--min-fidelity instead: the smallest whole G meeting every target (the smallest
    G 'sigmaudit check' passes; at most the largest swept G) and the range the intervals allow; exit 1 if none.
    Every recommendation is priced against the logged G (else G = 8): rollouts and informative groups per step,
    silent share, rollouts per signal prompt. --budget/--eps: also a G_i per prompt (--alloc-out writes them).
    --train-batch/--gen-batch/--max-gen-batches: DAPO's loop as verl runs it, at the current difficulty and the
    next-step forecast (chunks per step, generated ÷ trained, P(a step raises)).

    \b
    Examples:
      sigmaudit plan rollouts.parquet --objective knapsack
      sigmaudit plan rollouts.parquet --max-silent 0.3 \\
          --budget 20000 --alloc-out alloc.csv
    """
    from ...audits.plan import Targets, plan_logs

    result = plan_logs(loaded, group_sizes or None, batch_prompts=batch_prompts,
                       targets=Targets(max_silent, min_fidelity), objective=objective or "signal",
                       budget=budget, eps=eps, min_g=min_g, max_g=max_g,
                       post_filter=post_filter, estimator=estimator, replicates=replicates, level=level,
                       dapo=dapo_settings(train_batch, gen_batch, max_gen_batches, run_steps))
    _finish(result, alloc_out, fmt, output)


def _finish(result: PlanResult, alloc_out: Path | None, fmt: Format | None, output: Path | None) -> None:
    """Write the allocation and the report, note failing ``--by`` values, exit 1 when a target failed."""
    from ...exitcodes import ExitCode
    from ...writers import write_table

    if result.allocation is not None and alloc_out is not None:
        write_table(result.allocation.per_prompt, alloc_out, "--alloc-out")
    emit_result(result, fmt, output)
    if result.failed_groups:
        from ..output import note

        note(f"no G meets the targets for {result.by.column} = {', '.join(result.failed_groups)}")  # type: ignore[union-attr]
    failed = result.target_failed or bool(result.failed_groups)
    raise typer.Exit(int(ExitCode.FAILED if failed else ExitCode.OK))
