"""Trainer output folders as trainers write them, and metrics files that carry the answer (issue 43).

Every file is written as its writer writes it (tests/hf_output_dir.py: transformers 5.10.4 ``TrainerState.save_to_json``
and ``Trainer._save_checkpoint``, PEFT 0.21.2 ``save_pretrained``, TRL 1.16.0 ``GRPOTrainer.log``), and every figure
is checked against the shares written, never against sigmaudit's own output."""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
import threading
import time
from pathlib import Path

import hf_output_dir as hf
import pytest
from cli_runner import run


def _steps(out: str) -> dict[int, float]:
    return {s["step"]: s["observed_silent"] for s in json.loads(out)["steps"]}


@pytest.mark.slow
def test_the_writer_helper_writes_what_transformers_writes(tmp_path):
    """tests/hf_output_dir.state_json against the writer itself, byte for byte (NaN included)."""
    callback = pytest.importorskip("transformers.trainer_callback")
    log = [hf.record(s, 0.25, 4, math.nan if s == 2 else 0.25) for s in range(1, 5)]
    state = callback.TrainerState(log_history=log, global_step=4, max_steps=4, save_steps=2, epoch=1.0,
                                    logging_steps=1)
    state.save_to_json(str(tmp_path / "a.json"))
    assert (tmp_path / "a.json").read_text() == hf.state_json(log, 4, 4, 2)


def test_scan_of_an_output_dir_reads_the_series_once_and_skips_the_peft_files(capsys, tmp_path):
    """Three checkpoints, each trainer_state.json holding every record before it, PEFT and tokenizer files beside
    them: the series once (was: refused over adapter_config.json, or "no prompt key column found")."""
    z = hf.shares(30, seed=1)
    hf.output_dir(tmp_path, z, save_steps=10)
    code, out, err = run(capsys, "scan", str(tmp_path), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(z, abs=0)
    assert "per-step series in 3 files" in err
    # steps 1-10 given in all three files, 11-20 in two: 2 x 10 + 10 values read once
    assert "30 step values logged again in a later file" in err
    assert "skipped" in err and "adapter_config.json" in err and "PEFT's adapter config (save_pretrained)" in err
    code, out, err = run(capsys, "trend", str(tmp_path), "-f", "json")
    assert code == 0 and _steps(out) == pytest.approx(z, abs=0)


def test_conflicting_checkpoints_are_refused_naming_both_files(capsys, tmp_path):
    """A checkpoint of an abandoned attempt beside the resumed run's: one step, two values."""
    z = hf.shares(20, seed=2)
    hf.output_dir(tmp_path, z, save_steps=10)
    stale = dict(z)
    stale[7] = 1.0 if z[7] != 1.0 else 0.0
    log = [hf.record(s, stale[s], 20) for s in range(1, 16)]
    hf.save_checkpoint(tmp_path, log, 15, 20, 10)
    code, out, err = run(capsys, "scan", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "step 7 holds silent" in err and "checkpoint-15" in err
    assert "checkpoint-10" in err or "checkpoint-20" in err


def test_two_runs_of_series_are_refused_not_pooled(capsys, tmp_path):
    hf.output_dir(tmp_path / "run-a", hf.shares(10, seed=3), save_steps=10)
    hf.output_dir(tmp_path / "run-b", hf.shares(10, seed=4), save_steps=10)
    code, _, err = run(capsys, "scan", str(tmp_path))
    assert code == 2 and "per-step series of 2 runs" in err and "run-a" in err


def test_a_folder_of_only_checkpoint_files_says_no_file_fits_and_why(capsys, tmp_path):
    hf.save_model(tmp_path / "checkpoint-50")
    hf.save_model(tmp_path / "final")
    (tmp_path / "final" / "notes.json").write_text('{"lr": 1e-6}\n')
    code, out, err = run(capsys, "scan", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no file fits a layout (7 files passed over" in err
    assert "adapter_config.json and 1 more: PEFT's adapter config (save_pretrained), not a log" in err
    assert "special_tokens_map.json and 1 more" in err
    code, _, err = run(capsys, "scan", str(tmp_path / "final" / "notes.json"), str(tmp_path / "final"))
    assert code == 2 and "holds no list of records" in err


def test_nan_in_a_field_never_read_is_not_refused_and_one_read_names_its_record(capsys, tmp_path):
    """grad_norm NaN (Python's json.dumps writes NaN on an fp16 overflow step): read; NaN in the share read:
    refused naming the log_history record (was: the whole file refused, the record number given as a line)."""
    z = hf.shares(12, seed=5)
    hf.output_dir(tmp_path, z, save_steps=12, nan_grad_at=4)
    f = tmp_path / "checkpoint-12" / "trainer_state.json"
    assert '"grad_norm": NaN' in f.read_text()
    code, out, err = run(capsys, "trend", str(f), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(z, abs=0)
    log = [hf.record(s, math.nan if s == 6 else z[s], 12) for s in range(1, 13)]
    f.write_text(hf.state_json(log, 12, 12, 12))
    code, out, err = run(capsys, "trend", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "frac_reward_zero_std is NaN in record 6 of log_history" in err and "line" not in err
    log[8]["step"] = 8.5  # a step that is no whole number: refused naming its record, never truncated to 8
    state = hf.state_json(log[:7] + log[8:], 12, 12, 12)
    f.write_text(state.replace('"frac_reward_zero_std": NaN', '"frac_reward_zero_std": 0.5'))
    code, _, err = run(capsys, "trend", str(f))
    assert code == 2 and "record 8 of log_history (counted from 1) has step 8.5, not a whole step" in err


# ---- metrics files with shares by name ---------------------------------------------------------------------

def _dapo_csv(path: Path, rows: list[tuple[int, int, int, int]]) -> None:
    """A per-step table of a DAPO run's group outcomes: (step, groups, all correct, all wrong)."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "zero_std_group_ratio", "all_correct_group_ratio", "all_wrong_group_ratio",
                    "mixed_group_ratio", "n_groups", "zero_std_groups"])
        for step, n, c, wr in rows:
            w.writerow([step, (c + wr) / n, c / n, wr / n, 1 - (c + wr) / n, n, c + wr])


def test_a_dapo_group_outcome_table_is_read_by_its_column_names(capsys, tmp_path):
    rng = random.Random(7)
    rows = [(s, n, c, rng.randint(0, n - c)) for s in range(1, 9) for n in [rng.choice([16, 32])]
            for c in [rng.randint(0, n // 2)]]
    f = tmp_path / "dapo_metrics.csv"
    _dapo_csv(f, rows)
    code, out, err = run(capsys, "trend", str(f), "-f", "json")
    assert code == 0, err
    got = json.loads(out)["steps"]
    assert [(s["step"], s["groups"]) for s in got] == [(r[0], r[1]) for r in rows]
    assert [s["observed_silent"] for s in got] == pytest.approx([(c + w) / n for _, n, c, w in rows], abs=1e-12)
    assert [s["observed_all_wrong"] for s in got] == pytest.approx([w / n for _, n, _, w in rows], abs=1e-12)
    text = f.read_text().splitlines()
    bad = text[:3] + [text[3].rsplit(",", 1)[0] + ",999"] + text[4:]
    f.write_text("\n".join(bad) + "\n")
    code, _, err = run(capsys, "trend", str(f))
    assert code == 2 and "zero_std_groups is not zero_std_group_ratio x n_groups at step 3" in err


def test_a_share_column_named_by_flag(capsys, tmp_path):
    """--silent-share-col (and --group-count-col) read a series whatever its other columns (a mean reward
    beside it made it a rollout log)."""
    f = tmp_path / "metrics.csv"
    z = hf.shares(6, seed=8)
    f.write_text("step,reward,frac_silent_groups,batch_groups\n" +
                 "".join(f"{s},0.5,{v},{64}\n" for s, v in z.items()))
    code, _, err = run(capsys, "trend", str(f))
    assert code == 2
    code, out, err = run(capsys, "trend", str(f), "--silent-share-col", "frac_silent_groups",
                         "--group-count-col", "batch_groups", "-f", "json")
    assert code == 0, err
    got = json.loads(out)["steps"]
    assert {s["step"]: s["observed_silent"] for s in got} == pytest.approx(z, abs=0)
    assert {s["groups"] for s in got} == {64}
    code, _, err = run(capsys, "trend", str(f), "--silent-share-col", "nope")
    assert code == 2 and "column 'nope' not found" in err
    code, _, err = run(capsys, "trend", str(f), "--group-count-col", "batch_groups")
    assert code == 2 and "needs --silent-share-col" in err


@pytest.mark.parametrize("command", ["scan", "trend", "check"])
def test_group_size_is_refused_on_a_series(capsys, tmp_path, command):
    """-G 16 was reported "at G = 16" although the share is the trainer's own at its own G."""
    hf.output_dir(tmp_path, hf.shares(8, seed=9), save_steps=4)
    extra = ["--max-silent", "0.5"] if command == "check" else []
    code, out, err = run(capsys, command, str(tmp_path), "-G", "16", *extra)
    assert code == 2 and out == "" and "-G" in err and "own shares at the group size it ran with" in err
    code, _, err = run(capsys, command, str(tmp_path), *extra)
    assert code in (0, 1), err


def _tensorboard(folder: Path, tag: str, values: dict[int, float]) -> Path:
    path = folder / f"run-grpo_qwen-tag-{tag}.csv"
    path.write_text("Wall time,Step,Value\n" + "".join(f"{1.7e9 + 30 * s},{s},{v}\n" for s, v in values.items()))
    return path


def test_a_folder_of_tensorboard_exports_reads_the_share_and_passes_over_the_rest(capsys, tmp_path):
    z = hf.shares(10, seed=10)
    _tensorboard(tmp_path, "train_frac_reward_zero_std", z)
    _tensorboard(tmp_path, "train_loss", {s: 0.01 * s for s in z})
    _tensorboard(tmp_path, "train_reward", dict.fromkeys(z, 0.5))
    code, out, err = run(capsys, "trend", str(tmp_path), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(z, abs=0)
    assert "train_loss.csv" in err and "skipped" in err and "TensorBoard scalar export of 'train_loss'" in err


def test_a_wandb_run_name_holding_the_separator_is_one_run(capsys, tmp_path):
    """W&B headers are "<run> - <metric>"; a run named "qwen - grpo - lr1e-6" was split at its first " - "."""
    z = hf.shares(6, seed=11)
    f = tmp_path / "wandb_export.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL)
        run_name, metric = "qwen - grpo - lr1e-6", "train/frac_reward_zero_std"
        w.writerow(["Step", f"{run_name} - {metric}", f"{run_name} - {metric}__MIN", f"{run_name} - {metric}__MAX"])
        for s, v in z.items():
            w.writerow([s, v, v, v])
    code, out, err = run(capsys, "trend", str(f), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(z, abs=0)


# ---- watch ---------------------------------------------------------------------------------------------------

def _train(root: Path, z: dict[int, float], save_steps: int, limit: int | None, started: threading.Event) -> None:
    """A Trainer saving a checkpoint every ``save_steps`` steps after the watch started."""
    log: list[dict] = []
    for s in sorted(z):
        log.append(hf.record(s, z[s], max(z)))
        if s % save_steps == 0:
            if s > save_steps:
                started.wait(30)
                time.sleep(0.15)
            hf.save_checkpoint(root, list(log), s, max(z), save_steps, limit)


@pytest.mark.slow
@pytest.mark.parametrize("limit", [None, 1])
def test_watch_reports_every_step_as_checkpoints_appear(capsys, tmp_path, limit):
    """watch OUTPUT_DIR on a metrics-only TRL run (was: steps 1-10 of 30 reported, then "idle", exit 0); with
    save_total_limit=1 each checkpoint is deleted as the next is saved."""
    z = hf.shares(30, seed=12)
    started = threading.Event()
    hf.save_checkpoint(tmp_path, [hf.record(s, z[s], 30) for s in range(1, 11)], 10, 30, 10, limit)
    writer = threading.Thread(target=_train, args=(tmp_path, {s: z[s] for s in range(1, 31)}, 10, limit, started))
    import sigmaudit.loaders.follow as follow

    first = follow.Follower.poll

    def poll(self):  # noqa: ANN001, ANN202
        started.set()
        return first(self)

    follow.Follower.poll = poll
    try:
        writer.start()
        code, out, err = run(capsys, "watch", str(tmp_path), "--interval", "0.02", "--until-idle", "1.5", "-f", "json")
    finally:
        follow.Follower.poll = first
        writer.join()
    lines = [json.loads(line) for line in out.splitlines()]
    steps = {o["step"]: o["observed"]["silent"] for o in lines if "step" in o}
    assert code == 0, err
    assert steps == pytest.approx(z, abs=0)
    assert lines[-1]["summary"]["steps"] == 30 and lines[-1]["summary"]["ended_by"] == "idle"


# ---- a fuzz of output folders ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_fuzz_output_dirs_against_the_shares_written(capsys, tmp_path, seed):
    """Random run lengths, save_steps, save_total_limit, a final save_state, extra files (PEFT/tokenizer files,
    TensorBoard exports of other tags, a config without records): the series read is exactly the steps of the
    trainer_state.json files left, counted here from the writer's rule (each holds every step up to its own)."""
    rng = random.Random(seed)
    steps, save = rng.randint(5, 40), rng.randint(2, 9)
    limit = rng.choice([None, 1, 2, 3])
    z = hf.shares(steps, seed=100 + seed)
    saved = hf.output_dir(tmp_path, z, save_steps=save, save_total_limit=limit)
    if rng.random() < 0.5:  # trainer.save_state() at the end: output_dir/trainer_state.json
        (tmp_path / "trainer_state.json").write_text(
            hf.state_json([hf.record(s, z[s], steps) for s in sorted(z)], steps, steps, save))
    if rng.random() < 0.5:
        hf.save_model(tmp_path)  # trainer.save_model(): the final adapter in output_dir
    if rng.random() < 0.5:
        _tensorboard(tmp_path, "train_loss", dict.fromkeys(z, 0.1))
    if rng.random() < 0.5:
        (tmp_path / "run_config.json").write_text(json.dumps({"learning_rate": 1e-6, "beta": 0.0}))
    kept = [p for p in saved if p.exists()]
    last = max(int(p.name.split("-")[1]) for p in kept)
    if (tmp_path / "trainer_state.json").exists():
        last = steps
    want = {s: z[s] for s in range(1, last + 1)}
    code, out, err = run(capsys, "scan", str(tmp_path), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(want, abs=0)
    shutil.rmtree(tmp_path)


# ---- verl DAPO's train/num_gen_batches: what it bounds -------------------------------------------------------

def _verl_dapo_step(rng: random.Random, B: int, M: int, q: float) -> tuple[int, float]:
    """One step of verl-recipe 48ea0a7 ``dapo/dapo_ray_trainer.py``'s loop: chunks of M groups, each kept (np.std > 0)
    with chance q, until B are kept; (num_gen_batches, the true silent share among the groups generated)."""
    kept = generated = J = 0
    while kept < B:
        J += 1
        kept += sum(rng.random() < q for _ in range(M))
        generated += M
    return J, 1 - kept / generated


def _reachable(B: int, M: int, J: int) -> set[float]:
    """Every silent share among J·M generated groups that verl's stopping rule allows (S_{J−1} < B ≤ S_J), by
    enumerating the kept totals."""
    out = set()
    for before in range(min(B, (J - 1) * M + 1)):  # S_{J-1} = before < B, reachable in J-1 chunks
        if J == 1 and before:
            break
        for last in range(M + 1):
            if before + last >= B:
                out.add(1 - (before + last) / (J * M))
    return out


@pytest.mark.parametrize(("B", "M"), [(1, 1), (3, 3), (4, 6), (5, 3), (8, 8), (7, 16)])
def test_gen_batches_bounds_are_exact_by_enumeration(B, M):
    """The closed form (docs/theory.md) against every kept-count path verl's loop can take: each bound attained."""
    from sigmaudit.core.dapo import gen_batches_silent_bounds

    for J in range(max(1, -(-B // M)), 6):
        shares = _reachable(B, M, J)
        low, high = gen_batches_silent_bounds([J], train_batch=B, gen_batch=M)
        assert (low[0], high[0]) == pytest.approx((min(shares), max(shares)), abs=1e-15)


def _file_logger(path: Path, rows: list[dict]) -> None:
    """verl 0.9.1 ``verl/utils/tracking.py`` ``FileLogger.log``:
    ``orjson.dumps({"step": step, "data": data}) + b"\\n"``."""
    with open(path, "wb") as fh:
        for r in rows:
            fh.write(json.dumps({"step": r["step"], "data": r["data"]}, separators=(",", ":")).encode() + b"\n")


def test_a_verl_file_logger_of_dapo_gives_bounds_that_hold_the_true_share(capsys, tmp_path):
    """Was: refused with the generic rollout-layout message. With the batch sizes: each step's bounds, which hold the
    share verl's loop generated; without: what is missing."""
    rng = random.Random(13)
    B, M = 8, 12
    truth = {}
    rows = []
    for step in range(1, 41):
        J, silent = _verl_dapo_step(rng, B, M, q=rng.choice([0.15, 0.3, 0.6]))
        truth[step] = (J, silent)
        rows.append({"step": step, "data": {"actor/entropy": 0.5, "critic/score/mean": 0.3, "train/num_gen_batches": J,
                                            "timing_s/step": 12.5, "training/global_step": step}})
    f = tmp_path / "dapo_qwen.jsonl"
    _file_logger(f, rows)
    code, out, err = run(capsys, "trend", str(f))
    assert code == 2 and "needs" not in out and "--train-batch B and --gen-batch M" in err
    code, out, err = run(capsys, "trend", str(f), "--train-batch", str(B), "--gen-batch", str(M), "-f", "json")
    assert code == 0, err
    got = {s["step"]: (s["silent_at_least"], s["silent_at_most"]) for s in json.loads(out)["steps"]}
    assert set(got) == set(truth)
    for step, (J, silent) in truth.items():
        low, high = got[step]
        assert low - 1e-12 <= silent <= high + 1e-12
        assert high == pytest.approx(1 - B / (J * M), abs=1e-12)
        assert low == pytest.approx(max(0.0, 1 - (B - 1 + M) / (J * M)), abs=1e-12)
    code, _, err = run(capsys, "trend", str(f), "--train-batch", "100", "--gen-batch", str(M))
    assert code == 2 and "cannot keep the 100 prompts" in err
    code, _, err = run(capsys, "check", str(f), "--max-silent", "0.5")
    assert code == 2 and "train/num_gen_batches" in err


def test_an_output_dir_reads_alike_on_duckdb(capsys, tmp_path):
    """The checkpoints' series are joined here whatever the engine (was: refused file by file on --engine duckdb)."""
    pytest.importorskip("duckdb")
    z = hf.shares(20, seed=14)
    hf.output_dir(tmp_path, z, save_steps=5)
    code, out, err = run(capsys, "scan", "--engine", "duckdb", str(tmp_path), "-f", "json")
    assert code == 0, err
    assert _steps(out) == pytest.approx(z, abs=0)


def test_checkpoints_beside_completions_leave_the_rollouts_read(capsys, tmp_path):
    """log_completions=True: {output_dir}/completions/*.parquet are the rollouts; the checkpoints' series is skipped
    with a note, and the figures are those of the completions alone."""
    root = Path(__file__).resolve().parents[1] / "sample_logs" / "trl"
    code, alone, _ = run(capsys, "scan", str(root), "-f", "json")
    assert code == 0
    shutil.copytree(root, tmp_path / "out")
    hf.output_dir(tmp_path / "out", hf.shares(6, seed=15), save_steps=3)
    code, out, err = run(capsys, "scan", str(tmp_path / "out"), "-f", "json")
    assert code == 0, err
    assert "trainer_state.json and 1 more: a per-step series of shares (a trainer's metrics), not rollouts" in err
    drop = ("files", "args", "notes")
    assert {k: v for k, v in json.loads(out).items() if k not in drop} == \
        {k: v for k, v in json.loads(alone).items() if k not in drop}


def test_watch_refuses_a_group_size_on_a_series(capsys, tmp_path):
    hf.output_dir(tmp_path, hf.shares(6, seed=16), save_steps=3)
    code, out, err = run(capsys, "watch", str(tmp_path), "--once", "--interval", "0.01", "-G", "16")
    assert code == 2 and "own shares at the group size it ran with" in err


def test_a_named_series_beside_a_named_rollout_log_is_refused_not_skipped(capsys, tmp_path):
    f = tmp_path / "dapo_metrics.csv"
    _dapo_csv(f, [(1, 16, 2, 3), (2, 16, 4, 1)])
    rollouts = Path(__file__).resolve().parents[1] / "sample_logs" / "long.csv"
    code, out, err = run(capsys, "scan", str(rollouts), str(f))
    assert code == 2 and out == "" and "files mix layouts" in err and "per-step series" in err
