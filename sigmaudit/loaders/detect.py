"""Layout detection for one file: trainer dumps first, then counts, grouped, long.

Rules (first match wins; every LoadOptions field overrides its guess):

1. A trainer dump recognised by its keys (see :mod:`.trainers`).
2. counts: ``n_col``/``k_col``/``rate_col`` given, or an n-like column (``n``, ``n_samples``,
   ``num_samples``, ``total``...) with a k-like column (``k``, ``n_correct``, ``num_correct``,
   ``correct``, ``successes``...), or a rate column (``pass_rate``, ``solve_rate``,
   ``accuracy``, ``rate``) with an n column or ``samples``.
3. grouped: a list column of numbers/booleans (``rewards``, ``scores``, ``correct``...; or the
   only one); each row is a group.
4. long: a prompt-like column and a reward-like column, one row per sample.

The prompt key is the prompt-like column plus any "run-like" columns present (``run``,
``model``, ``temperature``, ``split``, ``dataset``...): files that pool several runs or models
(e.g. EvalPerf's per-task rates for 34 runs) then keep task X of run A apart from task X of
run B. ``prompt_col`` (comma-separated for several columns) replaces this guess.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from ..errors import ConfigError, SchemaError, few
from . import trainers
from .columns import (
    EXTRA_KEY_NAMES,
    GROUP_NAMES,
    K_NAMES,
    N_NAMES,
    PROMPT_NAMES,
    RATE_NAMES,
    REWARD_LIST_NAMES,
    REWARD_NAMES,
    STEP_NAMES,
    ColumnMap,
    find,
    ignored_steps,
    key_note,
    require_columns,
    run_note,
    split_cols,
)
from .options import LoadOptions
from .rewards import check_reward_dtype, is_reward_dtype

COUNTS_GROUP_NAMES = ("group_id",)
"""Group-id column names recognised in a counts file (``sigmaudit reduce`` writes ``group_id``)."""
FLAGS = "--prompt-col and --reward-col (long), --n-col/--k-col or --rate-col (counts)"


def nested_fields(schema: dict[str, pl.DataType], names: list[str | None]) -> dict[str, tuple[pl.DataType, pl.Expr]]:
    """The fields of struct columns that ``names`` (the options' columns) spell as ``a.b`` (or ``a.b.c``) and
    that are not columns themselves: each name with its type and the expression reading it. A record's
    nested field (``{"metrics": {"correct": 1}}``, read as a struct) is named as the writer nests it."""
    out: dict[str, tuple[pl.DataType, pl.Expr]] = {}
    for name in names:
        if not name or name in schema or "." not in name:
            continue
        head, *rest = name.split(".")
        dtype, expr = schema.get(head), pl.col(head)
        for part in rest:
            if not isinstance(dtype, pl.Struct):
                dtype = None
                break
            fields = {f.name: f.dtype for f in dtype.fields}
            dtype, expr = fields.get(part), expr.struct.field(part)
        if dtype is not None and not isinstance(dtype, pl.Struct):
            out[name] = (dtype, expr)
    return out


def detect(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap:
    """The plan for one file with this schema (a struct's field named ``a.b`` by an option read as a column)."""
    named = [*split_cols(opts.prompt_col), opts.step_col, opts.group_col, opts.reward_col, opts.n_col,
             opts.k_col, opts.rate_col]
    nested = nested_fields(schema, named)
    if nested:
        plan = _detect({**schema, **{k: t for k, (t, _) in nested.items()}}, opts, where)
        return dataclasses.replace(plan, derived=(*plan.derived, *((k, e) for k, (_, e) in nested.items())))
    return _detect(schema, opts, where)


def _detect(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap:
    cols = list(schema)
    require_columns(cols, [*split_cols(opts.prompt_col), opts.step_col, opts.group_col,
                           opts.n_col, opts.k_col, opts.rate_col], where)
    if opts.reward_col and opts.reward_col not in cols and "traces" not in cols:
        require_columns(cols, [opts.reward_col], where)
    if opts.threshold is not None and not math.isfinite(opts.threshold):
        raise ConfigError(f"must be a finite number, got {opts.threshold!r}", location="--threshold",
                          remedy="give the reward at or above which an answer is correct, e.g. --threshold 0.5")
    if opts.rate_scale is not None and not (math.isfinite(opts.rate_scale) and opts.rate_scale > 0):
        raise ConfigError(f"must be a positive number, got {opts.rate_scale!r}", location="--rate-scale",
                          remedy="give the full scale of the pass rates, e.g. --rate-scale 100 for percentages")
    if opts.samples is not None and opts.samples < 1:
        raise ConfigError(f"samples must be a positive integer, got {opts.samples}",
                          location="--samples")
    plan = trainers.recognize(schema, opts, where)
    if plan is None:
        plan = _generic(schema, opts, where)
    if plan.reward and not plan.list_rewards:
        require_columns(cols, [plan.reward], where)
        check_reward_dtype(schema[plan.reward], plan.reward, where)
    return with_length(plan, schema, opts, where)


def with_length(plan: ColumnMap, schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap:
    """The plan with ``--length-col`` (generated tokens per rollout) as its length column: a numeric column
    of a layout with one row per rollout."""
    column = opts.length_col
    if column is None:
        return plan
    require_columns(list(schema), [column], where)
    if plan.list_rewards or plan.layout == "counts":
        raise ConfigError(f"the {plan.layout} layout has no row per rollout, so a per-rollout length column cannot "
                          f"be read", location="--length-col", remedy="drop --length-col, or give a log with one "
                                                                        "row per rollout")
    if not schema[column].is_numeric():
        raise SchemaError(f"length column {column!r} holds {schema[column]} values, not token counts",
                          location=f"{where}: column {column}",
                          remedy="pass --length-col with a column of generated tokens per rollout")
    return dataclasses.replace(plan, length=column)


def _generic(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap:
    cols = list(schema)
    step = opts.step_col or find(cols, STEP_NAMES)
    counts = _counts(schema, opts, step, where)
    if counts is not None:
        return counts
    lists = [c for c, t in schema.items() if isinstance(t, pl.List) and is_reward_dtype(t.inner)]
    scalars = [c for c, t in schema.items() if is_reward_dtype(t)]
    if opts.reward_col and opts.reward_col in lists:
        list_col: str | None = opts.reward_col
    elif opts.reward_col or find(scalars, REWARD_NAMES, exclude=(step,)):
        # a scalar reward column wins: a list beside it (a response mask, token ids, logprobs) is
        # not the rewards of a group
        list_col = None
    else:
        list_col = find(lists, REWARD_LIST_NAMES) or (lists[0] if len(lists) == 1 else None)
    if list_col is not None:
        prompt = _prompt(cols, opts, (step, list_col), where)
        by = f"(step: {step}, prompt: {key_note(prompt)})" if step else f"prompt: {key_note(prompt)}"
        return ColumnMap("grouped", prompt, reward=list_col, step=step, list_rewards=True,
                         note=f"detected grouped layout: one group per row by {by}"
                              f"{run_note(prompt, bool(opts.prompt_col))}, rewards from list column {list_col}"
                              f"{ignored_steps(cols, (step, *prompt))}")
    reward = opts.reward_col or find(cols, REWARD_NAMES)
    if reward is None:
        raise SchemaError(f"columns match no layout (no reward or count columns); "
                          f"columns: {few(cols, 4, 32)}", location=where, remedy=f"pass {FLAGS}")
    group = opts.group_col or find(cols, GROUP_NAMES, exclude=(step, reward))
    prompt = split_cols(opts.prompt_col)
    if not prompt:
        base = find(cols, PROMPT_NAMES, exclude=(step, reward))
        if base is None and group is None:
            raise SchemaError(f"no prompt key column found; columns: {few(cols, 4, 32)}",
                              location=where, remedy="pass --prompt-col")
        prompt = _with_extras(cols, base or group or "", (step, reward, group))
    return ColumnMap("long", prompt, reward=reward, step=step, group=group,
                     note=f"detected long layout: prompt = {key_note(prompt)}"
                          f"{run_note(prompt, bool(opts.prompt_col))}, "
                          f"reward from {reward}, {_grouping(cols, prompt, step, group)}")


def _grouping(cols: list[str], prompt: tuple[str, ...], step: str | None, group: str | None) -> str:
    """How a long log's groups are formed, every column named: ``groups by (step: step, group id: uid)``; a
    column serving as both prompt key and group id, and a step-like column left aside, are said (issue 42 item 4)."""
    parts = [p for p in (step and f"step: {step}", group and f"group id: {group}") if p]
    grouping = f"groups by ({', '.join(parts)})" if parts else (
        "no group membership (no step or group column: every prompt's samples pool into one count and no logged "
        "group's silence is seen; name the columns with --step-col / --group-col if the file has them)")
    if group is not None and group in prompt and step is None:
        grouping += (f"; column {group} serves as both prompt key and group id (each {group} value is one group and "
                     f"one prompt): if it names a prompt drawn at several steps, pass --step-col, or name the prompt "
                     f"with --prompt-col")
    return grouping + ignored_steps(cols, (step, group, *prompt))


def _with_extras(cols: list[str], base: str, used: tuple[str | None, ...]) -> tuple[str, ...]:
    extras = [c for c in cols if c.lower() in EXTRA_KEY_NAMES and c not in used and c != base]
    return (*extras, base)


def _prompt(cols: list[str], opts: LoadOptions, used: tuple[str | None, ...],
            where: str) -> tuple[str, ...]:
    given = split_cols(opts.prompt_col)
    if given:
        return given
    base = find(cols, PROMPT_NAMES, exclude=used)
    if base is None:
        raise SchemaError(f"no prompt key column found; columns: {few(cols, 4, 32)}",
                          location=where, remedy="pass --prompt-col")
    return _with_extras(cols, base, used)


def _counts(schema: dict[str, pl.DataType], opts: LoadOptions, step: str | None,
            where: str) -> ColumnMap | None:
    cols = list(schema)
    if opts.reward_col and not (opts.n_col or opts.k_col or opts.rate_col):
        return None
    n = opts.n_col or find(cols, N_NAMES, exclude=(step,))
    k = opts.k_col or find(cols, K_NAMES, exclude=(step, n))
    rate = opts.rate_col or (None if opts.k_col else find(cols, RATE_NAMES, exclude=(step, n, k)))
    explicit = opts.n_col or opts.k_col or opts.rate_col
    if not explicit and not (n and k) and not rate:
        return None
    if k is None and rate is None:
        raise SchemaError(f"counts layout needs a k (correct) or pass-rate column; "
                          f"columns: {few(cols, 4, 32)}", location=where,
                          remedy="pass --k-col or --rate-col")
    if k is None and n is None and opts.samples is None:
        raise SchemaError(f"pass-rate column {rate!r} needs the number of samples per prompt",
                          location=where, remedy="pass --samples N or --n-col")
    if k is not None and n is None:
        if opts.samples is None:
            raise SchemaError(f"k column {k!r} needs the number of samples per prompt",
                              location=where, remedy="pass --samples N or --n-col")
    for c in (n, k, rate):
        if c is not None and not schema[c].is_numeric():
            raise SchemaError(f"count column {c!r} holds {schema[c]} values, not numbers",
                              location=f"{where}: column {c}", remedy="pass --n-col/--k-col")
    prompt = _prompt(cols, opts, (step, n, k, rate), where)
    # a group id (as `sigmaudit reduce` writes) keeps each row its own group; only this exact name
    group = opts.group_col or find(cols, COUNTS_GROUP_NAMES, exclude=(step, n, k, rate, *prompt))
    scaled = f"{rate}/{opts.rate_scale:g}" if opts.rate_scale is not None else rate
    source = k if k is not None else f"{scaled} x {n or opts.samples}"
    extra = (f" (prompt key combines {', '.join(prompt)}: several runs share this file)"
             if len(prompt) > 1 and not opts.prompt_col else "")
    groups = f", one group per row (group id: {group})" if group else ""
    steps = f", step from {step}" if step else ""
    return ColumnMap("counts", prompt, step=step, group=group, n=n, k=k, rate=None if k else rate,
                     note=f"detected counts layout: prompt = {key_note(prompt)}, "
                          f"n from {n or f'--samples {opts.samples}'}, "
                          f"k from {source}{steps}{groups}{extra}{ignored_steps(cols, (step, group, *prompt))}")
