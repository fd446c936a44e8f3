"""open-instruct: ``rl_utils._save_rollouts`` (``open_instruct/rl_utils.py``), read at
allenai/open-instruct e6c3044aa6201c8bfa4573c1b03142af599e730d.

``{rollouts_save_path}/{run_name}_rollouts_{shard:06d}.jsonl`` (shards of 10,000 samples, a step
may straddle two), beside ``{run_name}_metadata.jsonl`` (run name, git commit, model: skipped).
One line per sample, a ``RolloutRecord``: ``step``, ``sample_idx``, ``prompt_idx`` (=
``sample_idx // num_samples_per_prompt``: the group's position in that step's batch, not a
prompt id), ``prompt_tokens``, ``response_tokens``, ``reward``, ``advantage``,
``finish_reason``, ``dataset``, ``ground_truth``, ``request_info``, ``logprobs``.

- group = (step, prompt_idx); prompt identity across steps = ``prompt_tokens``.
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

from ..options import Filtered, LoadOptions
from ._common import Normalised

NAME = "open-instruct"
KEYS = {"step", "prompt_idx", "reward"}


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """``{run}_metadata.jsonl`` beside the rollout shards."""
    if path.name.endswith("_metadata.jsonl") and any(
            re.search(r"_rollouts_\d+\.jsonl$", f.name) for f in files if f.parent == path.parent):
        return "open-instruct run metadata, not rollouts"
    return None


def claims(path: Path, schema: dict[str, pl.DataType]) -> bool:
    """Rollout shards, by their keys."""
    return KEYS <= set(schema)


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One shard as a long frame."""
    from ._common import read_json_lines

    wanted = ("step", "prompt_idx", "prompt_tokens", "reward", "dataset")
    rows = read_json_lines(path) if path.suffix.lower() in (".jsonl", ".ndjson") else \
        pl.read_parquet(path).to_dicts()
    df = pl.DataFrame([{k: r.get(k) for k in wanted} for r in rows],
                      schema_overrides={"prompt_tokens": pl.List(pl.Int64), "reward": pl.Float64,
                                        "dataset": pl.Utf8})
    tokens = df["prompt_tokens"].null_count() < df.height
    prompt = (pl.col("prompt_tokens").cast(pl.List(pl.Utf8)).list.join(" ") if tokens
              else pl.col("prompt_idx").cast(pl.Utf8))
    reward = pl.col("reward")
    values = df["reward"].drop_nulls().drop_nans().unique().sort().to_list()
    scaled = ""
    if opts.threshold is None and len(values) == 2 and values[0] == 0 and values[1] not in (1, -1):
        reward = reward / values[1]
        scaled = f" (values {{0, {values[1]:g}}} read as binary: {values[1]:g} = right)"
    frame = df.select(pl.col("step"),
                      pl.format("{}:{}", "step", "prompt_idx").alias("group"),
                      prompt.alias("prompt"), reward.alias("reward"), pl.col("dataset"))
    notes = f"detected open-instruct rollouts: group = (step, prompt_idx), prompt = " \
            f"{'prompt_tokens' if tokens else 'prompt_idx (no prompt_tokens)'}, step from step, " \
            f"reward from reward{scaled}"
    return Normalised(frame, NAME, notes, "reward", filtered=_filtered(frame))


def _filtered(frame: pl.DataFrame) -> Filtered | None:
    spread = frame.group_by("group").agg(
        (pl.col("reward").max() > pl.col("reward").min()).alias("mixed"), pl.len())
    if spread.height and bool(spread.filter(pl.col("len") > 1)["mixed"].all()):
        return Filtered("structure", "open-instruct drops zero-std groups before the dump "
                                     "(filter_zero_std_samples=True, the default): no group in "
                                     "this dump is all-right or all-wrong")
    return None
