"""Trainer dumps (verl, TRL, open-instruct, prime-rl) and the bundled sample logs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_loaders_layouts import groups, prompts, write_jsonl

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import LoadOptions, load_counts

SAMPLE_LOGS = Path(__file__).resolve().parents[1] / "sample_logs"


def verl_row(step: int, prompt: str, acc: bool, **extra) -> dict:
    return {"input": prompt, "output": "...", "gts": "4", "score": 1.0 if acc else -1.0,
            "step": step, "acc": acc, "pred": "4" if acc else "5", **extra}


def test_verl_groups_by_step_and_input_and_prefers_acc(tmp_path):
    d = tmp_path / "dump"
    d.mkdir()
    # rows of one step interleaved across prompts, as verl writes them
    write_jsonl(d / "1.jsonl", [verl_row(1, "P", True), verl_row(1, "Q", False),
                                verl_row(1, "P", False), verl_row(1, "Q", False)])
    write_jsonl(d / "2.jsonl", [verl_row(2, "Q", True), verl_row(2, "P", True),
                                verl_row(2, "Q", True), verl_row(2, "P", True)])
    lc = load_counts([d])
    assert lc.layout == "verl" and lc.reward_source == "acc"
    assert lc.notes[0] == "detected verl layout: grouping by (step: step, prompt: input), reward from acc"
    assert_frame_equal(lc.per_group, groups([(1, "P", 2, 1), (1, "Q", 2, 0), (2, "P", 2, 2),
                                             (2, "Q", 2, 2)]))
    assert_frame_equal(lc.per_prompt, prompts([("P", 4, 3), ("Q", 4, 2)]))


def test_verl_without_acc_maps_dapo_score(tmp_path):
    rows = [verl_row(1, "P", a) for a in (True, False, False)]
    for r in rows:
        del r["acc"]
    write_jsonl(tmp_path / "1.jsonl", rows)
    lc = load_counts([tmp_path / "1.jsonl"])
    assert lc.reward_source == "score"
    assert_frame_equal(lc.per_prompt, prompts([("P", 3, 1)]))


def trl_frame(step, rewards: dict[str, list[float]], prompts_=("p1", "p1", "p2", "p2")):
    n = len(prompts_)
    return pl.DataFrame({"step": [step] * n, "prompt": list(prompts_),
                         "completion": ["42"] * n, **rewards, "advantage": [0.0] * n})


def test_trl_string_step_identical_samples_and_a_block_twice_in_one_file_kept_with_a_note(tmp_path):
    d = tmp_path / "completions"
    d.mkdir()
    # step 10 from an older export: string step; two identical samples of p1 are both kept
    trl_frame("10", {"accuracy_reward": [1.0, 1.0, 0.0, 1.0]}).write_parquet(
        d / "completions_00010.parquet")
    block = trl_frame(20, {"accuracy_reward": [0.0, 1.0, 0.0, 0.0]})
    # TRL writes each row of a batch once per file: a block twice in one file is not its writer's
    # structure, so it is kept, and the note says what looked repeated
    pl.concat([block, block]).write_parquet(d / "completions_00020.parquet")
    lc = load_counts([tmp_path])
    assert lc.layout == "trl" and lc.reward_source == "accuracy_reward"
    assert_frame_equal(lc.per_group, groups([(10, "p1", 2, 2), (10, "p2", 2, 1), (20, "p1", 2, 1),
                                             (20, "p1", 2, 1), (20, "p2", 2, 0), (20, "p2", 2, 0)]))
    assert lc.n_rows == 12
    assert not any("duplicate rows dropped" in note for note in lc.notes)
    assert any("completions_00020.parquet's second 4 rows repeat its first 4" in n and "kept" in n
               for n in lc.notes)


def test_trl_several_reward_columns_need_a_choice(tmp_path):
    trl_frame(1, {"accuracy_reward": [1.0, 0.0, 0.0, 0.0],
                  "format_reward": [1.0, 1.0, 1.0, 0.0]}).write_parquet(tmp_path / "c.parquet")
    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path / "c.parquet"])
    assert "several reward columns (accuracy_reward, format_reward)" in err.value.one_line()
    assert "--reward-col" in err.value.one_line()
    lc = load_counts([tmp_path / "c.parquet"], LoadOptions(reward_col="format_reward"))
    assert_frame_equal(lc.per_prompt, prompts([("p1", 2, 2), ("p2", 2, 1)]))


def test_open_instruct_shards_of_one_step_merge(tmp_path):
    write_jsonl(tmp_path / "shard_0.jsonl", [
        {"step": 1, "prompt_idx": 7, "reward": 1.0, "response": "a"},
        {"step": 1, "prompt_idx": 7, "reward": 0.0, "response": "b"}])
    write_jsonl(tmp_path / "shard_1.jsonl", [
        {"step": 1, "prompt_idx": 7, "reward": 1.0, "response": "c"},
        {"step": 1, "prompt_idx": 9, "reward": 0.0, "response": "d"}])
    lc = load_counts([tmp_path])
    assert lc.layout == "open-instruct"
    assert_frame_equal(lc.per_group, groups([(1, "7", 3, 2), (1, "9", 1, 0)]))
    assert lc.n_single_sample_prompts == 1


@pytest.mark.parametrize("nested", [True, False])
def test_prime_rl_traces(tmp_path, nested):
    def row(step, gid, ex, rewards):
        group = {"group": {"id": gid, "example_id": ex}} if nested else {"group.id": gid,
                                                                         "example_id": ex}
        return {"step": step, **group, "traces": [{"reward": r} for r in rewards]}

    write_jsonl(tmp_path / "traces.jsonl", [row(0, "g0", 5, [1.0, 0.0, 0.0]),
                                            row(0, "g1", 6, [0.0, 0.0, 0.0]),
                                            row(1, "g2", 5, [1.0, 1.0, None])])
    lc = load_counts([tmp_path / "traces.jsonl"])
    assert lc.layout == "prime-rl" and lc.reward_source == "traces[].reward"
    assert_frame_equal(lc.per_group, groups([(0, "5", 3, 1), (0, "6", 3, 0), (1, "5", 2, 2)]))
    assert_frame_equal(lc.per_prompt, prompts([("5", 5, 3), ("6", 3, 0)]))
    assert lc.missing_rewards == 1


SAMPLES = {
    # path: (layout, prompts, groups or None, samples read)
    "rollouts.parquet": ("long", 200, 4000, 32000),
    "long.csv": ("long", 300, None, 4800),
    "grouped.parquet": ("grouped", None, 512, 4096),
    "counts.csv": ("counts", 300, None, 300),
}
"""The generic layouts; each trainer's folder is checked against its generator's truth in
test_sample_logs.py."""


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_logs_load_without_flags(name):
    layout, n_prompts, n_groups, n_rows = SAMPLES[name]
    lc = load_counts([SAMPLE_LOGS / name])
    assert (lc.layout, lc.n_rows, lc.missing_rewards) == (layout, n_rows, 0)
    assert int(lc.per_prompt["n"].sum()) == n_rows or layout == "counts"
    if n_prompts is not None:
        assert lc.per_prompt.height == n_prompts
    if n_groups is not None:
        assert lc.per_group is not None and lc.per_group.height == n_groups
    p = lc.per_prompt["k"] / lc.per_prompt["n"]
    assert 0.15 < float((p == 0).mean()) < 0.6  # many never solved
    assert 0.03 < float((p == 1).mean()) < 0.3  # some always solved
    assert float(((p > 0) & (p < 1)).mean()) > 0.25  # a spread in between


def test_sample_logs_stay_small():
    total = sum(f.stat().st_size for f in SAMPLE_LOGS.rglob("*") if f.is_file())
    assert total < 2_000_000


def test_verl_legacy_prompt_drawn_twice_in_a_step_is_refused(tmp_path):
    rows = [verl_row(1, p, a) for p in ("P", "Q", "R") for a in (True, False)]
    rows += [verl_row(1, "P", True), verl_row(1, "P", True)]  # P drawn again: a 4-row group
    write_jsonl(tmp_path / "1.jsonl", rows)
    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path])
    line = err.value.one_line()
    assert "prompt drawn twice in one step" in line and "group size 2" in line
    assert "uid" in line


def test_verl_v1_uid_separates_two_draws_and_keeps_the_last_output(tmp_path):
    rows = [verl_row(1, "P", a, uid=f"aaa_{s}_0") for s, a in enumerate((True, True))]
    rows += [verl_row(1, "P", a, uid=f"bbb_{s}_0") for s, a in enumerate((False, False))]
    # a multi-output session: output 0 carries no reward, output 1 the session's
    rows += [verl_row(1, "Q", False, uid="ccc_0_0"), verl_row(1, "Q", True, uid="ccc_0_1"),
             verl_row(1, "Q", False, uid="ccc_1_0")]
    write_jsonl(tmp_path / "1.jsonl", rows)
    lc = load_counts([tmp_path])
    assert_frame_equal(lc.per_group, groups([(1, "P", 2, 2), (1, "P", 2, 0), (1, "Q", 2, 1)]))
    assert_frame_equal(lc.per_prompt, prompts([("P", 4, 2), ("Q", 2, 1)]))


def test_nemo_rl_dynamic_sampling_reads_filtered_rewards_and_flags_the_dump(tmp_path):
    rows = [{"content": [[p, "x"]], "rewards": [9.0], "filtered_rewards": [r], "idx": i}
            for i, (p, r) in enumerate([("A", 1.0), ("A", 0.0), ("B", 0.0), ("B", 1.0)])]
    write_jsonl(tmp_path / "train_data_step7.jsonl", rows)
    lc = load_counts([tmp_path])
    assert lc.layout == "nemo-rl" and lc.reward_source == "filtered_rewards"
    assert_frame_equal(lc.per_group, groups([(7, "A", 2, 1), (7, "B", 2, 1)]))
    assert lc.filtered is not None and lc.filtered.source == "structure"


def test_consecutive_runs_split_by_the_group_size(tmp_path):
    # ROLL: prompt m1 drawn twice in a row (a run of 4 where groups have 2 rows)
    data = {"global_step": [0] * 6, "id": ["m1"] * 4 + ["m2"] * 2,
            "scores": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]}
    (tmp_path / "rollout_dump_data.step_0.jsonl").write_text(json.dumps(data) + "\n")
    lc = load_counts([tmp_path])
    assert sorted(lc.per_group.select("prompt", "k").rows()) == [("m1", 0), ("m1", 2), ("m2", 1)]


def test_inspect_eval_with_several_scorers_asks_which(tmp_path):
    import zipfile

    log = tmp_path / "task.eval"
    with zipfile.ZipFile(log, "w") as zf:  # deflate members, as Python >= 3.14 or older inspect write
        for sid, epoch, a, b in [(1, 1, "C", "I"), (1, 2, "I", "I"), (2, 1, "C", "C")]:
            zf.writestr(f"samples/{sid}_epoch_{epoch}.json", json.dumps(
                {"id": sid, "epoch": epoch, "scores": {"match": {"value": a}, "judge": {"value": b}}}))
    with pytest.raises(SchemaError) as err:
        load_counts([log])
    assert "several scorers (match, judge)" in err.value.one_line() and "--reward-col" in err.value.one_line()
    lc = load_counts([log], LoadOptions(reward_col="match"))
    assert lc.layout == "inspect-ai"
    assert_frame_equal(lc.per_prompt, prompts([("task | 1", 2, 1), ("task | 2", 1, 1)]))


def test_verl_legacy_refusal_names_the_file_of_the_step_drawn_twice(tmp_path):
    for step in (1, 2, 3):
        rows = [verl_row(step, p, a) for p in ("P", "Q", "R") for a in (True, False)]
        if step == 2:
            rows += [verl_row(2, "P", True), verl_row(2, "P", False)]
        write_jsonl(tmp_path / f"{step}.jsonl", rows)
    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path])
    assert err.value.location == str(tmp_path / "2.jsonl")
    assert "e.g. step 2" in err.value.one_line()
