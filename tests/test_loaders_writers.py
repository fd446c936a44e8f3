"""Dumps in each trainer's writer format at the commit docs/trainers.md pins, checked against the
truth they were written from (hand-written fixtures in tests/fixtures/writers/, small, no trainer
code). Each test is named after the defect it reproduces, or after the writer behaviour it pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from sigmaudit.loaders import LoadOptions, load_counts

WRITERS = Path(__file__).resolve().parent / "fixtures" / "writers"


def _groups(lc) -> list[tuple[int, int]]:
    """(n, k) of every logged group, sorted."""
    return sorted(zip(lc.per_group["n"].to_list(), lc.per_group["k"].to_list(), strict=True))


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
    steps = dict(zip(lc.per_group["k"].to_list(), lc.per_group["step"].to_list(), strict=True))
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


def test_verl_legacy_balanced_order_identical_completions_head_format():
    """verl ``RayPPOTrainer._write_generations`` (1dda039): rows in ``_balance_batch`` order (groups
    interleaved), DAPO ``score`` ±1 beside ``acc``; silent groups of G identical completions are
    groups, not repeats. Truth: 5 groups (step, input) of 4, two silent."""
    lc = load_counts([WRITERS / "verl-legacy"])
    assert (lc.layout, lc.reward_source) == ("verl", "acc")
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (3, 20, 5)
    assert _groups(lc) == [(4, 0), (4, 3), (4, 3), (4, 3), (4, 4)]
    assert _silent(lc) == pytest.approx(0.4, abs=1e-12)


def test_verl_v1_prompt_drawn_twice_and_multi_output_session_head_format():
    """verl v1 ``_log_rollout_data`` (1dda039): uid = {uuid4}_{session}_{index}; prompt A drawn
    twice in step 1 is two groups; session 2 of the first draw has outputs 0 and 1, only the last is
    its sample. Truth: groups (3, 3), (3, 2), (3, 0); 9 samples."""
    lc = load_counts([WRITERS / "verl-v1"])
    assert (lc.layout, lc.reward_source) == ("verl", "score")
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (2, 9, 3)
    assert _groups(lc) == [(3, 0), (3, 2), (3, 3)]
    assert _silent(lc) == pytest.approx(2 / 3, abs=1e-12)


def test_trl_num_iterations_two_one_prompt_batches_counted_once_head_format():
    """TRL ``GRPOTrainer.log`` (f2cd577) with num_iterations = 2: each generation batch (1 prompt x
    G = 3) is logged at two steps. The run's fixed period proves the repeats; the G identical
    completions of batch 2 stay a silent group. Truth: 3 groups, 9 samples, 1 silent."""
    lc = load_counts([WRITERS / "trl-iterations"])
    assert (lc.layout, lc.reward_source) == ("trl", "accuracy_reward")
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (2, 9, 3)
    assert _groups(lc) == [(3, 1), (3, 2), (3, 3)]
    assert _silent(lc) == pytest.approx(1 / 3, abs=1e-12)
    kept = load_counts([WRITERS / "trl-iterations"], LoadOptions(keep_duplicates=True))
    assert kept.n_rows == 18


def test_open_instruct_resumed_at_last_logged_step_keeps_attempts_apart():
    """open-instruct ``_save_rollouts`` (e6c3044), filter_zero_std_samples=False, 2 samples a
    prompt, ``dataset`` a string or a list; resumed after step 2 from step 1's checkpoint, so step 2
    is appended again to shard 0 (same step, sample_idx back to 0; prompt 3 again at prompt_idx 0).
    Read as one (step 2, prompt_idx 0) group it was 4 rows (6 groups, 3 silent). Truth: 7 groups of 2
    (each attempt kept apart), 4 silent."""
    lc = load_counts([WRITERS / "open-instruct-resumed"])
    assert (lc.layout, lc.filtered) == ("open-instruct", None)
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == (3, 14, 7)
    assert _groups(lc) == [(2, 0), (2, 0), (2, 1), (2, 1), (2, 1), (2, 2), (2, 2)]
    assert _silent(lc) == pytest.approx(4 / 7, abs=1e-12)
    assert any("logged again" in n for n in lc.notes)
    assert not any("several prompts" in n for n in lc.notes)
