"""verl: ``RayPPOTrainer._write_generations`` (legacy trainer, ``verl/trainer/ppo/ray_trainer.py``)
and ``PPOTrainer._write_generations`` (v1 trainer, ``verl/trainer/ppo/v1/trainer_base.py``), read at
verl-project/verl 1dda039b9c6311889a9c9a26040677e1254814f9.

Both write ``{rollout_data_dir}/{global_steps}.jsonl`` (also ``validation_data_dir``), one line per
sample with ``input``, ``output``, ``gts``, ``score``, ``step`` and every reward-extra key whose
list has one entry per sample (often ``acc``, ``pred``; ``request_id`` in the legacy trainer).

- legacy: no group id. Groups are (step, input); ``acc`` is preferred over ``score`` (DAPO's
  score is ±1 and may carry an overlong penalty). A prompt drawn twice in one step makes one
  2G group that cannot be split: refused (see :func:`check`).
- v1: adds ``uid`` = ``"{uuid4}_{session}_{index}"`` per sample, sorted by it. The uuid4 part is
  drawn per prompt instance, so it is the group; ``session`` is the rollout in [0, n); ``index``
  the output of a multi-output agent loop, of which the last carries the session's reward
  (the trainer keeps the highest index per session the same way for validation).
- Post-filter: with ``algorithm.filter_groups`` (DAPO) the v1 replay buffer evicts zero-variance
  groups before the dump; the dump carries no marker (the statistical test applies).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from ...errors import SchemaError
from ..columns import STEP_NAMES, ColumnMap, find, key_note, split_cols
from ..options import LoadOptions
from ._common import TrainerReader

NAME = "verl"
UID = r"^(.*)_(\d+)_(\d+)$"


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """verl rows, by their keys."""
    cols = set(schema)
    if not ({"input", "output", "score"} <= cols and ("gts" in cols or "step" in cols)):
        return None
    reward = opts.reward_col or ("acc" if "acc" in schema else "score")
    prompt = split_cols(opts.prompt_col) or ("input",)
    step = opts.step_col or find(list(schema), STEP_NAMES)
    if "uid" in schema and schema["uid"] == pl.Utf8 and not opts.group_col:
        uid = pl.col("uid")
        derived = (("__group", uid.str.extract(UID, 1).fill_null(uid)),
                   ("__session", uid.str.extract(UID, 1) + "_" + uid.str.extract(UID, 2)),
                   ("__output", uid.str.extract(UID, 3).cast(pl.Int64).fill_null(0)))
        last = pl.col("__output") == pl.col("__output").max().over(pl.col("__session"))
        return ColumnMap(NAME, prompt, reward=reward, step=step, group="__group",
                         derived=derived, row_filter=last.fill_null(True),
                         note=f"detected verl v1 layout: group = uid's prompt-instance part "
                              f"(uuid4), prompt = {key_note(prompt)}, step from {step}, "
                              f"reward from {reward}")
    by = f"(step: {step}, prompt: {key_note(prompt)})" if step else f"prompt: {key_note(prompt)}"
    return ColumnMap(NAME, prompt, reward=reward, step=step, group=opts.group_col,
                     note=f"detected verl layout: grouping by {by}, reward from {reward}")


def check(per_group: pl.DataFrame, missing: int, plans, where: Callable[[object], str]) -> None:  # noqa: ANN001
    """Legacy dumps (no uid): when every (step, input) group holds a multiple of the usual group
    size G >= 2 and some hold 2G or more, a prompt was drawn twice in one step, and the dump
    cannot separate its groups. Logs of another shape (sizes that are not multiples of G, a
    prompt key chosen with --prompt-col, missing rewards) are left alone."""
    if missing or any(p.group for p in plans) or plans[0].prompt != ("input",) or per_group.height < 2:
        return
    sizes = per_group["n"]
    g = int(sizes.mode().min())
    if g < 2 or bool((sizes % g != 0).any()):
        return
    big = per_group.filter(pl.col("n") >= 2 * g)
    if big.height:
        step, prompt, n = big.row(0)[0], str(big.row(0)[1])[:60], big.row(0)[2]
        raise SchemaError(
            f"verl dump without uid: {big.height} (step, input) groups hold a multiple of the "
            f"group size {g} (e.g. step {step}, {n} rows of {prompt!r}): a prompt drawn twice in "
            f"one step (or two dataset rows with one prompt text), whose groups the dump cannot separate",
            location=where(step),
            remedy="pass --group-col with a per-draw id, or dump with verl's v1 trainer (it writes uid; "
                   "sigmaudit's SigmauditDataset, which needs the legacy trainer, never serves a row twice "
                   "in a step)")


class Verl(TrainerReader):
    """verl generation dumps, read as rows (see the module docstring)."""

    name = NAME
    recognize = staticmethod(recognize)
    check = staticmethod(check)


READER = Verl()
