"""open-instruct: ``rl_utils._save_rollouts`` (``open_instruct/rl_utils.py``), read at
allenai/open-instruct e6c3044aa6201c8bfa4573c1b03142af599e730d.

``{rollouts_save_path}/{run_name}_rollouts_{shard:06d}.jsonl`` (shards of 10,000 samples, a step
may straddle two; each call appends one step's batch with ``open(..., "a")``), beside
``{run_name}_metadata.jsonl`` (run name, git commit, model: skipped). One line per sample,
``asdict(RolloutRecord)``: ``step``, ``sample_idx``, ``prompt_idx`` (= ``sample_idx //
num_samples_per_prompt``: the group's position in that step's batch, not a prompt id),
``prompt_tokens``, ``response_tokens``, ``reward``, ``advantage``, ``finish_reason``, ``dataset``,
``ground_truth``, ``request_info``, ``logprobs``.

- The record shape is taken from ``RolloutRecord``, not inferred from the first lines: only
  ``step``, ``prompt_idx``, ``prompt_tokens``, ``reward`` and ``dataset`` are read, each line on its
  own; ``dataset`` is typed ``str`` but holds whatever ``batch.datasets[i]`` is (a list on some
  lines): a list is joined with ``+``, and no other field is ever parsed into a column.
- group = (step, prompt_idx) within one run (the files' ``{run_name}`` and folder); prompt identity
  across steps = ``prompt_tokens``. A resumed run appends to its shard again: where the steps go back, or
  the same step is written again (``sample_idx`` restarts: resumed from the checkpoint just before
  the last logged step), the later records are another attempt, whose groups are kept apart (a
  note says so).
- rewards are 0 or ``verification_reward`` (10 by default): a reward column with exactly the
  two values {0, v} is read as binary (v = right).
- ``filter_zero_std_samples=True`` (the default) drops zero-std groups in
  ``accumulate_inference_batches`` before the dump: a dump with no zero-std group is marked
  post-filter (source ``structure``).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ...errors import SchemaError
from ..options import Filtered, LoadOptions
from ._common import (
    Normalised,
    TrainerReader,
    first_json_line,
    json_lines,
    plain_name,
    plain_suffix,
    refuse_fractional_step,
)

NAME = "open-instruct"
KEYS = {"step", "prompt_idx", "reward"}
RECORD = ("step", "sample_idx", "prompt_idx", "prompt_tokens", "response_tokens", "reward", "advantage",
          "finish_reason", "dataset")
"""The fields ``RolloutRecord`` always writes (``ground_truth``, ``request_info``, ``logprobs`` may be null)."""
SHARD = re.compile(r"(.*)_rollouts_\d+\.jsonl")


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """``{run}_metadata.jsonl`` beside the rollout shards."""
    if plain_name(path).endswith("_metadata.jsonl") and any(
            SHARD.fullmatch(plain_name(f)) for f in files if f.parent == path.parent):
        return "open-instruct run metadata, not rollouts"
    return None


def claims_path(path: Path) -> bool:
    """Rollout shards, by the keys of their first line (no schema inference over the file)."""
    if plain_suffix(path) not in (".jsonl", ".ndjson"):
        return False
    head = first_json_line(path)
    return bool(head) and KEYS <= set(head) and (set(RECORD) <= set(head) or SHARD.fullmatch(plain_name(path))
                                                 is not None)


def claims(path: Path, schema: dict[str, pl.DataType]) -> bool:
    """Rollout tables of another format (parquet), by their columns."""
    return KEYS <= set(schema)


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "+".join(str(v) for v in value)
    return str(value)


def _tokens(value: object, path: Path, number: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise SchemaError(f"prompt_tokens is a {type(value).__name__}, not a list of token ids",
                          location=f"{path}:{number}", remedy="pass --prompt-col with another key")
    return " ".join(str(t) for t in value)


def _number(value: object, key: str, path: Path, number: int) -> float | None:
    if value is None or isinstance(value, bool | int | float):
        return None if value is None else float(value)
    raise SchemaError(f"{key} is {value!r}, not a number", location=f"{path}:{number}")


def _rows(path: Path, opts: LoadOptions) -> pl.DataFrame:
    """The fields read, one line at a time (parquet: the same columns)."""
    reward = opts.reward_col or "reward"
    if plain_suffix(path) in (".jsonl", ".ndjson"):
        lines = json_lines(path)
    else:
        lines = enumerate(pl.read_parquet(path).to_dicts(), start=1)
    cols: dict[str, list] = {"step": [], "sample_idx": [], "prompt_idx": [], "prompt_tokens": [], "reward": [],
                             "dataset": []}
    for number, r in lines:
        step, idx, sample = r.get("step"), r.get("prompt_idx"), r.get("sample_idx")
        step = None if step is None else _number(step, "step", path, number)
        refuse_fractional_step(None if step is None else float(step), "step", f"{path}:{number}")  # int() truncates
        cols["step"].append(None if step is None else int(step))
        cols["sample_idx"].append(None if sample is None else int(_number(sample, "sample_idx", path, number)))
        cols["prompt_idx"].append(None if idx is None else int(_number(idx, "prompt_idx", path, number)))
        cols["prompt_tokens"].append(_tokens(r.get("prompt_tokens"), path, number))
        cols["reward"].append(_number(r.get(reward), reward, path, number))
        cols["dataset"].append(_text(r.get("dataset")))
    return pl.DataFrame(cols, schema={"step": pl.Int64, "sample_idx": pl.Int64, "prompt_idx": pl.Int64,
                                      "prompt_tokens": pl.Utf8,
                                      "reward": pl.Float64, "dataset": pl.Utf8})


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One shard as a long frame."""
    df = _rows(path, opts)
    tokens = df["prompt_tokens"].null_count() < df.height
    prompt = pl.col("prompt_tokens") if tokens else pl.col("prompt_idx").cast(pl.Utf8)
    reward = pl.col("reward")
    values = df["reward"].drop_nulls().drop_nans().unique().sort().to_list()
    scaled = ""
    if opts.threshold is None and len(values) == 2 and values[0] == 0 and values[1] not in (1, -1):
        reward = reward / values[1]
        scaled = f" (values {{0, {values[1]:g}}} read as binary: {values[1]:g} = right)"
    run = str(run_root(path))
    # each call appends one step's batch: a step lower than the one before starts a resumed run's
    # appends (steps after its checkpoint logged again), whose groups are other groups
    attempt = _restart(df).cum_sum()
    frame = df.select(pl.col("step"),
                      pl.format("{}#{}:{}:{}", pl.lit(run), attempt, "step", "prompt_idx").alias("group"),
                      prompt.alias("prompt"), reward.alias("reward"), pl.col("dataset"))
    notes = f"detected open-instruct rollouts: group = (step, prompt_idx), prompt = " \
            f"{'prompt_tokens' if tokens else 'prompt_idx (no prompt_tokens)'}, step from step, " \
            f"reward from {opts.reward_col or 'reward'}{scaled}"
    return Normalised(frame, NAME, notes, opts.reward_col or "reward", filtered=_filtered(frame),
                      extra_notes=_resumed(df, path))


def _resumed(df: pl.DataFrame, path: Path) -> tuple[str, ...]:
    """A note for each point where the steps go back (a resumed run appending to its shard)."""
    back = df.with_row_index("row").filter(_restart(df))
    out = []
    for row, step in back.select("row", "step").iter_rows():
        before = df["step"][:row].max()
        out.append(f"open-instruct: {path.name}: steps from {step} logged again from record {row + 1:,} on (a "
                   f"resumed run appends; steps up to {before} were logged before): each attempt's groups kept "
                   f"apart, both counted as logged")
    return tuple(out)


def _restart(df: pl.DataFrame) -> pl.Expr:
    """True where a resumed run's appends start: the step goes back, or the same step is written
    again (``sample_idx`` runs 0, 1, ... up within one ``_save_rollouts`` call and does not rise
    where the next call starts: a run resumed from the checkpoint just before its last logged step)."""
    back = pl.col("step") < pl.col("step").shift(1)
    again = (pl.col("step") == pl.col("step").shift(1)) & (pl.col("sample_idx") <= pl.col("sample_idx").shift(1))
    return (back | again).fill_null(False)


def _filtered(frame: pl.DataFrame) -> Filtered | None:
    spread = frame.group_by("group").agg(
        (pl.col("reward").max() > pl.col("reward").min()).alias("mixed"), pl.len())
    if spread.height and bool(spread.filter(pl.col("len") > 1)["mixed"].all()):
        return Filtered("structure", "open-instruct drops zero-std groups before the dump "
                                     "(filter_zero_std_samples=True, the default): no group in "
                                     "this dump is all-right or all-wrong")
    return None


def run_root(path: Path) -> Path:
    """``{rollouts_save_path}/{run_name}``: the shards of one run share their folder and run name."""
    m = SHARD.fullmatch(plain_name(path))
    return path.parent / m.group(1) if m else path.parent


class OpenInstruct(TrainerReader):
    """open-instruct rollout shards (see the module docstring)."""

    name = NAME
    run_root = staticmethod(run_root)
    claims_path = staticmethod(claims_path)
    claims = staticmethod(claims)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = OpenInstruct()
