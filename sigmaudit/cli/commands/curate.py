"""``sigmaudit curate``: drop, keep or re-probe each prompt by its value at the G to be run; with ``--dataset``,
the training set's rows matched and the curated set written in its own format (``--curated-out``).

JSON contract (``--format json``), besides ``schema_version``: ``G``, ``G_source`` (given, recommended, logged or
default), ``G_logged``, ``G_recommended``, ``prompts``, ``samples_median``, ``estimator`` (bayes), ``value``
{``G``, ``corpus_value``, ``min_value``, ``threshold``, ``confidence``, ``classes`` [{decision, prompts, share,
never_solved, always_solved, mean_value, settle_samples}], ``at`` [{G, silent_before, silent_after,
silent_after_reprobe_dropped, snr_change, signal_cost}], ``advantage``, ``std``}, ``dataset`` (null, or the
join's figures), ``window``, ``drift``, ``difficulty``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..inputs import reads_logs

if TYPE_CHECKING:
    from ...audits.curate import CurateResult
    from ...loaders import LoadedCounts

from ..options import (
    AdvantageOpt,
    FormatOpt,
    OutputOpt,
    StdOpt,
    check_conventions,
    drop_out_option,
    emit_result,
    group_size_option,
)

_DATA = "Training set"


def _check_options(*, min_value: float, confidence: float, dataset: Path | None, curated_out: Path | None,
                   drop_out: Path | None, advantage: str = "grpo", std: str = "sample", **_: object) -> None:
    """Reject impossible options before any log is read."""
    from ...errors import ConfigError
    from ...writers import table_suffix

    check_conventions(advantage, std)
    if not 0.0 < min_value <= 1.0:
        raise ConfigError(f"--min-value must lie in (0, 1], got {min_value:g}", location="--min-value",
                          remedy="e.g. 0.5 (half the corpus's mean value)")
    if not 0.5 <= confidence < 1.0:
        raise ConfigError(f"--drop-confidence must lie in [0.5, 1), got {confidence:g}", location="--drop-confidence",
                          remedy="e.g. 0.9")
    if drop_out is not None:
        table_suffix(drop_out, "--drop-out")
    if curated_out is not None:
        if dataset is None:
            raise ConfigError("needs the training set to curate", location="--curated-out",
                              remedy="add --dataset PATH (the parquet/jsonl file or folder the trainer reads)")
        curated_target(dataset, curated_out)


def curated_target(dataset: Path, out: Path) -> None:
    """``--curated-out`` fits ``--dataset``: a file of the same type for a file, an existing folder other than
    the dataset's (and not inside it) for a folder; never the input itself."""
    from ...errors import ConfigError
    from ...loaders.dataset import DATASET_SUFFIXES

    same = out.exists() and dataset.exists() and out.resolve() == dataset.resolve()
    if same:
        raise ConfigError("is the --dataset itself; sigmaudit never writes over its inputs", location="--curated-out",
                          remedy="give another path")
    if dataset.is_dir():
        if not out.is_dir():
            raise ConfigError("must be an existing folder when --dataset is a folder", location="--curated-out",
                              remedy=f"create it first (mkdir {out})")
        if out.resolve().is_relative_to(dataset.resolve()) or dataset.resolve().is_relative_to(out.resolve()):
            raise ConfigError("is inside --dataset's folder (or holds it)", location="--curated-out",
                              remedy="give a folder outside the training set's")
        return
    want = DATASET_SUFFIXES.get(dataset.suffix.lower())
    if want is not None and DATASET_SUFFIXES.get(out.suffix.lower()) != want:
        raise ConfigError(f"must be a .{'parquet' if want == 'parquet' else 'jsonl'} file like --dataset",
                          location="--curated-out", remedy=f"name it e.g. curated{dataset.suffix}")


# long: the command's options, one per line
@reads_logs(validate=_check_options)
def curate(
    loaded: LoadedCounts,
    G: Annotated[int | None, group_size_option(
        "The G to be run: prompts are valued at it. Default: plan's recommendation (the G plan's data lever "
        "uses), else the logged group size, else 8.")] = None,
    min_value: Annotated[float, typer.Option(
        "--min-value", metavar="θ",
        help="Threshold as a share of the corpus's mean value: a prompt whose groups are informative less than "
             "θ times as often as the average prompt's is below it.")] = 0.5,
    confidence: Annotated[float, typer.Option(
        "--drop-confidence", metavar="ℓ",
        help="A drop needs posterior P(value < threshold) ≥ ℓ; below it on average but less sure: re-probe.")] = 0.9,
    advantage: AdvantageOpt = "grpo",
    std: StdOpt = "sample",
    dataset: Annotated[Path | None, typer.Option(
        "--dataset", rich_help_panel=_DATA, show_default=False, metavar="PATH",
        help="The training set the trainer reads (parquet, jsonl, or a folder of them): match each logged prompt "
             "to its row (verl's chat message lists, TRL's prompt strings or conversations, a text column).")] = None,
    dataset_col: Annotated[str | None, typer.Option(
        "--dataset-col", rich_help_panel=_DATA, show_default=False, metavar="NAME",
        help="The training set's prompt column. Default: prompt.")] = None,
    curated_out: Annotated[Path | None, typer.Option(
        "--curated-out", rich_help_panel=_DATA, show_default=False, metavar="PATH",
        help="Write the training set without the dropped rows, in its own format and schema (a folder for a "
             "folder); rows never seen in the log are kept.")] = None,
    drop_out: Annotated[Path | None, drop_out_option(
        rich_help_panel=_DATA,
        help="Write one row per logged prompt: counts, value, P(value < threshold), class, samples to settle and, "
             "with --dataset, its row (index, file, row in file, sha256 of its text, the text) or how the match "
             "failed (.csv, .parquet or .jsonl).")] = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Drop, keep or re-probe each prompt by its value: the posterior chance that its next group is informative.

    A prompt's value at the G to be run is E[1 − p^G − (1 − p)^G | its counts] under the corpus prior, the same
    for never- and always-solved prompts. Below --min-value × the corpus mean and sure of it (--drop-confidence):
    drop; below on average but too few samples to tell: re-probe (with how many more samples would settle it);
    else keep. Shown: the silent share, the step SNR and the signal cost after dropping, at G, the logged G and
    plan's recommended G (predicted). --dataset matches the logged prompts to the training set's rows;
    --curated-out writes it without the dropped rows (docs/commands.md: how prompts are matched, the limits).

    \b
    Examples:
      sigmaudit curate rollouts.parquet
      sigmaudit curate rollout_data/ --dataset train.parquet \\
          --curated-out curated.parquet --drop-out drop.csv
    """
    from ...audits.curate import curate_logs

    data = None
    if dataset is not None:
        from ...loaders.dataset import read_dataset
        from ...writers import protect

        data = read_dataset(dataset, dataset_col)
        protect([f.path for f in data.files])
    result = curate_logs(loaded, G, min_value=min_value, confidence=confidence, training_set=data,
                         advantage=advantage, std=std)  # type: ignore[arg-type]
    _write(result, curated_out, drop_out)
    emit_result(result, fmt, output)


def _write(result: CurateResult, curated_out: Path | None, drop_out: Path | None) -> None:
    """The drop list and the curated training set (staged: written only when the command succeeds)."""
    from ...writers import write_file, write_table

    if drop_out is not None:
        write_table(result.per_prompt, drop_out, "--drop-out")
    if curated_out is not None and result.training_set is not None:
        from ...loaders.dataset import curated_files

        files = curated_files(result.training_set, result.keep_rows)
        for rel, data in files:
            target = curated_out / rel if result.training_set.root.is_dir() else curated_out
            if result.training_set.root.is_dir():
                target.parent.mkdir(parents=True, exist_ok=True)
            write_file(target, data, "--curated-out")
