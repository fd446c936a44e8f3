"""TRL: ``GRPOTrainer.log`` (``trl/trainer/grpo_trainer.py``, ``log_completions=True``), read at
huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8.

Each ``log`` call writes ``{output_dir}/completions/completions_{global_step:05d}.parquet`` with
``step``, ``prompt``, ``completion``, one column per reward function (named after it), any
``log_extra`` columns and ``advantage``. The rows come from ``self._logs``: deques of
``maxlen=generation_batch_size`` that are never cleared, filled once per generation with the
gathered batch, whose groups are consecutive rows (``RepeatSampler`` repeats each prompt
``num_generations`` times in a row).

So a group is a run of consecutive rows with one prompt (runs split into blocks of the gcd of
the run lengths, for a prompt drawn twice in a row), and when a generation batch serves several
optimizer steps (``num_iterations > 1`` or ``steps_per_generation > gradient_accumulation_steps``)
the same batch is written again under the next logged step: a file equal to the previous step's
file (all columns but ``step``) is counted once. A step's rows repeated within one file (older
exports) are dropped the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ...errors import SchemaError
from ..columns import split_cols
from ..options import LoadOptions
from ..readers import POLARS_ERRORS
from ..reduce import drop_repeated_blocks
from ..rewards import is_reward_dtype
from ._common import Normalised, run_groups

NAME = "trl"
NON_REWARD = {"step", "prompt", "completion", "advantage", "image", "images"}
FILE = re.compile(r"completions_(\d+)\.parquet")


def claims(path: Path, schema: dict[str, pl.DataType]) -> bool:
    """TRL completions tables, by their columns."""
    return {"step", "prompt", "completion"} <= set(schema) and "input" not in schema


def _reward(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> str:
    if opts.reward_col:
        if opts.reward_col not in schema:
            raise SchemaError(f"column {opts.reward_col!r} not found; columns: "
                              f"{', '.join(schema)}", location=where,
                              remedy="pick one of the listed columns")
        return opts.reward_col
    candidates = [c for c, t in schema.items() if c not in NON_REWARD and is_reward_dtype(t)]
    if not candidates:
        raise SchemaError("TRL completions file has no reward columns (older TRL versions log none)",
                          location=where, remedy="log rewards, or pass --reward-col COLUMN")
    if len(candidates) > 1:
        raise SchemaError(f"several reward columns ({', '.join(candidates)}); which one means "
                          f"correct?", location=where, remedy="pass --reward-col with one of them")
    return candidates[0]


def _table(path: Path) -> pl.DataFrame:
    try:
        df = pl.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else \
            pl.read_csv(path) if path.suffix.lower() == ".csv" else pl.read_ndjson(path)
    except POLARS_ERRORS as exc:
        from ...errors import InputError

        raise InputError(f"cannot read: {str(exc).splitlines()[0] if str(exc) else exc}",
                         location=str(path)) from exc
    return df.drop([c for c in ("image", "images") if c in df.columns])


def _previous(path: Path) -> Path | None:
    m = FILE.fullmatch(path.name)
    if not m:
        return None
    step = int(m.group(1))
    earlier = [(int(f.group(1)), path.parent / f.group(0)) for f in
               (FILE.fullmatch(p.name) for p in path.parent.iterdir()) if f and int(f.group(1)) < step]
    return max(earlier)[1] if earlier else None


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One completions file as a long frame."""
    df = _table(path)
    where = str(path)
    reward = _reward(dict(df.schema), opts, where)
    prompt = split_cols(opts.prompt_col) or ("prompt",)
    df, duplicates = drop_repeated_blocks(df, "step")
    notes: tuple[str, ...] = ()
    prev = _previous(path)
    if prev is not None:
        before = _table(prev)
        if before.drop("step").equals(df.drop("step")):
            df = df.head(0)
            notes = (f"{path.name}: the generation batch of {prev.name} logged again "
                     f"(one generation serves several steps): counted once",)
    key = (df[prompt[0]].cast(pl.Utf8) if len(prompt) == 1 else
           df.select(pl.concat_str([pl.col(c).cast(pl.Utf8) for c in prompt], separator=" | "))
           .to_series())
    try:
        step = df["step"].cast(pl.Int64)
    except POLARS_ERRORS as exc:
        raise SchemaError("step column 'step' is not an integer step",
                          location=f"{path}: column step") from exc
    frame = pl.DataFrame({"step": step, "group": run_groups(key, path.name), "prompt": key,
                          "reward": df[reward].cast(pl.Float64)})
    return Normalised(frame, NAME, f"detected TRL completions layout: group = a run of "
                      f"consecutive rows with one prompt, prompt = {', '.join(prompt)}, step from "
                      f"step, reward from {reward}", reward, duplicates=duplicates,
                      extra_notes=notes)
