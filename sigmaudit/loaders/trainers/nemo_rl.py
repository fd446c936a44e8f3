"""NeMo-RL: ``Logger.log_batched_dict_as_jsonl`` (``nemo_rl/utils/logger.py``) called from
``grpo_train`` and ``validate`` (``nemo_rl/algorithms/grpo.py``), read at NVIDIA-NeMo/RL
7ea279abfbeb698b092856d0dab61e7cf39bc909.

``{log_dir}/train_data_step{N}.jsonl`` (and ``val_data_step{N}.jsonl``). The batch is written
through ``make_microbatch_iterator(1)``, so every field is a one-element list, plus ``idx``:
``content`` [[message strings]] (no roles), ``rewards`` [r], ``advantages``, ``token_ids``...
No step field (the file name has it), no prompt id, no group id. Rows come from
``repeat_interleave(num_generations_per_prompt)``: a group is G consecutive lines of one prompt.

- prompt = every message but the last (the response) of ``content``, joined; group = a run of
  consecutive lines with that prompt (split into blocks of the gcd of the run lengths).
- with ``grpo.use_dynamic_sampling`` the trained (non-zero-std) rows' rewards are in
  ``filtered_rewards`` and ``rewards`` holds the unfiltered batch (misaligned with the rows):
  ``filtered_rewards`` is read and the dump is marked post-filter (source ``structure``).
- ``val_data_step*.jsonl`` is skipped when train files are present.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import polars as pl

from ...errors import SchemaError
from ..options import Filtered, LoadOptions
from ._common import Normalised, TrainerReader, plain_name, read_json_lines, run_groups

NAME = "nemo-rl"
FILE = re.compile(r"(train|val)_data_step(\d+)\.jsonl")


def claims_path(path: Path) -> bool:
    """``train_data_step{N}.jsonl`` / ``val_data_step{N}.jsonl`` (also .gz/.zst)."""
    return FILE.fullmatch(plain_name(path)) is not None


@functools.lru_cache(maxsize=8)
def _has_train(files: frozenset[Path]) -> bool:
    return any((f := FILE.fullmatch(plain_name(p))) is not None and f.group(1) == "train" for p in files)


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """Validation files beside training files."""
    m = FILE.fullmatch(plain_name(path))
    if m and m.group(1) == "val" and _has_train(files):
        return "NeMo-RL validation samples (the train_data_step files are read)"
    return None


def _one(value):  # noqa: ANN001, ANN202
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _prompt(content) -> str | None:  # noqa: ANN001
    content = _one(content)
    if isinstance(content, list):
        return "\n".join(str(c) for c in content[:-1]) if len(content) > 1 else str(content[0])
    return None if content is None else str(content)


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One ``*_data_step{N}.jsonl`` as a long frame."""
    m = FILE.fullmatch(plain_name(path))
    assert m is not None
    step = int(m.group(2))
    rows = read_json_lines(path)
    key = opts.reward_col or ("filtered_rewards" if rows and "filtered_rewards" in rows[0]
                              else "rewards")
    if rows and key not in rows[0]:
        raise SchemaError(f"NeMo-RL line has no {key!r}; keys: {', '.join(rows[0])}",
                          location=f"{path}:1", remedy="pass --reward-col KEY")
    prompts = pl.Series("prompt", [_prompt(r.get("content")) for r in rows], pl.Utf8)
    rewards = [_one(r.get(key)) for r in rows]
    for number, v in enumerate(rewards, start=1):
        if v is not None and not isinstance(v, bool | int | float):
            raise SchemaError(f"NeMo-RL {key!r} is {str(v)[:40]!r}, not one number (the writer's microbatches of "
                              f"one give a one-element list)", location=f"{path}:{number}",
                              remedy="pass --reward-col with a per-sample reward key")
    frame = pl.DataFrame({"step": [step] * len(rows), "group": run_groups(prompts, str(path)),
                          "prompt": prompts,
                          "reward": pl.Series([None if v is None else float(v) for v in rewards],
                                              dtype=pl.Float64)})
    filtered = None
    if key == "filtered_rewards":
        filtered = Filtered("structure", "NeMo-RL dynamic sampling (filtered_rewards): only "
                                         "non-zero-std groups were trained and dumped")
    return Normalised(frame, NAME, f"detected NeMo-RL {m.group(1)} data: group = a run of "
                      f"consecutive lines with one prompt, prompt = content minus the response, "
                      f"step from the file name, reward from {key}", key, filtered=filtered)


class NeMoRL(TrainerReader):
    """NeMo-RL ``*_data_step{N}.jsonl`` (see the module docstring)."""

    name = NAME
    claims_path = staticmethod(claims_path)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = NeMoRL()
