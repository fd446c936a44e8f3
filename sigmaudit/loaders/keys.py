"""Group keys that merge groups silently (issue 43): the checks made on a load's groups and prompts once they are
counted, before any figure is computed.

- A group formed from a (step, prompt) key -- no group-id column -- larger than :data:`MAX_GROUP` samples is
  refused (:func:`refuse_oversized`): a multimodal verl ``rollout_data_dir`` dump decodes its prompts without their
  images (``skip_special_tokens``), so every row of a step holds one ``input`` and 16 prompts x G = 64 read as one
  prompt x 1,024. A log with a group-id column (verl's v1 dump: ``uid``) is grouped by it and never refused here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from ..errors import SchemaError
from .columns import key_note

MAX_GROUP = 512
"""Default bound on the samples of one group formed from a (step, prompt) key (``--max-group-size``): GRPO-family
runs draw G = 4 to 64 samples a prompt, and rollout-scaling work up to 512; a "group" past it is rows of several
prompts that share a key (a prompt text without its images, a template without its question)."""


def refuse_oversized(per_group: pl.DataFrame | None, plans: Sequence[Any], bound: int | None,
                     where: Callable[[Any], str]) -> None:
    """Refuse the load when a group formed from a (step, prompt) key holds more than ``bound`` (None:
    :data:`MAX_GROUP`) samples; groups with a group id, or each a row (grouped and counts layouts: a counts row's n
    may be a pass rate's thousands of samples), are left alone.
    ``where(step)``: the file(s) holding a step's rows."""
    limit = MAX_GROUP if bound is None else bound
    keyed = all(not (p.group or p.list_rewards) and p.step and p.layout != "counts" for p in plans)
    if per_group is None or not per_group.height or not keyed:
        return
    big = per_group.filter(pl.col("n") > limit)
    if not big.height:
        return
    step, prompt, n = big.sort("n", "step", descending=[True, False]).select("step", "prompt", "n").row(0)
    whole = (f"all {n:,} rows of step {step} share one prompt key" if per_group.filter(pl.col("step") == step).height
             == 1 else f"step {step} holds {n:,} rows of one prompt key")
    shown = str(prompt) if len(str(prompt)) <= 40 else str(prompt)[:39] + "…"
    raise SchemaError(f"{whole} ({key_note(plans[0].prompt)} = {shown!r}): a group of {n:,} is more than "
                      f"--max-group-size {limit:,}, so several prompts share that key (a multimodal dump's text "
                      "without its images?)", location=where(step),
                      remedy=f"name the key with --prompt-col or --group-col, or pass --max-group-size {n} if the "
                             f"run drew G = {n}")
