"""SkyRL: ``dump_per_dataset_eval_results`` (``skyrl/train/utils/trainer_utils.py``), called from
``skyrl/train/evaluate.py``, read at NovaSky-AI/SkyRL a9564572eb8e91076be43c1bd5e4615e3de17265.

``{export_path}/dumped_evals/global_step_{N}_evals/{data_source}.jsonl`` (``eval_only/`` without
a step) plus ``aggregated_results.jsonl`` (the eval metrics: skipped). One line per sample:
``input_prompt``, ``output_response``, ``score`` (a float, or a per-token list with the reward
on the last token), ``stop_reason``, ``env_class``, ``env_extras``, ``data_source``.

- prompt = ``input_prompt`` (decoded prompt tokens); group = (step, data_source, prompt);
  step = ``global_step_{N}`` folder; reward = ``score`` (its last entry when a list).
- step-wise trajectories (``generator.step_wise_trajectories``): ``evaluate_step_wise`` dumps every
  step, not only the last (``concat_generator_outputs``; ``SkyRLGymGenerator.generate`` appends a
  trajectory's ``step_outputs`` in order, each with its own ``prompt_ids``: the context so far). A line
  whose ``input_prompt`` extends the line before it (that line's prompt, then its response) is the next
  step of the same trajectory: a trajectory is one sample, its prompt the first step's ``input_prompt``
  and its reward the last step's ``score`` (a note counts the steps folded).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..options import LoadOptions
from ._common import (
    Normalised,
    TrainerReader,
    first_json_line,
    plain_name,
    plain_suffix,
    read_json_lines,
    step_from_name,
)

NAME = "skyrl"
KEYS = {"input_prompt", "output_response", "score"}


def claims_path(path: Path) -> bool:
    """Per-dataset eval dumps, by their keys."""
    if plain_suffix(path) != ".jsonl":
        return False
    head = first_json_line(path)
    return bool(head) and KEYS <= set(head)


def skip(path: Path, files: frozenset[Path]) -> str | None:
    """``aggregated_results.jsonl``: metrics, not samples."""
    if plain_name(path) == "aggregated_results.jsonl":
        return "SkyRL aggregated eval metrics, not samples"
    return None


def _score(value) -> float | None:  # noqa: ANN001
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value is None else float(value)


def _continues(line: dict, before: dict) -> bool:
    """``line`` is the next step of ``before``'s trajectory: its prompt extends ``before``'s prompt, and the
    extension holds ``before``'s response."""
    prompt, earlier = line.get("input_prompt"), before.get("input_prompt")
    if not isinstance(prompt, str) or not isinstance(earlier, str) or len(prompt) <= len(earlier):
        return False
    return prompt.startswith(earlier) and str(before.get("output_response") or "").strip() in prompt[len(earlier):]


def _trajectories(rows: list[dict]) -> tuple[list[dict], int]:
    """One row per trajectory (first step's prompt, last step's score and the rest) and the steps folded."""
    out: list[dict] = []
    folded = 0
    for i, row in enumerate(rows):
        if i and out and _continues(row, rows[i - 1]):
            out[-1] = {**row, "input_prompt": out[-1]["input_prompt"]}
            folded += 1
        else:
            out.append(row)
    return out, folded


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One per-dataset file as a long frame (the steps of a step-wise trajectory folded into one sample)."""
    rows, folded = _trajectories(read_json_lines(path))
    step = step_from_name(path, r"global_step_(\d+)_evals")
    reward = opts.reward_col or "score"
    source = [str(r.get("data_source")) for r in rows]
    prompt = [None if r.get("input_prompt") is None else str(r.get("input_prompt")) for r in rows]
    frame = pl.DataFrame({
        "step": [step] * len(rows),
        "group": [f"{path}:{step}:{s}:{p}" for s, p in zip(source, prompt, strict=True)],
        "prompt": prompt, "reward": [_score(r.get(reward)) for r in rows],
        "data_source": source},
        schema={"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8, "reward": pl.Float64,
                "data_source": pl.Utf8})
    notes = (f"SkyRL: {folded} lines of {path.name} are later steps of step-wise trajectories (their input_prompt "
             f"extends the line before it): {len(rows)} trajectories, each one sample with its first step's prompt "
             f"and its last step's {reward}",) if folded else ()
    return Normalised(frame, NAME, "detected SkyRL eval dump: group = (step, data_source, "
                      "input_prompt), prompt = input_prompt, step from global_step_N_evals, "
                      f"reward from {reward} (last token)", reward, extra_notes=notes)


def run_root(path: Path) -> Path:
    """``{export_path}`` of ``{export_path}/dumped_evals/global_step_{N}_evals/{data_source}.jsonl``."""
    return path.parents[2] if path.parent.parent.name == "dumped_evals" else path.parent


class SkyRL(TrainerReader):
    """SkyRL per-dataset eval dumps (see the module docstring)."""

    name = NAME
    run_root = staticmethod(run_root)
    claims_path = staticmethod(claims_path)
    skip = staticmethod(skip)
    read = staticmethod(read)


READER = SkyRL()
