"""prime-rl: ``FileMonitor.log_episodes`` (``src/prime_rl/monitors/file.py``) writing verifiers'
``Episode.to_record()`` (``verifiers/v1/episode.py``), read at PrimeIntellect-ai/prime-rl
559b44772e471d1538537b8805cc77f3824a5e64 and PrimeIntellect-ai/verifiers
a60a606ecc4d309247edf9ff92c3eabca362781f.

``{output_dir}/rollouts/step_{N}/{train,eval}/{all,effective}/traces.jsonl``, plus the metrics
file ``metrics.jsonl`` (skipped). One line per episode: ``id``, ``env``, ``task`` {``type``,
``data``, ``key``, ``hash``}, ``group`` {``id``}, ``run`` {..., ``work`` {``step``}}, ``ok``,
``errors``, ``traces`` [{..., ``rewards`` {name: {``score``, ``weight``} or null}, ``calls`` [{...,
``usage`` {``prompt_tokens``, ``completion_tokens``, ...}}], ...}].

- a rollout is a trace, its reward ``Trace.reward`` = sum of score x weight over its non-null
  rewards (what prime-rl's advantages use); all rewards null = missing. ``--reward-col NAME``
  takes ``rewards.NAME.score`` instead.
- a trace's generated tokens = the sum of ``calls[].usage.completion_tokens`` (``Trace.usage`` in
  ``verifiers/v1/trace.py``: each model call once); a file whose traces report no usage has no lengths.
- group = ``group.id`` (a uuid per group); prompt = ``task.key`` (else ``task.hash``); step =
  ``run.work.step`` (the group's dispatch step, one value per group: ``dispatcher.py`` stamps
  ``group.step`` on each of its episodes), else the ``step_{N}`` folder. The folder is not the
  group's step: the orchestrator appends each episode to ``all`` on arrival under the step then
  collecting (``progress.step``), so one group's episodes straddle two folders when the batch is
  cut while it is in flight.
- ``all`` holds every arrival, ``effective`` the episodes kept after ``filter_zero_advantages``
  etc.: with both present ``effective`` is skipped; read alone it is marked post-filter
  (source ``structure``). ``eval`` is skipped when ``train`` is present.
- The older layout (one line per group, ``group.id``, ``traces[].reward``) is still read by
  :func:`recognize`.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

from ...errors import SchemaError
from ..columns import PROMPT_NAMES, STEP_NAMES, ColumnMap, find, key_note, split_cols
from ..options import Filtered, LoadOptions
from ._common import (
    Normalised,
    TrainerReader,
    first_json_line,
    json_lines,
    plain_name,
    plain_suffix,
    refuse_fractional_step,
    step_from_name,
)

NAME = "prime-rl"


def _subset(path: Path) -> tuple[str | None, str | None]:
    """(kind, subset) from ``.../{train,eval}/{all,effective}/traces.jsonl``."""
    if plain_name(path) != "traces.jsonl":
        return None, None
    subset, kind = path.parent.name, path.parent.parent.name
    if subset in ("all", "effective") and kind in ("train", "eval"):
        return kind, subset
    return None, None


@functools.lru_cache(maxsize=8)
def _present(files: frozenset[Path]) -> frozenset[str | None]:
    """Every kind and subset among the files (computed once per load)."""
    return frozenset(x for f in files for x in _subset(f))


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """``effective`` beside ``all``, ``eval`` beside ``train``, ``metrics.jsonl``."""
    name = plain_name(path)
    if name not in ("metrics.jsonl", "traces.jsonl"):
        return None
    present = _present(files)
    if name == "metrics.jsonl" and present - {None}:
        return "prime-rl metrics, not rollouts"
    kind, subset = _subset(path)
    if subset == "effective" and "all" in present:
        return "prime-rl `effective` subset (a post-filter copy of `all`, which is read)"
    if kind == "eval" and "train" in present:
        return "prime-rl eval episodes (the train episodes are read)"
    return None


def _fields(dtype: pl.DataType) -> dict[str, pl.DataType]:
    return {f.name: f.dtype for f in dtype.fields} if isinstance(dtype, pl.Struct) else {}


def claims_path(path: Path) -> bool:
    """Episode records: ``traces`` whose entries carry ``rewards`` maps, and a ``task``."""
    if plain_suffix(path) not in (".jsonl", ".ndjson"):
        return False
    head = first_json_line(path)
    if not head or "task" not in head or not isinstance(head.get("traces"), list):
        return False
    traces = head["traces"]
    return not traces or (isinstance(traces[0], dict) and "rewards" in traces[0])


def _trace_reward(trace: dict, name: str | None) -> float | None:
    rewards = trace.get("rewards") or {}
    if name is not None:
        r = rewards.get(name)
        return None if r is None else float(r.get("score", 0.0))
    present = [r for r in rewards.values() if r is not None]
    if not present:
        return None
    return float(sum(float(r.get("score", 0.0)) * float(r.get("weight", 1.0)) for r in present))


LENGTH_SOURCE = "traces[].calls[].usage.completion_tokens"
"""Where a trace's generated tokens are: verifiers' ``Trace.usage`` sums ``completion_tokens`` over the
trace's model calls (each call once), and ``Episode.to_record()`` writes ``calls`` with their ``usage``
(``exclude_none``: a call without usage has none)."""


def _trace_tokens(trace: dict) -> int | None:
    """The trace's generated tokens (``Trace.usage.completion_tokens``), None when no call reports usage."""
    usages = [c["usage"] for c in trace.get("calls") or [] if isinstance(c, dict) and isinstance(c.get("usage"), dict)]
    if not usages:
        return None
    try:
        return sum(int(u["completion_tokens"]) for u in usages)
    except (KeyError, TypeError, ValueError):
        return None


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One traces.jsonl of episodes as a long frame (one row per trace)."""
    kind, subset = _subset(path)
    step_dir = step_from_name(path, r"step_(\d+)")
    name = opts.reward_col
    rows = []
    for number, episode in json_lines(path):
        task = episode.get("task") or {}
        prompt = task.get("key") or task.get("hash")
        group = (episode.get("group") or {}).get("id")
        work = ((episode.get("run") or {}).get("work") or {})
        step = work.get("step") if work.get("step") is not None else step_dir
        refuse_fractional_step(step, "run.work.step", f"{path}:{number}")  # the Int64 frame would truncate it
        env = (episode.get("env") or {}).get("name") or (episode.get("env") or {}).get("id")
        gid = group if group is not None else episode.get("id")
        key = None if prompt is None else str(prompt)
        # pass-through fields are text whatever their JSON type (a field the layout does not use never
        # fails a read)
        gid, env = (None if v is None else str(v) for v in (gid, env))
        rows.extend((step, gid, key, _trace_reward(t, name), env, _trace_tokens(t))
                    for t in episode.get("traces") or [])
    frame = pl.DataFrame(rows, schema={"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8,
                                       "reward": pl.Float64, "env": pl.Utf8, "length": pl.Int64}, orient="row")
    lengths = LENGTH_SOURCE if frame["length"].null_count() < frame.height else None
    if lengths is None:
        frame = frame.drop("length")
    if frame.height and frame["prompt"].null_count() == frame.height:
        raise SchemaError("prime-rl episodes without task.key or task.hash", location=str(path),
                          remedy="write episodes with verifiers' Episode.to_record()")
    source = f"traces[].rewards.{name}.score" if name else "traces[].rewards (score x weight)"
    filtered = None
    if subset == "effective":
        filtered = Filtered("structure", "prime-rl `effective` episodes: kept after "
                                         "filter_zero_advantages (post-filter); read `all` for "
                                         "the run")
    where = f"{kind}/{subset}" if kind else "episodes"
    return Normalised(frame, NAME, f"detected prime-rl episodes ({where}): group = group.id, "
                      f"prompt = task.key, step from run.work.step (else step_N), reward from {source}", source,
                      filtered=filtered, length_source=lengths)


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """The older layout: one line per group, ``group.id``, ``traces[].reward``."""
    traces = schema.get("traces")
    if not isinstance(traces, pl.List):
        return None
    inner = _fields(traces.inner)
    reward_field = opts.reward_col or "reward"
    if reward_field not in inner:
        raise SchemaError(
            f"prime-rl traces have no {reward_field!r} field; fields: {', '.join(inner)}",
            location=where, remedy="pass --reward-col with the field that means correct")
    derived: list[tuple[str, pl.Expr]] = [
        ("__rewards", pl.col("traces").list.eval(pl.element().struct.field(reward_field)))]
    group_fields = _fields(schema.get("group", pl.Null()))
    if "id" in group_fields:
        derived.append(("group.id", pl.col("group").struct.field("id")))
        gid: str | None = "group.id"
    else:
        gid = next((c for c in ("group.id", "group_id") if c in schema), None)
    if gid is None:
        raise SchemaError("prime-rl traces without a group id (group.id)", location=where,
                          remedy="pass --group-col")
    step = opts.step_col or find(list(schema), STEP_NAMES)
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
    return ColumnMap(NAME, prompt, reward="__rewards", step=step, group=gid,
                     list_rewards=True, derived=tuple(derived),
                     note=f"detected prime-rl traces layout: one group per row ({gid}), "
                          f"prompt = {key_note(prompt)}, reward from traces[].{reward_field}")


def run_root(path: Path) -> Path:
    """``{output_dir}`` of ``{output_dir}/rollouts/step_{N}/...``."""
    for parent in path.parents:
        if parent.name == "rollouts" and parent != path.parent:
            return parent.parent
    return path.parent


class PrimeRL(TrainerReader):
    """prime-rl episode records, and the older one-group-per-row layout (see the module docstring)."""

    name = NAME
    run_root = staticmethod(run_root)
    recognize = staticmethod(recognize)
    claims_path = staticmethod(claims_path)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = PrimeRL()
