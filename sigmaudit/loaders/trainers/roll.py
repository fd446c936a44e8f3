"""ROLL: ``dump_rollout_to_specific_path`` and ``write_to_json_process``
(``roll/pipeline/rlvr/utils.py``), read at alibaba/ROLL 8eb27cc2dc34c4d1310b169d9b86d339004d811a.

``{rollout_dump_dir}/rollout_dump_data.step_{global_step}.jsonl`` holds ONE JSON object of
parallel lists (the keys of ``COLUMMNS_CONFIG`` present in the batch): ``global_step`` (0-based),
``id`` (dataset row id), ``source``, ``difficulty``, ``prompt``, ``messages``, ``ground_truth``,
``tag``, ``domain``, ``responses``, ``scores``, ``sampling_params``. The batch is the
concatenation of per-prompt groups (``batch.group_by("origin_prompt_id")``) that passed
``query_filter``, so a group is a run of consecutive rows with one ``id``.

- group = a run of consecutive rows with one ``id`` (split into blocks of the gcd of the run
  lengths); prompt = ``id`` (else ``prompt``); step = ``global_step``; reward = ``scores``.
- written after ``query_filter`` (``mean_filter``/``std_filter`` per domain, ``no_filter`` by
  default); the dump carries no marker of it (the statistical test applies).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ...errors import InputError, SchemaError
from ..options import LoadOptions
from ._common import Normalised, TrainerReader, plain_name, read_json_lines, run_groups, whole_steps

NAME = "roll"
FILE = re.compile(r"rollout_dump_data\.step_(\d+)\.jsonl")


def claims_path(path: Path) -> bool:
    """``rollout_dump_data.step_{N}.jsonl`` (also .gz/.zst)."""
    return FILE.fullmatch(plain_name(path)) is not None


def read(path: Path, opts: LoadOptions) -> Normalised:
    """The one object of parallel lists as a long frame."""
    try:
        data = read_json_lines(path)[0]
    except (InputError, IndexError) as exc:
        raise InputError("not one JSON object of parallel lists", location=f"{path}:1") from exc
    reward = opts.reward_col or "scores"
    if not isinstance(data, dict) or not isinstance(data.get(reward), list):
        raise SchemaError(f"ROLL dump without a {reward!r} list", location=f"{path}:1",
                          remedy="pass --reward-col KEY")
    n = len(data[reward])
    for key, value in data.items():
        if isinstance(value, list) and len(value) != n:
            raise SchemaError(f"ROLL lists differ in length: {key!r} has {len(value)}, "
                              f"{reward!r} has {n}", location=f"{path}:1")
    prompt_key = "id" if "id" in data else "prompt"
    prompts = pl.Series("prompt", [None if v is None else str(v) for v in data[prompt_key]],
                        pl.Utf8)
    m = FILE.fullmatch(plain_name(path))
    steps = data.get("global_step") or [int(m.group(1)) if m else None] * n
    cols = {"step": whole_steps(steps, "global_step", str(path)), "group": run_groups(prompts, str(path)),
            "prompt": prompts,
            "reward": pl.Series([None if v is None else float(v) for v in data[reward]],
                                dtype=pl.Float64)}
    for extra in ("domain", "tag", "source"):
        if isinstance(data.get(extra), list):
            cols[extra] = pl.Series([None if v is None else str(v) for v in data[extra]],
                                    dtype=pl.Utf8)
    return Normalised(pl.DataFrame(cols), NAME, f"detected ROLL rollout dump: group = a run of "
                      f"consecutive rows with one {prompt_key}, prompt = {prompt_key}, step from "
                      f"global_step, reward from {reward}", reward)


class ROLL(TrainerReader):
    """ROLL rollout dumps (see the module docstring)."""

    name = NAME
    claims_path = staticmethod(claims_path)
    read = staticmethod(read)


READER = ROLL()
