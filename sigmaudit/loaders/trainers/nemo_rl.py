"""NeMo-RL: ``Logger.log_batched_dict_as_jsonl`` (``nemo_rl/utils/logger.py``) called from
``grpo_train`` and ``validate`` (``nemo_rl/algorithms/grpo.py``), read at NVIDIA-NeMo/RL
7ea279abfbeb698b092856d0dab61e7cf39bc909.

``{log_dir}/train_data_step{N}.jsonl`` (and ``val_data_step{N}.jsonl``). The batch is written
through ``make_microbatch_iterator(1)``, so every field is a one-element list, plus ``idx``:
``content`` [[message strings]] (no roles), ``rewards`` [r], ``advantages``, ``token_ids``...
No step field (the file name has it), no prompt id, no group id. A sample's generated tokens are the
sum of its ``token_loss_mask`` (validation files log ``content`` and ``rewards`` only: no lengths). Rows come from
``repeat_interleave(num_generations_per_prompt)``: a group is G consecutive lines of one prompt.

- prompt = the trajectory's first turn: the tokens of ``token_ids`` before the first token
  ``token_loss_mask`` marks as generated (``add_grpo_token_loss_masks_and_generation_logprobs`` marks
  the assistant messages; ``nemo_rl/experience/rollouts.py`` ``run_multi_turn_rollout`` appends an
  environment message after every generation, so in a multi-turn dump the last message is an
  observation, often ``""``, and "every message but the last" would hold the whole rollout). Shown as
  the messages of ``content`` those rows share. Without the two fields: every message but the last.
  ``--prompt-col KEY`` (keys of the line, comma-separated) replaces it.
- group = a run of consecutive lines with that prompt (split into blocks of the gcd of the run
  lengths); ``--group-col KEY`` reads it from a key of the line instead.
- reward = ``rewards``: one per trajectory (``total_reward``, summed over its turns by the rollout).
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
from ..columns import split_cols
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


def _first_turn(row: dict) -> tuple | None:
    """The tokens before the first generated one (``token_loss_mask`` 1), or None without both fields."""
    ids, mask = _one(row.get("token_ids")), _one(row.get("token_loss_mask"))
    if not isinstance(ids, list) or not isinstance(mask, list) or len(ids) != len(mask):
        return None
    first = next((i for i, m in enumerate(mask) if m), len(mask))
    return tuple(ids[:first])


def _turns(row: dict) -> int:
    """Generated stretches (assistant turns) in ``token_loss_mask``."""
    mask = _one(row.get("token_loss_mask"))
    if not isinstance(mask, list):
        return 1
    return sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))


def _shared(contents: list[list[str]]) -> list[str]:
    """The messages every one of ``contents`` starts with."""
    out: list[str] = []
    for messages in zip(*contents, strict=False):
        if any(m != messages[0] for m in messages):
            break
        out.append(messages[0])
    return out


def _prompts(rows: list[dict]) -> tuple[list[str | None], str]:
    """Each line's prompt key and how it was found (see the module docstring)."""
    turns = [_first_turn(r) for r in rows]
    if not rows or any(t is None for t in turns):
        return [_prompt(r.get("content")) for r in rows], "content minus the response"
    by_turn: dict[tuple, list[list[str]]] = {}
    for t, r in zip(turns, rows, strict=True):
        content = _one(r.get("content"))
        by_turn.setdefault(t, []).append([str(c) for c in content] if isinstance(content, list) else [str(content)])
    # the first turn's messages: as many as the lines of one first turn share where their responses differ
    told = [len(_shared(c)) for c in by_turn.values() if len(c) > 1 and any(x != c[0] for x in c)]
    m = min(told) if told else min(len(c[0]) - 1 for c in by_turn.values())
    names = {t: "\n".join(c[0][:m]) for t, c in by_turn.items()}
    if m < 1 or len(set(names.values())) < len(by_turn):  # two first turns shown alike: keyed by their tokens
        names = {t: " ".join(map(str, t)) for t in by_turn}
    return [names[t] for t in turns], "the first turn (tokens before the first generated token)"


def _keyed(rows: list[dict], keys: tuple[str, ...], what: str, path: Path) -> list[str]:
    """The values of ``keys`` (keys of the line, one-element lists unwrapped) joined by `` | ``."""
    missing = next((k for k in keys if rows and k not in rows[0]), None)
    if missing is not None:
        raise SchemaError(f"NeMo-RL line has no {missing!r} for {what}; keys: {', '.join(rows[0])}",
                          location=f"{path}:1", remedy=f"pass {what} with one of the keys listed")
    return [" | ".join(str(_one(r.get(k))) for k in keys) for r in rows]


LENGTH_KEY = "token_loss_mask"
"""A sample's generated tokens: ``token_loss_mask`` is 1 on the tokens of the assistant messages the rollout
generated (``add_grpo_token_loss_masks_and_generation_logprobs``), 0 on the prompt's and on the padding
(``batched_message_log_to_flat_message`` pads with 0); ``input_lengths`` is prompt + response, not generated."""


def _generated(mask) -> int | None:  # noqa: ANN001
    """The sum of a line's ``token_loss_mask`` (a one-element list of the padded row), None when absent."""
    mask = _one(mask)
    if not isinstance(mask, list) or not all(isinstance(v, int | float) for v in mask):
        return None
    return int(sum(mask))


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
    given = split_cols(opts.prompt_col)
    keys, how = (_keyed(rows, given, "--prompt-col", path), ", ".join(given)) if given else _prompts(rows)
    prompts = pl.Series("prompt", keys, pl.Utf8)
    rewards = [_one(r.get(key)) for r in rows]
    for number, v in enumerate(rewards, start=1):
        if v is not None and not isinstance(v, bool | int | float):
            raise SchemaError(f"NeMo-RL {key!r} is {str(v)[:40]!r}, not one number (the writer's microbatches of "
                              f"one give a one-element list)", location=f"{path}:{number}",
                              remedy="pass --reward-col with a per-sample reward key")
    groups = (pl.Series("group", [f"{path}:{g}" for g in _keyed(rows, (opts.group_col,), "--group-col", path)])
              if opts.group_col else run_groups(prompts, str(path)))
    frame = pl.DataFrame({"step": [step] * len(rows), "group": groups,
                          "prompt": prompts,
                          "reward": pl.Series([None if v is None else float(v) for v in rewards],
                                              dtype=pl.Float64)})
    lengths = [_generated(r.get(LENGTH_KEY)) for r in rows]
    known = any(v is not None for v in lengths)
    if known:
        frame = frame.with_columns(pl.Series("length", lengths, dtype=pl.Int64))
    filtered = None
    if key == "filtered_rewards":
        filtered = Filtered("structure", "NeMo-RL dynamic sampling (filtered_rewards): only "
                                         "non-zero-std groups were trained and dumped")
    group = f"group = {opts.group_col}" if opts.group_col else "group = a run of consecutive lines with one prompt"
    most = max((_turns(r) for r in rows), default=1)
    turns = f"; multi-turn: up to {most} generated turns per line, one line per trajectory" if most > 1 else ""
    return Normalised(frame, NAME, f"detected NeMo-RL {m.group(1)} data: {group}, prompt = {how}, "
                      f"step from the file name, reward from {key}{turns}", key, filtered=filtered,
                      length_source=f"sum of {LENGTH_KEY}" if known else None)


class NeMoRL(TrainerReader):
    """NeMo-RL ``*_data_step{N}.jsonl`` (see the module docstring)."""

    name = NAME
    key_options = frozenset({"prompt_col", "group_col"})
    claims_path = staticmethod(claims_path)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = NeMoRL()
