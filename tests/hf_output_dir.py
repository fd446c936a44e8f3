"""A TRL ``GRPOTrainer`` output_dir written as transformers 5.10.4 and PEFT 0.21.2 write it (for tests).

- ``Trainer.log`` appends ``{**logs, "step": global_step}`` to ``state.log_history``; TRL 1.16.0's
  ``GRPOTrainer.log`` puts ``frac_reward_zero_std`` (``is_std_zero.float().mean()``), ``reward``... in ``logs``;
- ``Trainer._save_checkpoint`` writes ``{output_dir}/checkpoint-{global_step}/``: the model (PEFT's
  ``save_pretrained``: ``adapter_config.json``, ``adapter_model.safetensors``, ``README.md``; the tokenizer's
  ``tokenizer_config.json``, ``chat_template.jinja``...), then ``trainer_state.json`` by
  ``TrainerState.save_to_json`` (``json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\\n"``,
  opened with "w": not atomic), then ``rotate_checkpoints`` deletes the oldest beyond ``save_total_limit``.

:func:`state_json` is checked byte for byte against ``TrainerState.save_to_json`` where transformers is installed
(tests/test_metrics_series.py)."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

STATE_DEFAULTS = {"best_global_step": None, "best_metric": None, "best_model_checkpoint": None, "epoch": 0,
                  "eval_steps": 500, "global_step": 0, "is_hyper_param_search": False, "is_local_process_zero": True,
                  "is_world_process_zero": True, "logging_steps": 1, "max_steps": 0, "num_input_tokens_seen": 0,
                  "num_train_epochs": 0, "save_steps": 500, "stateful_callbacks": {}, "total_flos": 0,
                  "train_batch_size": None, "trial_name": None, "trial_params": None}
"""``TrainerState``'s other fields (transformers 5.10.4 ``trainer_callback.py``), as ``asdict`` gives them."""


def record(step: int, share: float, max_steps: int, grad_norm: float = 0.25) -> dict:
    """One ``log_history`` record of a GRPO step (TRL 1.16.0's metrics, then transformers' ``epoch`` and ``step``)."""
    return {"loss": 0.0012, "grad_norm": grad_norm, "learning_rate": 1e-6, "num_tokens": 4096.0 * step,
            "completions/mean_length": 181.5, "completions/clipped_ratio": 0.0, "rewards/accuracy_reward/mean": 0.5,
            "rewards/accuracy_reward/std": 0.5, "reward": 0.5, "reward_std": 0.41, "frac_reward_zero_std": share,
            "kl": 0.0, "entropy": 0.61, "clip_ratio/region_mean": 0.0, "epoch": step / max_steps, "step": step}


def state_json(log_history: list[dict], global_step: int, max_steps: int, save_steps: int) -> str:
    """What ``TrainerState.save_to_json`` writes."""
    state = dict(STATE_DEFAULTS, log_history=log_history, global_step=global_step, max_steps=max_steps,
                 save_steps=save_steps, epoch=global_step / max_steps)
    return json.dumps(state, indent=2, sort_keys=True) + "\n"


PEFT_ADAPTER_CONFIG = {"alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "Qwen/Qwen2.5-0.5B",
                       "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
                       "lora_alpha": 16, "lora_dropout": 0.05, "peft_type": "LORA", "r": 8, "revision": None,
                       "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM", "use_dora": False}


def save_model(folder: Path) -> None:
    """What ``Trainer.save_model`` of a PEFT model with its tokenizer writes (the JSON and text files; the weights'
    bytes do not matter here)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps(PEFT_ADAPTER_CONFIG, indent=2, sort_keys=True) + "\n")
    (folder / "adapter_model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{}}")
    (folder / "README.md").write_text("---\nbase_model: Qwen/Qwen2.5-0.5B\nlibrary_name: peft\n---\n\n# Model Card\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": False, "model_max_length": 131072,
                                                              "tokenizer_class": "Qwen2Tokenizer"}, indent=2) + "\n")
    (folder / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|im_end|>"}, indent=2) + "\n")
    (folder / "chat_template.jinja").write_text("{% for message in messages %}{{ message['content'] }}{% endfor %}")
    (folder / "training_args.bin").write_bytes(b"PK\x03\x04")


def shares(steps: int, seed: int) -> dict[int, float]:
    """A run's per-step ``frac_reward_zero_std``: the mean of 0/1 over a batch of 4 groups (whole quarters, exact in
    binary and in JSON)."""
    rng = random.Random(seed)
    return {s: rng.randint(0, 4) / 4 for s in range(1, steps + 1)}


def save_checkpoint(output_dir: Path, log_history: list[dict], step: int, max_steps: int, save_steps: int,
                    save_total_limit: int | None = None) -> Path:
    """One ``Trainer._save_checkpoint``: the model, then ``trainer_state.json``, then the rotation."""
    folder = output_dir / f"checkpoint-{step}"
    save_model(folder)
    (folder / "trainer_state.json").write_text(state_json(log_history, step, max_steps, save_steps))
    if save_total_limit is not None:
        old = sorted((p for p in output_dir.glob("checkpoint-*") if p.is_dir()),
                     key=lambda p: int(p.name.split("-")[1]))
        for p in old[: max(0, len(old) - save_total_limit)]:
            shutil.rmtree(p)
    return folder


def output_dir(root: Path, z: dict[int, float], save_steps: int, save_total_limit: int | None = None,
               nan_grad_at: int | None = None) -> list[Path]:
    """A finished run's output_dir: a checkpoint every ``save_steps`` steps (and at the last step), the PEFT files
    beside each trainer_state.json; ``nan_grad_at``: that step's grad_norm is NaN (an fp16 overflow step)."""
    max_steps = max(z)
    log: list[dict] = []
    saved = []
    for s in sorted(z):
        log.append(record(s, z[s], max_steps, math.nan if s == nan_grad_at else 0.25))
        if s % save_steps == 0 or s == max_steps:
            saved.append(save_checkpoint(root, list(log), s, max_steps, save_steps, save_total_limit))
    return saved
