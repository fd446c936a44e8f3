"""The view of a :class:`~sigmaudit.audits.dapo.DapoResult`: DAPO's loop as verl runs it, at the current
difficulty and at the next-step forecast (a section of ``plan`` and ``check``, a line of ``watch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import AMOUNT, RATE
from ..fmt import pct as pct_
from .labels import WARNING
from .model import Section, Table

if TYPE_CHECKING:
    from ..audits.dapo import DapoAt, DapoResult

_MEASURES = (
    ("silent chance of a drawn prompt's group", "silent", RATE),
    ("generation chunks per step", "gen_batches_per_step", AMOUNT),
    ("rollouts generated / trained", "generated_per_trained", AMOUNT),
    ("ideal refill 1 / (1 − silent)", "ideal_groups_per_kept", AMOUNT),
    ("informative rollouts dropped by truncation / step", "discarded_informative_rollouts", AMOUNT),
    ("P(a step raises)", "p_step_raises", RATE),
    ("P(a run of S steps raises)", "p_run_raises", RATE),
)


def limit_words(k: int) -> str:
    """``6 chunks`` or ``no limit`` (K ≤ 0)."""
    return f"{k:,} chunks" if k > 0 else "no limit (K ≤ 0)"


def dapo_section(result: DapoResult) -> Section:
    """A table of DAPO's figures, one column per reading of the difficulty, and the settings in words."""
    s = result.settings
    cols = [result.current] + ([result.next_step] if result.next_step is not None else [])
    rows = tuple((label.replace("S steps", f"{s.run_steps:,} steps"), *(at.to_dict()[key] for at in cols))
                 for label, key, _ in _MEASURES)
    n_words = {"logged": "logged", "given": "-G"}.get(result.n_source, "default: no groups logged")
    table = Table("DAPO as verl runs it", ("", *(f"{at.basis} ({at.prompts:,} prompts)" for at in cols)), rows,
                  row_digits=tuple(d for _, _, d in _MEASURES), digits=AMOUNT,
                  note="chunks: whole data.gen_batch_size chunks until data.train_batch_size prompts with non-zero "
                       "reward std are kept; the surplus of the last chunk is truncated; a step that kept too few "
                       "after max_num_gen_batches chunks raises 'Generated too many'. Each drawn prompt is silent "
                       "with the mean chance shown, mixed like this log" + (
                           f"; a step starting an epoch of the D = {s.dataset_size:,}-prompt dataset draws without "
                           "replacement" if s.dataset_size is not None else
                           " (a dataset much larger than a step reads; --dataset-size D corrects for a smaller one)"))
    lines = (
        f"data.train_batch_size B = {s.train_batch:,}, data.gen_batch_size M = {s.gen_batch:,}, rollout.n = "
        f"{result.n:,} ({n_words}), max_num_gen_batches K = {limit_words(s.max_gen_batches)}; verl-recipe "
        f"{result.commit[:12]} dapo/dapo_ray_trainer.py",
        summary(result.headline, result),
        *dataset_words(result),
        *(("warning: the log is a post-filter dump (silent groups dropped, as a DAPO run's own dump keeps only "
            "kept groups): the silent chance is understated, so are the chunks, the cost and P(raises)",)
          if result.filtered else ()),
    )
    return Section("DAPO as verl runs it", lines=lines, tables=(table,))


def dataset_words(result: DapoResult) -> tuple[str, ...]:
    """What the dataset size does to the figures: the correction with ``--dataset-size``, else a note when a
    generation batch is larger than the prompts the log shows (verl's loader would yield no batch on a dataset
    that small)."""
    s, prompts = result.settings, result.current.prompts
    if s.dataset_size is not None:
        share = min(s.max_gen_batches, s.dataset_size // s.gen_batch) * s.gen_batch / s.dataset_size \
            if s.max_gen_batches > 0 else None
        reads = f"K chunks read {pct_(share)} of an epoch; " if share is not None else ""
        return (f"finite dataset D = {s.dataset_size:,} prompts: {reads}drawn without replacement within an epoch "
                f"(keep-chance spread ρ = {result.spread:.3f} of the corpus prior); figures for a step that starts "
                "an epoch (a later step starts inside one: docs/theory.md)",)
    if s.gen_batch > prompts:
        return (f"note: the generation batch M = {s.gen_batch:,} is larger than the {prompts:,} prompts this log "
                "shows; on a dataset that small verl's drop_last loader yields no batch (give --dataset-size D)",)
    return ()


def dapo_sections(result: DapoResult | None) -> tuple[Section, ...]:
    """The DAPO section, or none without ``--train-batch``."""
    return () if result is None else (dapo_section(result),)


def summary(at: DapoAt, result: DapoResult) -> str:
    """One sentence: what a step costs at this reading, and its chance of raising."""
    c, s = at.cost, result.settings
    if c.gen_batches_per_step is None:
        return (f"at the {at.basis} (silent {at.silent:.4f}) no step trains: every chunk is expected to keep "
                f"nothing, or almost never B = {s.train_batch:,} within the limit")
    raises = (f"; P(a step raises) {pct_(c.p_step_raises)}, P(a run of {s.run_steps:,} steps raises) "
              f"{pct_(c.p_run_raises)}" if s.max_gen_batches > 0 else "; no chunk limit, so no step raises")
    return (f"at the {at.basis} a step generates {c.gen_batches_per_step:.2f} chunks on average, "
            f"{c.generated_per_trained:.2f}× the rollouts it trains (the ideal refill says "
            f"{'—' if c.ideal_groups_per_kept is None else f'{c.ideal_groups_per_kept:.2f}'}×){raises}")


def watch_warning(step: int, event: dict[str, object], settings: object) -> str:
    """``watch``'s one warning line when the next step's P(raises) passes the threshold."""
    s = settings
    return (f"{WARNING}step {step}: DAPO as verl runs it would raise 'Generated too many' at the next step with "
            f"probability {pct_(float(event['p_step_raises']))} (> {pct_(float(event['warn_at']))}, "  # type: ignore[arg-type]
            f"--warn-p-raises): B = {s.train_batch:,}, M = {s.gen_batch:,}, K = "  # type: ignore[attr-defined]
            f"{s.max_gen_batches:,} chunks (next-step forecast)")  # type: ignore[attr-defined]
