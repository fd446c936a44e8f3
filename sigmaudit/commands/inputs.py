"""Log inputs shared by ``scan``, ``plan``, ``check``, ``trend`` and ``report``.

Every command that reads logs takes the same paths and layout overrides; this
module holds their option declarations and the one call that turns them into
per-prompt counts (printing the loader's notes on stderr).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ..loaders import LoadedCounts

_LAYOUT = "Layout overrides"

PathsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Log files (parquet, jsonl/ndjson[.gz|.zst], csv), directories (read recursively) or globs.",
        show_default=False,
    ),
]
PromptColOpt = Annotated[
    str | None,
    typer.Option("--prompt-col", help="Prompt key column (several joined by commas, e.g. run,task_id).",
                 rich_help_panel=_LAYOUT, show_default=False),
]
RewardColOpt = Annotated[
    str | None,
    typer.Option("--reward-col", help="Reward column (or list column of rewards) that means 'correct'.",
                 rich_help_panel=_LAYOUT, show_default=False),
]
StepColOpt = Annotated[
    str | None,
    typer.Option("--step-col", help="Training-step column.", rich_help_panel=_LAYOUT, show_default=False),
]
GroupColOpt = Annotated[
    str | None,
    typer.Option("--group-col", help="Group-id column (one id per sampled group).", rich_help_panel=_LAYOUT,
                 show_default=False),
]
NColOpt = Annotated[
    str | None,
    typer.Option("--n-col", help="Counts layout: samples-per-prompt column.", rich_help_panel=_LAYOUT,
                 show_default=False),
]
KColOpt = Annotated[
    str | None,
    typer.Option("--k-col", help="Counts layout: correct-samples column.", rich_help_panel=_LAYOUT,
                 show_default=False),
]
RateColOpt = Annotated[
    str | None,
    typer.Option("--rate-col", help="Counts layout: pass-rate column in [0, 1] (with --n-col or --samples).",
                 rich_help_panel=_LAYOUT, show_default=False),
]
SamplesOpt = Annotated[
    int | None,
    typer.Option("--samples", min=1, help="Counts layout: samples behind each pass rate (e.g. 64).",
                 rich_help_panel=_LAYOUT, show_default=False),
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option("--threshold", help="Reward >= T counts as correct (needed for non-binary rewards).",
                 rich_help_panel=_LAYOUT, show_default=False),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Do not print notes (what was detected, what was dropped) on stderr."),
]


def load_inputs(
    paths: list[Path],
    *,
    prompt_col: str | None = None,
    reward_col: str | None = None,
    step_col: str | None = None,
    group_col: str | None = None,
    n_col: str | None = None,
    k_col: str | None = None,
    rate_col: str | None = None,
    samples: int | None = None,
    threshold: float | None = None,
    quiet: bool = False,
    progress: bool = False,
) -> LoadedCounts:
    """Load per-prompt counts from the given paths; notes go to stderr unless ``quiet``.

    ``progress`` shows a Rich progress indicator on stderr (the caller decides:
    only on a terminal and never for machine-readable output).
    """
    from ..loaders import LoadOptions, load_counts
    from ..output import note

    opts = LoadOptions(
        prompt_col=prompt_col,
        reward_col=reward_col,
        step_col=step_col,
        group_col=group_col,
        n_col=n_col,
        k_col=k_col,
        rate_col=rate_col,
        samples=samples,
        threshold=threshold,
    )
    if progress:
        from .progress import rows_progress

        with rows_progress() as callback:
            loaded = load_counts(paths, opts, progress=callback)
    else:
        loaded = load_counts(paths, opts)
    if not quiet:
        for line in loaded.notes:
            note(line)
    return loaded
