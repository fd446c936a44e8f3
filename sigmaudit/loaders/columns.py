"""A :class:`ColumnMap`: which columns of one file mean prompt, step, group and reward (or n, k)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ..errors import SchemaError, few

PROMPT_NAMES = ("prompt_id", "problem_id", "task_id", "question_id", "example_id", "prompt_idx",
                "problem_idx", "question_idx", "id", "index", "prompt", "problem", "question",
                "input", "uid")
REWARD_NAMES = ("reward", "score", "correct", "is_correct", "acc", "pass", "passed", "label",
                "success", "solved")
REWARD_LIST_NAMES = ("rewards", "scores", "correct", "results", "correctness", "passes", "acc",
                     "reward", "score", "labels")
STEP_NAMES = ("step", "global_step", "iteration", "train_step", "training_step")
STEP_LIKE_NAMES = ("epoch", "iter")
"""Columns that may count training steps but are not read as the step unasked: an evaluator's ``epoch`` is often
a repeat of every sample (inspect_ai's epochs), whose (epoch, prompt) "groups" would hold one sample each. The
detection note says such a column was left aside and names ``--step-col`` (issue 42 item 4)."""
GROUP_NAMES = ("group_id", "group", "uid")
N_NAMES = ("n", "n_samples", "num_samples", "total", "n_total", "samples", "trials")
K_NAMES = ("k", "n_correct", "num_correct", "correct", "successes", "n_success", "n_passed",
           "num_passed")
RATE_NAMES = ("pass_rate", "solve_rate", "accuracy", "rate", "success_rate")
EXTRA_KEY_NAMES = ("run", "model", "model_name", "temperature", "split", "dataset", "subset",
                   "config", "checkpoint")


@dataclass(frozen=True, eq=False)
class ColumnMap:
    """How to reduce one file to counts."""

    layout: str
    """Layout name (see ``LAYOUTS``)."""
    prompt: tuple[str, ...]
    """Columns whose values, joined by `` | ``, form the prompt key."""
    reward: str | None = None
    """Per-sample reward column, or the list column of rewards when ``list_rewards``."""
    step: str | None = None
    """Step column."""
    group: str | None = None
    """Group-id column."""
    n: str | None = None
    """Counts: samples column."""
    k: str | None = None
    """Counts: correct column."""
    rate: str | None = None
    """Counts: pass-rate column."""
    list_rewards: bool = False
    """Each row is a group whose rewards are a list in ``reward``."""
    dedupe: tuple[str, ...] = ()
    """Columns on which exact duplicate rows are dropped (TRL)."""
    derived: tuple[tuple[str, pl.Expr], ...] = field(default=())
    """Columns to compute before selecting (e.g. fields of nested structs)."""
    note: str = ""
    """The one-line detection note."""
    row_filter: pl.Expr | None = None
    """Rows to keep, after ``derived`` (verl v1: the last output of each session)."""
    length: str | None = None
    """Per-sample column of generated tokens (``--length-col``, or the framework reader's ``length``);
    None: the log carries no token counts."""

    @property
    def key_columns(self) -> list[str]:
        """The columns compared as text: the prompt key's and the group id."""
        return [c for c in (*self.prompt, self.group) if c]

    @property
    def value_columns(self) -> list[str]:
        """The columns read as numbers: reward (not a list), n, k, rate, length."""
        reward = None if self.list_rewards else self.reward
        return [c for c in (reward, self.n, self.k, self.rate, self.length) if c]

    @property
    def has_groups(self) -> bool:
        """Group membership is known."""
        return self.list_rewards or self.step is not None or self.group is not None


def find(columns: list[str], names: tuple[str, ...], exclude: tuple[str | None, ...] = ()) -> str | None:
    """The first column whose lower-cased name is in ``names`` (in ``names`` order)."""
    lower = {c.lower(): c for c in reversed(columns) if c not in exclude}
    for name in names:
        if name in lower:
            return lower[name]
    return None


def require_columns(columns: list[str], wanted: list[str | None], where: str) -> None:
    """Every named override must be a column of the file."""
    for name in wanted:
        if name is not None and name not in columns:
            raise SchemaError(
                f"column {name!r} not found; columns: {few(columns, 4, 32)}",
                location=where, remedy="pick one of the listed columns",
            )


def split_cols(text: str | None) -> tuple[str, ...]:
    """``"run,task_id"`` -> ``("run", "task_id")``."""
    if not text:
        return ()
    return tuple(c.strip() for c in text.split(",") if c.strip())


def ignored_steps(columns: list[str], used: tuple[str | None, ...]) -> str:
    """The note's warning for step-like columns (:data:`STEP_LIKE_NAMES`) left aside, or ``""``."""
    lower = {c.lower() for c in used if c}
    left = [c for c in columns if c.lower() in STEP_LIKE_NAMES and c.lower() not in lower]
    if not left:
        return ""
    return "".join(f"; column {c} looks like a training step and is not read as one: pass --step-col {c} if it "
                     f"counts steps (each ({c}, prompt) is then a group)" for c in left)


def run_note(prompt: tuple[str, ...], given: bool) -> str:
    """The note's words for the run-like columns the key took in (:data:`EXTRA_KEY_NAMES`), or ``""``."""
    runs = [c for c in prompt[:-1] if c.lower() in EXTRA_KEY_NAMES] if not given else []
    return f" (run-like {', '.join(runs)} kept in the key)" if runs else ""


def key_note(prompt: tuple[str, ...]) -> str:
    """How the prompt key reads in a note."""
    return prompt[0] if len(prompt) == 1 else "(" + ", ".join(prompt) + ")"
