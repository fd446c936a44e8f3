"""AReaL: ``WorkflowExecutor._dump_trajectory`` (``areal/infra/workflow_executor.py``), read at
inclusionAI/AReaL 4aef98d8d818af55b43621aaadba047ae10f4e77.

``{fileroot}/logs/{user}/{experiment}/{trial}/rollout/{tail_version}/{task_id}.jsonl``
(``eval-rollout/`` for evaluation), one file per rollout task (= one group), appended one line
per sample: ``task_id``, ``sample_idx``, ``seqlen``, ``prompt_len``, ``head_version``,
``tail_version``, ``reward``, ``prompt`` (decoded text), ``completion``. Samples with an empty
completion are not written.

- group = ``task_id``; prompt = ``prompt`` text; step = the version folder (``tail_version``).
  The file is opened in append mode and each dump call writes ``sample_idx`` 0, 1, ... upwards:
  a ``sample_idx`` that does not rise starts another call's group (a ``task_id`` written again
  at the same version: ``TaskIdGenerator`` counts from 0 in every executor and after a resume),
  kept apart and named in a note.
- written before the ``should_accept_fn`` filter: the dump is the run, not a post-filter copy.
- ``eval-rollout/`` is skipped when ``rollout/`` is present.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl

from ..options import LoadOptions
from ._common import Normalised, TrainerReader, first_json_line, plain_suffix, read_json_lines, whole_steps

NAME = "areal"
KEYS = {"task_id", "sample_idx", "head_version", "tail_version", "reward", "prompt"}


def claims_path(path: Path) -> bool:
    """Trajectory dumps, by their keys."""
    if plain_suffix(path) != ".jsonl":
        return False
    head = first_json_line(path)
    return bool(head) and KEYS <= set(head)


@functools.lru_cache(maxsize=8)
def _has_rollout(files: frozenset[Path]) -> bool:
    return any(f.parent.parent.name == "rollout" for f in files)


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """``eval-rollout/`` beside ``rollout/``."""
    if path.parent.parent.name == "eval-rollout" and _has_rollout(files):
        return "AReaL eval-rollout trajectories (rollout/ is read)"
    return None


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One task file as a long frame."""
    rows = read_json_lines(path)
    reward = opts.reward_col or "reward"
    blocks = _blocks(rows)
    frame = pl.DataFrame({
        "step": whole_steps([r.get("tail_version") for r in rows], "tail_version", str(path)),
        "group": [f"{run_root(path)}:{r.get('tail_version')}:{r.get('task_id')}#{b}"
                  for r, b in zip(rows, blocks, strict=True)],
        "prompt": [None if r.get("prompt") is None else str(r.get("prompt")) for r in rows],
        "reward": [None if r.get(reward) is None else float(r[reward]) for r in rows]},
        schema={"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8, "reward": pl.Float64})
    return Normalised(frame, NAME, "detected AReaL trajectories: group = task_id (one file), "
                      "prompt = prompt text, step from tail_version (the version folder), "
                      f"reward from {reward}", reward, extra_notes=_blocks_note(path, blocks))


def _blocks(rows: list[dict]) -> list[int]:
    """The dump call each row came from: a new one wherever ``sample_idx`` does not rise."""
    out, block, last = [], 0, None
    for r in rows:
        idx = r.get("sample_idx")
        if isinstance(idx, int) and isinstance(last, int) and idx <= last:
            block += 1
        last = idx if isinstance(idx, int) else last
        out.append(block)
    return out


def _blocks_note(path: Path, blocks: list[int]) -> tuple[str, ...]:
    if not blocks or blocks[-1] == 0:
        return ()
    return (f"AReaL: {path.name} holds {blocks[-1] + 1} trajectories of one task_id at one version "
            "(sample_idx restarts: the file was appended again, e.g. a resumed run or another "
            "rollout executor): each read as its own group",)


def run_root(path: Path) -> Path:
    """The trial folder of ``{trial}/rollout/{version}/{task}.jsonl``."""
    return path.parents[2] if path.parent.parent.name in ("rollout", "eval-rollout") else path.parent


class AReaL(TrainerReader):
    """AReaL trajectory dumps (see the module docstring)."""

    name = NAME
    run_root = staticmethod(run_root)
    claims_path = staticmethod(claims_path)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = AReaL()
