"""Atropos: ``BaseEnv.handle_send_to_api`` (``atroposlib/envs/base.py``) writing each scored group with
``jsonlines`` to ``data_path_to_save_groups``, read at NousResearch/atropos
296a0bc55760e43b9c0743c052f8d6c2732606d1.

One line per ``ScoredDataGroup``: ``tokens`` [G token lists], ``masks`` (-100 on the tokens not trained),
``scores`` [G floats], ``messages`` [G conversations] (optional, ``include_messages``), ``overrides``,
``group_overrides``, plus any key the environment adds (e.g. ``seed``). A group is the G rollouts
``collect_trajectories`` drew from one item; no item id, no step.

- group = the line; reward = each entry of ``scores`` (environments score as they like: shaped scores
  need ``--threshold``).
- prompt = the context the G rollouts were drawn from: the messages every rollout of the group starts
  with (all but the last message when the G rollouts are identical); without ``messages``, the tokens
  they share before the first trained one. For a single-turn environment that is the first user turn;
  a multi-turn environment that writes one group per turn (e.g. ``environments/community/selcube``,
  one group per turn of one ``seed``) gets each turn's context as its own prompt, so turns of one
  episode are never pooled as samples of one prompt (a note counts them). ``--prompt-col KEY``
  (a key of the line or of ``group_overrides``) replaces it, with a warning when it pools groups whose
  contexts differ.
- ``ensure_scores_are_not_same`` (default True) drops groups whose scores all agree before they are
  written: such a file shows no silent group (sigmaudit's statistical post-filter check says so).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ...errors import SchemaError
from ..columns import split_cols
from ..options import LoadOptions
from ._common import Normalised, TrainerReader, first_json_line, plain_suffix, read_json_lines

NAME = "atropos"
KEYS = {"tokens", "masks", "scores"}
AGENT_ROLES = ("assistant", "agent")
"""Roles atropos trains on (``tokenize_for_trainer.UNMASKED_ROLES``)."""


def claims_path(path: Path) -> bool:
    """A jsonl file of scored groups, by the keys of its first line."""
    if plain_suffix(path) != ".jsonl":
        return False
    head = first_json_line(path)
    return bool(head) and KEYS <= set(head) and isinstance(head.get("scores"), list)


def _shared(items: list[list]) -> list:
    out = []
    for column in zip(*items, strict=False):
        first = json.dumps(column[0], sort_keys=True)
        if any(json.dumps(x, sort_keys=True) != first for x in column[1:]):
            break
        out.append(column[0])
    return out


def _context(group: dict) -> tuple[str, bool]:
    """(the group's context as its prompt key, whether it holds an earlier agent turn)."""
    messages = group.get("messages")
    if isinstance(messages, list) and messages and all(isinstance(m, list) for m in messages):
        shared = _shared(messages)
        if len(shared) == min(len(m) for m in messages):  # identical rollouts: all but the response
            shared = shared[:-1]
        later = any(isinstance(m, dict) and m.get("role") in AGENT_ROLES for m in shared)
        return json.dumps(shared, ensure_ascii=False, sort_keys=True), later
    tokens, masks = group.get("tokens") or [], group.get("masks") or []
    trained = [next((i for i, x in enumerate(m) if x != -100), len(m)) for m in masks] or [0]
    shared = _shared(tokens)[: min(trained)]
    return " ".join(map(str, shared)), False


def _keyed(group: dict, keys: tuple[str, ...], number: int, path: Path) -> str:
    values = []
    for key in keys:
        overrides = group.get("group_overrides") if isinstance(group.get("group_overrides"), dict) else {}
        if key not in group and key not in overrides:
            raise SchemaError(f"atropos group has no {key!r} (keys: {', '.join(group)})",
                              location=f"{path}:{number}", remedy="pass --prompt-col with a key of the line")
        values.append(str(group[key] if key in group else overrides[key]))
    return " | ".join(values)


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One file of scored groups as a long frame."""
    groups = read_json_lines(path)
    given = split_cols(opts.prompt_col)
    rows: dict[str, list] = {"group": [], "prompt": [], "reward": []}
    contexts: dict[str, set[str]] = {}
    later = 0
    for number, group in enumerate(groups, start=1):
        scores = group.get("scores")
        if not isinstance(scores, list) or any(s is not None and not isinstance(s, int | float) for s in scores):
            raise SchemaError(f"atropos 'scores' is {str(scores)[:40]!r}, not a list of numbers",
                              location=f"{path}:{number}", remedy="give the file of scored groups")
        context, turn = _context(group)
        later += turn
        key = _keyed(group, given, number, path) if given else context
        contexts.setdefault(key, set()).add(context)
        rows["group"] += [f"{path}:{number}"] * len(scores)
        rows["prompt"] += [key] * len(scores)
        rows["reward"] += [None if s is None else float(s) for s in scores]
    frame = pl.DataFrame({"step": [None] * len(rows["reward"]), **rows},
                         schema={"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8, "reward": pl.Float64})
    notes = []
    if later and not given:
        notes.append(f"atropos: {later} of {len(groups)} groups are later turns of an episode (their context holds "
                     f"an earlier agent turn): each turn's context is its own prompt, never pooled with the first turn")
    pooled = sum(1 for c in contexts.values() if len(c) > 1)
    if given and pooled:
        notes.append(f"atropos: --prompt-col {opts.prompt_col} pools groups drawn from different contexts (turns of "
                     f"one episode?) for {pooled} of its {len(contexts)} values: their rollouts are counted as samples "
                     f"of one prompt")
    prompt = opts.prompt_col or "the context the group's rollouts share (messages, else tokens)"
    return Normalised(frame, NAME, f"detected atropos scored groups: group = a line, prompt = {prompt}, no step, "
                      "reward from scores", "scores", extra_notes=tuple(notes))


class Atropos(TrainerReader):
    """Atropos scored-group files (see the module docstring)."""

    name = NAME
    key_options = frozenset({"prompt_col"})
    claims_path = staticmethod(claims_path)
    read = staticmethod(read)


READER = Atropos()
