"""``sigmaudit plan``: choose the group size before a run at a fixed rollout budget, the prompts to drop
first, and optionally each prompt's own n."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.objective import Band
    from ...audits.plan import PlanResult
    from ...loaders import LoadedCounts
    from ...render import Format

from ..options import (
    AdvantageOpt,
    BootstrapOpt,
    DatasetSizeOpt,
    EstimatorOpt,
    FormatOpt,
    GenBatchOpt,
    LevelOpt,
    MaxGenBatchesOpt,
    ObjectiveOpt,
    OutputOpt,
    PostFilterOpt,
    RunStepsOpt,
    StdOpt,
    TrainBatchOpt,
    check_conventions,
    dapo_settings,
    drop_out_option,
    emit_result,
    eps_option,
    group_size_option,
    max_silent_option,
    min_fidelity_option,
)

_TARGETS = "Targets"
_ALLOC = "Per-prompt allocation"
_DATA = "Curation"


def parse_band(value: str | None) -> tuple[float, float] | None:
    """``--keep-band LO:HI`` -> (LO, HI) with 0 ≤ LO < HI ≤ 1 (ConfigError naming the flag)."""
    from ...errors import ConfigError

    if value is None:
        return None
    parts = value.split(":")
    try:
        lo, hi = (float(x) for x in parts) if len(parts) == 2 else (float("nan"), float("nan"))
    except ValueError:
        lo = hi = float("nan")
    if not (0.0 <= lo < hi <= 1.0):
        raise ConfigError(f"--keep-band {value!r} is not LO:HI with 0 ≤ LO < HI ≤ 1", location="--keep-band",
                          remedy="e.g. --keep-band 0.1:0.9")
    return lo, hi


def parse_shares(value: str | None) -> Band:
    """``--between-prompt-share F[,F…][@G0]`` -> the band (ConfigError naming the flag)."""
    from ...audits.objective import DEFAULT_REFERENCE_G, Band
    from ...errors import ConfigError

    if value is None:
        return Band()
    text, _, at = value.partition("@")
    try:
        shares = tuple(float(x) for x in text.split(","))
        G0 = int(at) if at else DEFAULT_REFERENCE_G
    except ValueError:
        shares, G0 = (), 0
    if not shares or not all(0.0 < f <= 1.0 for f in shares) or G0 < 2:
        raise ConfigError(f"--between-prompt-share {value!r} is not F[,F…][@G0] with 0 < F ≤ 1 and G0 ≥ 2",
                          location="--between-prompt-share", remedy="e.g. --between-prompt-share 0.1@16")
    return Band(tuple(sorted(set(shares))), G0, True)


def _check_options(
    *, max_silent: float | None, min_fidelity: float | None, budget: int | None, eps: float | None,
    min_g: int, max_g: int, alloc_out: Path | None, objective: str | None = None, drop_out: Path | None = None,
    group_sizes: list[int] | None = None, rollouts_per_step: int | None = None, keep_band: str | None = None,
    advantage: str = "grpo", std: str = "sample", tolerance: float = 0.05, between_prompt_share: str | None = None,
    **_: object,
) -> None:
    """Reject impossible options before any log is read."""
    from ...audits.allocate import validate_options
    from ...audits.plan import check_group_sizes
    from ...errors import ConfigError
    from ...writers import table_suffix

    validate_options(budget, eps, min_g, max_g)  # raises with the parameter's name; the edge adds the flag
    if objective is not None and (max_silent is not None or min_fidelity is not None):
        raise ConfigError("--objective chooses G only when no target is given", location="--objective",
                          remedy="drop --objective, or drop --max-silent/--min-fidelity")
    if alloc_out is not None and budget is None and eps is None:
        raise ConfigError("nothing to write", location="--alloc-out", remedy="add --budget N or --eps E")
    for path, flag in ((alloc_out, "--alloc-out"), (drop_out, "--drop-out")):
        if path is not None:
            table_suffix(path, flag)
    if group_sizes:
        check_group_sizes(group_sizes, rollouts_per_step)
    check_conventions(advantage, std)
    if not 0.0 <= tolerance < 1.0:
        raise ConfigError(f"--tolerance must lie in [0, 1), got {tolerance:g}", location="--tolerance",
                          remedy="e.g. 0.05")
    parse_band(keep_band)
    parse_shares(between_prompt_share)
    if between_prompt_share is not None and (objective not in (None, "snr") or max_silent is not None
                                             or min_fidelity is not None):
        raise ConfigError("--between-prompt-share sets the step SNR's band, which only the default rule reads",
                          location="--between-prompt-share",
                          remedy="drop --objective/--max-silent/--min-fidelity, or drop --between-prompt-share")


# long: the command's options, one per line
@reads_logs(validate=_check_options, by_ok=True)
def plan(
    loaded: LoadedCounts,
    group_sizes: Annotated[list[int] | None, group_size_option(
        "Group size to show in the sweep (repeatable; the largest is the search's end, at most R and 65,536); given "
        "once, it is also the run's G the recommendation keeps when it can. "
        "Default: 2 4 8 12 16 24 32 48 64 96 128 192 256.")] = None,
    rollouts_per_step: Annotated[int | None, typer.Option(
        "--rollouts-per-step", min=2, show_default=False, metavar="R",
        help="Rollouts per step R, held fixed across G (N = ⌊R/G⌋ prompts per step). Default: the log's median "
             "rollouts per step where it has steps, else --batch-prompts × the logged G.")] = None,
    batch_prompts: Annotated[int, typer.Option(
        "--batch-prompts", min=1,
        help="Prompts per step for the default R of a log without steps (R = this × the logged G).")] = 512,
    objective: ObjectiveOpt = None,
    tolerance: Annotated[float, typer.Option(
        "--tolerance", help="The share of the best a G may lose and still count (a user default).")] = 0.05,
    between_prompt_share: Annotated[str | None, typer.Option(
        "--between-prompt-share", metavar="F[@G0]", show_default=False,
        help="The share f of a step's noise variance that comes from which prompts were drawn, measured at G0 "
             "(default 8); a comma list is a band (0.05,0.1@16). Default band: 0.02,0.05,0.1,0.2@8. How to "
             "measure it: docs/theory.md.")] = None,
    advantage: AdvantageOpt = "grpo",
    std: StdOpt = "sample",
    max_silent: Annotated[float | None, max_silent_option(
        "Target: silent rate at most X (recommend the smallest whole G meeting every target, exactly the "
        "smallest G that 'check' passes).", rich_help_panel=_TARGETS)] = None,
    min_fidelity: Annotated[float | None, min_fidelity_option(
        "Target: mean fidelity φ at least Y.", rich_help_panel=_TARGETS)] = None,
    drop_above: Annotated[float, typer.Option(
        "--drop-above", rich_help_panel=_DATA, min=0.0, max=1.0,
        help="Curation (--full table): also show dropping a prompt whose posterior P(p ∈ {0, 1}) exceeds this.")] = 0.5,
    keep_band: Annotated[str | None, typer.Option(
        "--keep-band", rich_help_panel=_DATA, metavar="LO:HI", show_default=False,
        help="Curation (--full table): also show keeping only LO < p̂ < HI.")] = None,
    drop_out: Annotated[Path | None, drop_out_option(
        rich_help_panel=_DATA,
        help="Write the data lever's list (the value rule at the G to be run, as `sigmaudit curate --drop-out` "
             "writes it at that G): one row per logged prompt with its counts, value, class (drop, reprobe, keep) "
             "(.csv, .parquet or .jsonl). `sigmaudit curate --dataset` also writes the curated set.")] = None,
    budget: Annotated[int | None, typer.Option(
        "--budget", rich_help_panel=_ALLOC, show_default=False,
        help="Allocate per-prompt G_i with Σ G_i ≤ N rollouts per pass, maximising the objective's per-prompt "
             "term (a per-prompt n needs a custom sampler: stock verl and TRL sample one n).")] = None,
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
    dataset_size: DatasetSizeOpt = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Recommend a group size G at a fixed rollout budget per step, with its price and the data lever.

    A step of R rollouts (--rollouts-per-step; default the log's own) holds N = ⌊R/G⌋ prompts. Per G the sweep
    predicts the silent share, informative groups per step and the step's signal-to-noise ratio with between-prompt
    and per-rollout noise (--advantage, --std: as TRL and verl compute them; docs/theory.md). Without a target the
    G within --tolerance of the best SNR for every between-prompt share of the band (--between-prompt-share) are
    the flat range; the run's G (-G given once, else the logged one) is kept when inside, else the nearest of
    them is recommended. Beside it, what dropping prompts does (never/always solved in the log; posterior
    P(p ∈ {0, 1}) > --drop-above; --keep-band). --max-silent/--min-fidelity instead: the smallest whole G
    meeting every target (the smallest G 'sigmaudit check' passes); exit 1 if none. --full shows every table.
    --train-batch/--gen-batch/--max-gen-batches: DAPO's loop as verl runs it, at the current difficulty and the
    next-step forecast (chunks per step, generated ÷ trained, P(a step raises)).

    \b
    Examples:
      sigmaudit plan rollouts.parquet
      sigmaudit plan rollouts.parquet --drop-out drop.csv \\
          --rollouts-per-step 8192
      sigmaudit plan rollouts.parquet --max-silent 0.3 \\
          --budget 20000 --alloc-out alloc.csv
    """
    from ...audits.plan import PlanOptions, Targets, plan_logs

    options = PlanOptions(objective=objective or "snr", advantage=advantage, std=std, tolerance=tolerance,
                          drop_above=drop_above, keep_band=parse_band(keep_band),
                          band=parse_shares(between_prompt_share))
    run_G = group_sizes[0] if group_sizes and len(group_sizes) == 1 else None
    result = plan_logs(loaded, group_sizes or None, batch_prompts=batch_prompts, rollouts_per_step=rollouts_per_step,
                       run_G=run_G,
                       targets=Targets(max_silent, min_fidelity), options=options,
                       budget=budget, eps=eps, min_g=min_g, max_g=max_g,
                       post_filter=post_filter, estimator=estimator, replicates=replicates, level=level,
                       dapo=dapo_settings(train_batch, gen_batch, max_gen_batches, run_steps, dataset_size))
    _finish(result, loaded, options, alloc_out, drop_out, fmt, output)


def _value_drop_list(result: PlanResult, loaded: LoadedCounts, options: object) -> object:
    """``--drop-out``: the list of the data lever the recommendation names (the value rule at the G to be run,
    its default threshold and confidence), which is ``sigmaudit curate --drop-out`` at that G: one drop list
    for both commands."""
    from ...audits.curate import curate_logs
    from ...core.value import DEFAULT_CONFIDENCE, DEFAULT_MIN_VALUE
    from ...errors import ConfigError

    cur = result.curation
    G = cur.value_G if cur is not None and any(r.rule == "value" for r in cur.rows) else None
    if G is None:
        raise ConfigError("--drop-out: the counts do not determine a prompt's value at any G of this plan, so there "
                          "is no drop list to write", location="--drop-out",
                          remedy="sigmaudit curate -G G --drop-out FILE at a G the log's samples per prompt reach")
    return curate_logs(loaded, G, min_value=DEFAULT_MIN_VALUE, confidence=DEFAULT_CONFIDENCE,
                       advantage=options.advantage, std=options.std).per_prompt  # type: ignore[attr-defined]


def _finish(result: PlanResult, loaded: LoadedCounts, options: object, alloc_out: Path | None,
            drop_out: Path | None, fmt: Format | None, output: Path | None) -> None:
    """Write the allocation, the drop list and the report, note failing ``--by`` values, exit 1 when a target
    failed."""
    from ...exitcodes import ExitCode
    from ...writers import write_table

    if result.allocation is not None and alloc_out is not None:
        write_table(result.allocation.per_prompt, alloc_out, "--alloc-out")
    if drop_out is not None:
        write_table(_value_drop_list(result, loaded, options), drop_out, "--drop-out")
    emit_result(result, fmt, output)
    if result.failed_groups:
        from ..output import note

        note(f"no G meets the targets for {result.by.column} = {', '.join(result.failed_groups)}")  # type: ignore[union-attr]
    failed = result.target_failed or bool(result.failed_groups)
    raise typer.Exit(int(ExitCode.FAILED if failed else ExitCode.OK))
