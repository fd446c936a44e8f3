"""Dumps in each trainer's writer format at the commit docs/trainers.md pins, checked against the
truth they were written from (hand-written fixtures in tests/fixtures/writers/, small, no trainer
code). Each test is named after the defect it reproduces, or after the writer behaviour it pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from sigmaudit.loaders import load_counts

WRITERS = Path(__file__).resolve().parent / "fixtures" / "writers"


def _groups(lc) -> list[tuple[int, int]]:
    """(n, k) of every logged group, sorted."""
    return sorted(zip(lc.per_group["n"].to_list(), lc.per_group["k"].to_list()))


def _silent(lc) -> float:
    pg = lc.per_group
    return float(((pg["k"] == 0) | (pg["k"] == pg["n"])).mean())


def test_prime_rl_group_straddling_two_step_folders_is_one_group():
    """prime-rl's orchestrator appends each episode to ``all`` on arrival under the step then
    collecting (``progress.step``): group b (G = 4, all correct, dispatched at step 1) has two
    episodes in step_1 and two in step_2. Read by folder step it was two groups of 2 (5 groups,
    silent 3/5 = 0.6); by ``run.work.step`` (one value per group) it is one group of 4."""
    lc = load_counts([WRITERS / "prime-rl-straddle"])
    assert lc.layout == "prime-rl"
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (4, 16, 4)
    assert _groups(lc) == [(4, 0), (4, 1), (4, 2), (4, 4)]  # d: 1 of 4, a: 2 of 4, b: 4, c: 0
    assert _silent(lc) == pytest.approx(0.5, abs=1e-12)
    steps = dict(zip(lc.per_group["k"].to_list(), lc.per_group["step"].to_list()))
    assert steps[4] == 1 and steps[1] == 2  # b keeps its dispatch step; d is step 2's


def test_areal_task_file_appended_twice_is_two_groups():
    """AReaL's ``_dump_trajectory`` appends to ``{tail_version}/{task_id}.jsonl``, and
    ``TaskIdGenerator`` counts from 0 in every executor and after a resume: one file can hold two
    dump calls of one prompt (``sample_idx`` restarts at 0). Read as one group it was 7 rows with
    6 right (not silent: observed silent 1/2); the calls are a silent group of 4 and a mixed one of 3
    (its sample 1 had an empty completion, not written)."""
    lc = load_counts([WRITERS / "areal-append"])
    assert lc.layout == "areal"
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (2, 11, 3)
    assert _groups(lc) == [(3, 2), (4, 0), (4, 4)]
    assert _silent(lc) == pytest.approx(2 / 3, abs=1e-12)
    assert any("sample_idx restarts" in n for n in lc.notes)
