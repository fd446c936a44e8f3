"""Step windows: a load cut to the logged groups of some training steps (``--steps A:B``, ``--last-steps N``).

A training run moves, so a figure is only meaningful over a stated span of steps. :func:`cut` keeps the
logged groups whose step lies in the window and rebuilds the per-prompt counts from them alone, so every
figure computed afterwards (observed or predicted) is the window's; :func:`whole` names the span of a
load that was not cut. Both set :attr:`LoadedCounts.window`.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from ..errors import ConfigError
from .options import LoadedCounts, Window
from .runs import PSEUDO_COLUMNS

__all__ = ["cut", "parse_steps", "whole"]


def parse_steps(text: str) -> tuple[int | None, int | None]:
    """``A:B`` (inclusive; either side may be empty: ``A:``, ``:B``) or a single step ``A``.

    >>> parse_steps("5:10"), parse_steps("90:"), parse_steps(":3"), parse_steps("7")
    ((5, 10), (90, None), (None, 3), (7, 7))
    """
    raw = text.strip()
    if raw in ("", ":"):
        raise ConfigError(f"{text!r} names no step", location="--steps",
                          remedy="give A:B (inclusive), A: or :B, e.g. --steps 50:100")
    parts = raw.split(":") if ":" in raw else [raw, raw]
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = (None if p.strip() == "" else int(p.strip()) for p in parts)
    except ValueError:
        raise ConfigError(f"{text!r} is not a step range", location="--steps",
                          remedy="give A:B (inclusive), A: or :B with whole steps, e.g. --steps 50:100") from None
    if a is not None and b is not None and a > b:
        raise ConfigError(f"{text!r} ends before it starts", location="--steps", remedy=f"e.g. --steps {b}:{a}")
    return a, b


def _steps_of(loaded: LoadedCounts) -> pl.Series | None:
    """The distinct non-null steps of the load's groups (or of its series), sorted; None without steps."""
    if not loaded.has_steps:
        return None
    frame = loaded.series if loaded.layout == "series" else loaded.per_group
    if frame is None or "step" not in frame.columns:
        return None
    steps = frame["step"].drop_nulls().unique().sort()
    return steps if steps.len() else None


def whole(loaded: LoadedCounts) -> LoadedCounts:
    """``loaded`` with ``window`` naming the whole log's span (unchanged when it has no steps)."""
    steps = _steps_of(loaded)
    if steps is None or loaded.window is not None:
        return loaded
    window = Window(int(steps[0]), int(steps[-1]), steps.len())
    parts = tuple((v, whole(p)) for v, p in loaded.parts)
    return dataclasses.replace(loaded, window=window, parts=parts)


def cut(loaded: LoadedCounts, steps: str | tuple[int | None, int | None] | None = None,
        last_steps: int | None = None) -> LoadedCounts:
    """``loaded`` cut to a step window: ``steps`` (``"A:B"`` or (A, B), inclusive, None = open) or the last
    ``last_steps`` distinct logged steps; neither: the whole log (:func:`whole`).

    The per-prompt counts are rebuilt from the window's groups (prompts without a group in the window
    drop out); with ``--by`` every part gets the same steps. ConfigError when the log has no steps or
    the window holds no group.
    """
    if steps is None and last_steps is None:
        return whole(loaded)
    flag = f"--steps {steps}" if isinstance(steps, str) else "--last-steps" if last_steps is not None else "--steps"
    if steps is not None and last_steps is not None:
        raise ConfigError("--steps and --last-steps both name a window", location="--last-steps",
                          remedy="give one of them")
    logged = _steps_of(loaded)
    if logged is None:
        raise ConfigError(f"this log has no training steps, so {flag.split()[0]} has nothing to cut",
                          location=flag.split()[0],
                          remedy="name the step column with --step-col (a counts table needs step and group "
                                 "columns: `sigmaudit reduce` writes them), or drop the window")
    if last_steps is not None:
        if last_steps < 1:
            raise ConfigError(f"must be at least 1, got {last_steps}", location="--last-steps", remedy="e.g. 10")
        if loaded.by in PSEUDO_COLUMNS and loaded.parts:
            return _last_per_run(loaded, last_steps)
        lo, hi = int(logged[max(0, logged.len() - last_steps)]), int(logged[-1])
        asked = f"--last-steps {last_steps}"
    else:
        lo, hi = parse_steps(steps) if isinstance(steps, str) else steps  # type: ignore[misc]
        asked = f"--steps {'' if lo is None else lo}:{'' if hi is None else hi}"
    return _cut(loaded, lo, hi, asked, (int(logged[0]), int(logged[-1])))


def _in(lo: int | None, hi: int | None) -> pl.Expr:
    step = pl.col("step")
    expr = step.is_not_null()
    if lo is not None:
        expr &= step >= lo
    if hi is not None:
        expr &= step <= hi
    return expr


def _cut(loaded: LoadedCounts, lo: int | None, hi: int | None, asked: str, span: tuple[int, int]) -> LoadedCounts:
    """The window [lo, hi] of ``loaded`` (and of each ``--by`` part)."""
    if loaded.layout == "series":
        series = loaded.series.filter(_in(lo, hi))  # type: ignore[union-attr]
        if series.height == 0:
            raise _empty(asked, span)
        steps = series["step"].unique()
        window = Window(int(steps.min()), int(steps.max()), steps.len(), asked)  # type: ignore[arg-type]
        return dataclasses.replace(loaded, series=series, window=window, cache={})
    groups = loaded.per_group.filter(_in(lo, hi))  # type: ignore[union-attr]
    if groups.height == 0:
        raise _empty(asked, span)
    per_prompt = groups.group_by("prompt").agg(pl.col("n").sum(), pl.col("k").sum()).sort("prompt")
    per_prompt = per_prompt.with_columns(pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64))
    steps = groups["step"].unique()
    window = Window(int(steps.min()), int(steps.max()), steps.len(), asked)  # type: ignore[arg-type]
    notes = [*loaded.notes, f"window {window.describe()}: {groups.height:,} of {loaded.per_group.height:,} "  # type: ignore[union-attr]
                            f"logged groups, {per_prompt.height:,} prompts"]
    if loaded.missing_rewards:
        notes.append(f"the {loaded.missing_rewards:,} missing rewards of the whole log are not split by step: "
                     "the window counts none")
    parts = tuple((v, _cut_part(p, lo, hi, asked)) for v, p in loaded.parts)
    return dataclasses.replace(
        loaded, per_prompt=per_prompt, per_group=groups, n_rows=int(groups["n"].sum()), missing_rewards=0,
        n_single_sample_prompts=int((per_prompt["n"] == 1).sum()), notes=tuple(notes), window=window,
        cache={}, parts=tuple(p for p in parts if p[1] is not None))  # type: ignore[misc]


def _last_per_run(loaded: LoadedCounts, last_steps: int) -> LoadedCounts:
    """``--by run|file --last-steps N``: each run (or file) keeps its own last N logged steps, since runs do not
    share a step axis (a run that ended early keeps its last steps instead of vanishing); the pooled load is
    the union of those windows (issue 36 item 16)."""
    parts = tuple((v, cut(p, last_steps=last_steps)) for v, p in loaded.parts)
    groups = pl.concat([p.per_group for _, p in parts], how="vertical_relaxed")  # type: ignore[misc]
    asked = f"--last-steps {last_steps} (each {loaded.by}'s own)"
    pooled = _cut(dataclasses.replace(loaded, per_group=groups, parts=()), None, None, asked, (0, 0))
    note = (f"window: each {loaded.by}'s last {last_steps:,} logged step{'s' if last_steps != 1 else ''} "
            f"({pooled.window.describe()}): {groups.height:,} of "  # type: ignore[union-attr]
            f"{loaded.per_group.height:,} logged groups, {pooled.per_prompt.height:,} prompts")  # type: ignore[union-attr]
    return dataclasses.replace(pooled, parts=parts, notes=(*pooled.notes[:-1], note))


def _cut_part(part: LoadedCounts, lo: int | None, hi: int | None, asked: str) -> LoadedCounts | None:
    """A ``--by`` part cut to the pooled window (None when none of its groups falls in it)."""
    if part.per_group is None or part.per_group.filter(_in(lo, hi)).height == 0:
        return None
    return _cut(part, lo, hi, asked, (0, 0))


def _empty(asked: str, span: tuple[int, int]) -> ConfigError:
    return ConfigError(f"no logged group in the window ({asked}): the log's steps run {span[0]}–{span[1]}",
                       location=asked.split()[0], remedy=f"pick steps within {span[0]}:{span[1]}")
