"""Recognising trainer dumps by their keys: verl, TRL, open-instruct, prime-rl.

- verl ``_dump_generations`` writes ``{step}.jsonl`` rows with ``input``, ``output``, ``gts``,
  ``score``, ``step`` and the reward extras (often ``acc``, ``pred``). Rows are reordered within
  a step, so groups are (step, input). ``acc`` is preferred over ``score`` (DAPO's score is ±1
  and may carry an overlong penalty).
- TRL ``GRPOTrainer`` writes ``completions/completions_{step:05d}.parquet`` with ``step``,
  ``prompt``, ``completion``, one column per reward function and ``advantage``. Groups are
  (step, prompt); exact duplicate rows are dropped.
- open-instruct rollout shards: ``step``, ``prompt_idx``, ``reward`` (plus response, dataset...).
- prime-rl ``traces.jsonl``: one row per group, ``group.id`` (nested or flattened) and
  ``traces`` (a list of records with a ``reward``).
"""

from __future__ import annotations

import polars as pl

from ..errors import SchemaError
from .columns import PROMPT_NAMES, STEP_NAMES, ColumnMap, find, key_note, split_cols
from .options import LoadOptions
from .rewards import is_reward_dtype

TRL_NON_REWARD = {"step", "prompt", "completion", "advantage", "image", "images"}


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """The plan for a known trainer dump, or None."""
    cols = set(schema)
    if {"input", "output", "score"} <= cols and ("gts" in cols or "step" in cols):
        return _verl(schema, opts)
    if {"step", "prompt", "completion"} <= cols:
        return _trl(schema, opts, where)
    if {"prompt_idx", "reward", "step"} <= cols:
        return _simple("open-instruct", schema, opts, "prompt_idx", "reward")
    if "traces" in cols:
        return _prime_rl(schema, opts, where)
    return None


def _step(schema: dict[str, pl.DataType], opts: LoadOptions) -> str | None:
    return opts.step_col or find(list(schema), STEP_NAMES)


def _verl(schema: dict[str, pl.DataType], opts: LoadOptions) -> ColumnMap:
    reward = opts.reward_col or ("acc" if "acc" in schema else "score")
    prompt = split_cols(opts.prompt_col) or ("input",)
    step = _step(schema, opts)
    by = f"(step, {key_note(prompt)})" if step else key_note(prompt)
    return ColumnMap("verl", prompt, reward=reward, step=step, group=opts.group_col,
                note=f"detected verl layout: grouping by {by}, reward from {reward}")


def _trl(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap:
    if opts.reward_col:
        reward = opts.reward_col
    else:
        candidates = [c for c, t in schema.items()
                      if c not in TRL_NON_REWARD and is_reward_dtype(t)]
        if not candidates:
            raise SchemaError(
                "TRL completions file has no reward columns (older TRL versions log none)",
                location=where, remedy="log rewards, or pass --reward-col COLUMN",
            )
        if len(candidates) > 1:
            raise SchemaError(
                f"several reward columns ({', '.join(candidates)}); which one means correct?",
                location=where, remedy="pass --reward-col with one of them",
            )
        reward = candidates[0]
    prompt = split_cols(opts.prompt_col) or ("prompt",)
    step = _step(schema, opts)
    dedupe = tuple(c for c in schema if c not in ("image", "images"))
    return ColumnMap("trl", prompt, reward=reward, step=step, group=opts.group_col, dedupe=dedupe,
                note=f"detected TRL completions layout: grouping by (step, {key_note(prompt)}), "
                     f"reward from {reward}")


def _simple(layout: str, schema: dict[str, pl.DataType], opts: LoadOptions, prompt: str,
            reward: str) -> ColumnMap:
    key = split_cols(opts.prompt_col) or (prompt,)
    rcol = opts.reward_col or reward
    step = _step(schema, opts)
    return ColumnMap(layout, key, reward=rcol, step=step, group=opts.group_col,
                note=f"detected {layout} layout: grouping by (step, {key_note(key)}), "
                     f"reward from {rcol}")


def _struct_fields(dtype: pl.DataType) -> dict[str, pl.DataType]:
    return {f.name: f.dtype for f in dtype.fields} if isinstance(dtype, pl.Struct) else {}


def _prime_rl(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    traces = schema["traces"]
    if not isinstance(traces, pl.List):
        return None
    inner = _struct_fields(traces.inner)
    reward_field = opts.reward_col or "reward"
    if reward_field not in inner:
        raise SchemaError(
            f"prime-rl traces have no {reward_field!r} field; fields: {', '.join(inner)}",
            location=where, remedy="pass --reward-col with the field that means correct",
        )
    derived: list[tuple[str, pl.Expr]] = [
        ("__rewards", pl.col("traces").list.eval(pl.element().struct.field(reward_field)))]
    group_fields = _struct_fields(schema.get("group", pl.Null()))
    if "id" in group_fields:
        derived.append(("group.id", pl.col("group").struct.field("id")))
        gid = "group.id"
    else:
        gid = next((c for c in ("group.id", "group_id") if c in schema), None)
    if gid is None:
        raise SchemaError("prime-rl traces without a group id (group.id)", location=where,
                          remedy="pass --group-col")
    step = _step(schema, opts)
    if step is None and "step" in group_fields:
        derived.append(("group.step", pl.col("group").struct.field("step")))
        step = "group.step"
    prompt = split_cols(opts.prompt_col)
    if not prompt:
        top = find(list(schema), PROMPT_NAMES, exclude=("traces",))
        nested = find(list(group_fields), PROMPT_NAMES, exclude=("id",))
        if top:
            prompt = (top,)
        elif nested:
            derived.append((f"group.{nested}", pl.col("group").struct.field(nested)))
            prompt = (f"group.{nested}",)
        else:
            prompt = (gid,)
    return ColumnMap("prime-rl", prompt, reward="__rewards", step=step, group=gid,
                list_rewards=True, derived=tuple(derived),
                note=f"detected prime-rl traces layout: one group per row ({gid}), "
                     f"prompt = {key_note(prompt)}, reward from traces[].{reward_field}")
