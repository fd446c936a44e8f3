"""``sigmaudit scan``: audit rollout logs (silent groups, wasted compute, gradient mass, group size)."""

from __future__ import annotations

import sys
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
    load_inputs,
)
from .options import FormatOpt, OutputOpt, emit_result


def _eps(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must lie in the open interval (0, 1), got {value:g}")
    return value


@app.command()
def scan(
    paths: PathsArg,
    G: Annotated[list[int] | None, typer.Option("-G", "--group-size", min=1, show_default=False,
                                                help="Group size G >= 1 to report (repeatable; default 4 8 16 32 64).")
                 ] = None,
    g_main: Annotated[int | None, typer.Option("--g-main", min=1, show_default=False,
                                               help="G for wasted compute, finite-G mass and the group-size check "
                                                    "(default: most common logged group size, else 8).")] = None,
    eps: Annotated[float, typer.Option("--eps", callback=_eps,
                                       help="Fidelity shortfall ε for the group-size law (φ ≥ 1 − ε).")] = 0.05,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    prompt_col: PromptColOpt = None,
    reward_col: RewardColOpt = None,
    step_col: StepColOpt = None,
    group_col: GroupColOpt = None,
    n_col: NColOpt = None,
    k_col: KColOpt = None,
    rate_col: RateColOpt = None,
    samples: SamplesOpt = None,
    threshold: ThresholdOpt = None,
) -> None:
    """Audit rollout logs: silent groups, wasted compute, gradient mass and group size.

    Silent-group rate for each G (plug-in, unbiased, model-based; the default
    estimate says which), the silent fraction of the logged groups, compute
    wasted at --g-main, where GRPO and Dr. GRPO spend their gradient, and the
    group size each prompt needs for fidelity φ ≥ 1 − ε.

    Example: sigmaudit scan rollouts.parquet -G 8 -G 16 --format json
    """
    from ..output import note, resolve_format
    from ..render import Format
    from ..scan import DEFAULT_G, audit

    table = resolve_format(fmt, output) is Format.table
    loaded = load_inputs(paths, prompt_col=prompt_col, reward_col=reward_col, step_col=step_col,
                         group_col=group_col, n_col=n_col, k_col=k_col, rate_col=rate_col, samples=samples,
                         threshold=threshold, quiet=quiet, progress=table and sys.stderr.isatty())
    report = audit(loaded, G=tuple(G) if G else DEFAULT_G, g_main=g_main, eps=eps)
    if report.filtered_warning:
        note(f"warning: {report.filtered_warning}")
    emit_result(report, fmt, output)
