"""A real ``trl.GRPOTrainer`` run with a PEFT adapter writes its ``output_dir`` (the ``[trainers]`` extra, CPU):
``scan`` of it gives TRL's own logged ``frac_reward_zero_std`` per step once, and ``watch`` started while it trains
(after its first checkpoint, with ``save_total_limit=1`` deleting each checkpoint as the next is saved) reports every
step (issue 43). The truth is ``trainer.state.log_history`` itself, kept in memory by the trainer."""

from __future__ import annotations

import contextlib
import io
import json
import random
import threading
import warnings

import pytest
import trainer_extra

trainer_extra.require("trl")
trainer_extra.require("peft")

from cli_runner import run  # noqa: E402
from datasets import Dataset  # noqa: E402
from peft import LoraConfig  # noqa: E402
from test_trainers_trl import _model, _tokenizer  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from sigmaudit.cli.app import main  # noqa: E402


class _WatchOnFirstSave(TrainerCallback):
    """Starts ``sigmaudit watch OUTPUT_DIR`` in a thread once the first checkpoint is saved."""

    def __init__(self, output_dir: str) -> None:
        self.output_dir, self.thread, self.result = output_dir, None, {}

    def _watch(self) -> None:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            self.result["code"] = main(["watch", self.output_dir, "--interval", "0.05", "--until-idle", "20",
                                        "-f", "json", "-q"])
        self.result["out"] = buf.getvalue()

    def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003, ANN201
        if self.thread is None:
            self.thread = threading.Thread(target=self._watch)
            self.thread.start()
        return control


@pytest.mark.slow
def test_scan_and_watch_of_a_real_grpo_output_dir(capsys, tmp_path):
    warnings.filterwarnings("ignore")
    rng = random.Random(0)
    ds = Dataset.from_dict({"prompt": [" ".join(f"w{rng.randint(3, 28)}" for _ in range(3)) for _ in range(32)]})

    def acc(prompts, completions, **kwargs):  # noqa: ANN001, ANN003, ANN202
        return [float(rng.random() < 0.5) if p.startswith("w1") else float(len(c.split()) % 2 == 0)
                for p, c in zip(prompts, completions, strict=True)]

    out = str(tmp_path / "out")
    args = GRPOConfig(output_dir=out, per_device_train_batch_size=8, num_generations=4, max_completion_length=4,
                      max_steps=4, logging_steps=1, save_steps=1, save_total_limit=1, report_to=[], use_cpu=True,
                      learning_rate=1e-4, seed=0, bf16=False, disable_tqdm=True)
    watcher = _WatchOnFirstSave(out)
    trainer = GRPOTrainer(model=_model(), reward_funcs=[acc], args=args, train_dataset=ds,
                          processing_class=_tokenizer(), callbacks=[watcher],
                          peft_config=LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    trainer.train()
    watcher.thread.join(120)
    truth = {r["step"]: r["frac_reward_zero_std"] for r in trainer.state.log_history if "frac_reward_zero_std" in r}
    assert sorted(truth) == list(range(1, 5))
    lines = [line for line in watcher.result["out"].splitlines() if line.startswith('{"')]  # the trainer prints too
    steps = {o["step"]: o["observed"]["silent"] for o in map(json.loads, lines) if "step" in o}
    assert watcher.result["code"] == 0 and steps == truth
    capsys.readouterr()
    code, got, err = run(capsys, "scan", out, "-f", "json")
    assert code == 0, err
    assert {s["step"]: s["observed_silent"] for s in json.loads(got)["steps"]} == truth
    assert "adapter_config.json" in err and "not a log" in err
