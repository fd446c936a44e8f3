"""Trainer metrics read as a per-step observed series (no rollout dumps), each file written as its writer
writes it:

- TRL ``trainer_state.json``: ``transformers.TrainerState.save_to_json`` (``json.dumps(asdict(self), indent=2,
  sort_keys=True) + "\\n"``); ``log_history`` gets one record per ``GRPOTrainer.log`` call (huggingface/trl
  f2cd57710ae345ea6428ae95363267fcf38a3dc8: ``frac_reward_zero_std``, ``reward``, ...; eval records
  ``eval_``-prefixed) and the final ``train_runtime`` record;
- a W&B chart export (``"Step","<run> - train/frac_reward_zero_std","...__MIN","...__MAX"``, every field quoted);
- a TensorBoard scalar export (``Wall time,Step,Value``) named ``run-<run>-tag-<tag>.csv``;
- verl's ``FileLogger`` (volcengine/verl 0f615578bdbd95a1a56a5525479969fa30c7e5fc ``verl/utils/tracking.py``:
  ``{"step": step, "data": data}`` per line) holding ROLL's ``add_group_metrics`` names (alibaba/ROLL
  8eb27cc2dc34c4d1310b169d9b86d339004d811a ``roll/utils/metrics/metrics_manager.py``).

Every command's figures are checked against the shares computed here."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from cli_runner import run

STEPS = 12


def _shares(seed: int = 5) -> dict[int, float]:
    rng = random.Random(seed)
    return {s: round(rng.choice([0.0, 0.125, 0.25, 0.375, 0.5, 0.625]), 6) for s in range(1, STEPS + 1)}


def _trainer_state(path: Path, z: dict[int, float]) -> None:
    log = []
    for s, share in z.items():
        log.append({"clip_ratio/region_mean": 0.0, "completions/mean_length": 88.0, "entropy": 0.7,
                    "epoch": s / STEPS, "frac_reward_zero_std": share, "grad_norm": 0.1, "kl": 0.0,
                    "learning_rate": 1e-6, "loss": 0.0, "num_tokens": 1000.0 * s, "reward": 0.5,
                    "reward_std": 0.4, "rewards/accuracy_reward/mean": 0.5, "rewards/accuracy_reward/std": 0.5,
                    "step": s})
        if s % 4 == 0:
            log.append({"epoch": s / STEPS, "eval_frac_reward_zero_std": 1.0, "eval_loss": 0.0, "eval_reward": 0.9,
                        "eval_runtime": 1.0, "step": s})
    log.append({"epoch": 1.0, "step": STEPS, "total_flos": 0.0, "train_loss": 0.0, "train_runtime": 9.5,
                "train_samples_per_second": 10.0, "train_steps_per_second": 1.2})
    state = {"best_global_step": None, "best_metric": None, "best_model_checkpoint": None, "epoch": 1.0,
             "eval_steps": 4, "global_step": STEPS, "is_hyper_param_search": False, "is_local_process_zero": True,
             "is_world_process_zero": True, "log_history": log, "logging_steps": 1, "max_steps": STEPS,
             "num_input_tokens_seen": 0, "num_train_epochs": 1, "save_steps": 500,
             "stateful_callbacks": {"TrainerControl": {"args": {"should_epoch_stop": False, "should_evaluate": False,
                                                                "should_log": False, "should_save": True,
                                                                "should_training_stop": True}, "attributes": {}}},
             "total_flos": 0.0, "train_batch_size": 8, "trial_name": None, "trial_params": None}
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


def _wandb(path: Path, z: dict[int, float], runs: tuple[str, ...] = ("grpo-qwen-0.5b",)) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL)
        metric = "train/frac_reward_zero_std"
        w.writerow(["Step", *(f"{r} - {metric}{x}" for r in runs for x in ("", "__MIN", "__MAX"))])
        for s, share in z.items():
            w.writerow([s, *(v for _ in runs for v in (share, share, share))])


def _tensorboard(folder: Path, z: dict[int, float]) -> Path:
    path = folder / "run-grpo-tag-train_frac_reward_zero_std.csv"
    path.write_text("Wall time,Step,Value\n" + "".join(f"{1.7e9 + 30 * s},{s},{v}\n" for s, v in z.items()))
    return path


def _roll_file_logger(path: Path, z: dict[int, float]) -> None:
    with open(path, "w") as fh:
        for s, share in z.items():
            correct = round(share * 0.4, 6)
            data = {"group/all_correct_groups_ratio": correct, "group/all_incorrect_groups_ratio": share - correct,
                    "group/mixed_groups_ratio": 1 - share, "critic/score/mean": 0.5, "timing_s/step": 3.0}
            fh.write(json.dumps({"step": s, "data": data}) + "\n")


@pytest.fixture(params=["trainer_state", "wandb", "tensorboard", "roll"])
def metrics_file(request, tmp_path):
    z = _shares()
    if request.param == "trainer_state":
        f = tmp_path / "checkpoint-12" / "trainer_state.json"
        f.parent.mkdir()
        _trainer_state(f, z)
    elif request.param == "wandb":
        f = tmp_path / "wandb_export_2026-01-01T00_00_00.000+00_00.csv"
        _wandb(f, z)
    elif request.param == "tensorboard":
        f = _tensorboard(tmp_path, z)
    else:
        f = tmp_path / "qwen-grpo.jsonl"
        _roll_file_logger(f, z)
    return f, z


def _held(x: list[float], k: int) -> float:
    return max(min(x[i:i + k]) for i in range(len(x) - k + 1))


def test_trend_and_scan_show_the_logged_shares(capsys, metrics_file):
    f, z = metrics_file
    for command in ("trend", "scan"):
        code, out, err = run(capsys, command, str(f), "-f", "json")
        assert code == 0, err
        got = {s["step"]: s["observed_silent"] for s in json.loads(out)["steps"]}
        assert got == pytest.approx(z, abs=1e-9)
        assert err.count("need per-prompt data") == 1


def test_check_gates_the_mean_and_the_held_share(capsys, metrics_file):
    f, z = metrics_file
    x = [z[s] for s in sorted(z)]
    mean = sum(x) / len(x)
    code, out, err = run(capsys, "check", str(f), "--max-silent", str(mean + 0.01), "-f", "json", "-q")
    assert code == 0, err
    d = json.loads(out)
    assert d["basis"] == "series" and d["checks"][0]["value"] == pytest.approx(mean)
    held = _held(x, 3)
    code, out, err = run(capsys, "check", str(f), "--max-silent", str(held - 0.01), "--consecutive", "3",
                         "-f", "json", "-q")
    assert code == 1
    assert json.loads(out)["checks"][0]["tested"] == pytest.approx(held)
    code, _, err = run(capsys, "check", str(f), "--min-fidelity", "0.5", "-q")
    assert code == 2 and err.count("\n") == 1 and "per-prompt data" in err


def test_watch_reports_each_step_and_trips_the_guard(capsys, metrics_file):
    f, z = metrics_file
    limit = 0.3
    x = [z[s] for s in sorted(z)]
    trip = next((i for i in range(1, len(x)) if x[i] > limit and x[i - 1] > limit), None)
    code, out, err = run(capsys, "watch", str(f), "--once", "--interval", "0.01", "--max-silent", str(limit),
                         "--for", "2", "-f", "json", "-q")
    lines = [json.loads(line) for line in out.splitlines()]
    steps = [o for o in lines if "step" in o]
    assert code == (1 if trip is not None else 0), err
    want = x if trip is None else x[: trip + 1]
    assert [o["observed"]["silent"] for o in steps] == pytest.approx(want)
    assert lines[-1]["summary"]["failed_at"] == (None if trip is None else sorted(z)[trip])


def test_a_wandb_export_of_several_runs_is_refused_naming_them(capsys, tmp_path):
    f = tmp_path / "export.csv"
    _wandb(f, _shares(), runs=("run-a", "run-b"))
    code, _, err = run(capsys, "trend", str(f))
    assert code == 2 and err.count("\n") == 1 and "2 runs (run-a, run-b)" in err


def test_tensorboard_export_of_another_metric_is_not_a_series(capsys, tmp_path):
    f = tmp_path / "run-grpo-tag-train_loss.csv"
    f.write_text("Wall time,Step,Value\n1.0,1,0.5\n2.0,2,0.4\n")
    code, _, err = run(capsys, "trend", str(f))
    assert code == 2 and "match no layout" in err
