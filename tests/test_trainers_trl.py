"""The TRL callback inside real ``trl.GRPOTrainer`` / ``RLOOTrainer`` runs on CPU (the ``[trainers]`` extra).

A 2-layer Llama built from a config and a word-level tokenizer built in memory (nothing from a hub)
train a few steps in each configuration that changes what one optimizer step trains on. Per step
the callback's figures are checked against TRL's own logged ``frac_reward_zero_std`` and against the
rewards the reward functions returned (recorded by the functions themselves, grouped by hand: the
independent truth), and ``sigmaudit scan`` / ``trend`` on the completions TRL wrote against both.
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import trainer_extra

trainer_extra.require("trl")

import polars as pl  # noqa: E402
import torch  # noqa: E402
from cli_runner import run as run_cli  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer  # noqa: E402

from sigmaudit.integrations.trl import SigmauditCallback  # noqa: E402

WORDS = ["<pad>", "<eos>", "<bos>"] + [f"w{i}" for i in range(29)]
G = 4


def _tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>")


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                        max_position_embeddings=64, pad_token_id=0, eos_token_id=1,
                                        bos_token_id=2))


class Recorder:
    """Reward functions that record what they return, with the trainer's step and mode at each call."""

    def __init__(self) -> None:
        self.trainer = None
        self.calls: list[dict] = []  # one per (function, call): mode, step, function, prompts, rewards

    def func(self, name, score):
        def reward(prompts, completions, **kwargs):
            out = [score(p, c) for p, c in zip(prompts, completions, strict=True)]
            t = self.trainer
            self.calls.append({"mode": "train" if t.model.training else "eval", "step": t.state.global_step + 1,
                               "function": name, "prompts": list(prompts), "rewards": out})
            return out
        reward.__name__ = name
        return reward

    def truth(self, weights: dict[str, float]) -> dict[int, dict[str, float]]:
        """Per optimizer step, from the recorded rewards alone: the share of groups (G consecutive
        completions of a call) whose total rewards agree (two or more scored), all wrong, all correct."""
        per_step: dict[int, list[list[float | None]]] = defaultdict(list)
        by_step: dict[int, list[dict]] = defaultdict(list)
        for c in self.calls:
            if c["mode"] == "train":
                by_step[c["step"]].append(c)
        for step, cs in by_step.items():
            names = list(weights)
            for i in range(0, len(cs), len(names)):  # one call per function per generation batch
                batch = {c["function"]: c["rewards"] for c in cs[i:i + len(names)]}
                for j in range(len(batch[names[0]])):
                    scored = [(weights[n], batch[n][j]) for n in names if batch[n][j] is not None]
                    per_step[step].append(None if not scored else sum(w * r for w, r in scored))
        out = {}
        for step, totals in per_step.items():
            groups = [totals[i:i + G] for i in range(0, len(totals), G)]
            scored = [[r for r in g if r is not None] for g in groups]
            out[step] = {"silent": np.mean([len(s) >= 2 and len(set(s)) == 1 for s in scored]),
                         "wrong": np.mean([bool(s) and all(r < 1 for r in s) for s in scored]),
                         "right": np.mean([bool(s) and all(r >= 1 for r in s) for s in scored]),
                         "groups": len(groups)}
        return out


def _digit(completion: str) -> int:
    return sum(int(ch) for ch in completion if ch.isdigit())


def mixed(prompt: str, completion: str) -> float | None:
    """w0: always right; w1: always wrong; w2: unscorable; otherwise by the completion (varies)."""
    head = prompt.split()[0]
    if head == "w0":
        return 1.0
    if head == "w1":
        return 0.0
    if head == "w2":
        return None
    return float(_digit(completion) % 2)


def run(trainer_cls, config_cls, *, funcs, weights, train, eval_prompts=None, tmp_path: Path, **config):
    rec = Recorder()
    reward_funcs = [rec.func(name, score) for name, score in funcs]
    args = config_cls(output_dir=str(tmp_path / "out"), num_generations=G, max_completion_length=4,
                      logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", seed=0,
                      disable_tqdm=True, reward_weights=[weights[name] for name, _ in funcs], **config)
    kwargs = {"eval_dataset": Dataset.from_dict({"prompt": eval_prompts})} if eval_prompts else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = trainer_cls(model=_model(), reward_funcs=reward_funcs, args=args,
                              train_dataset=Dataset.from_dict({"prompt": train}), processing_class=_tokenizer(),
                              **kwargs)
        rec.trainer = trainer
        callback = SigmauditCallback(trainer, other_G=(8,))
        trainer.add_callback(callback)
        trainer.train()
    logged = {h["step"]: h for h in trainer.state.log_history if "loss" in h or "sigmaudit/groups" in h}
    return trainer, callback, rec, logged


def _check_steps(logged, truth, steps):
    """Per step: the callback's figures equal TRL's frac_reward_zero_std and the recorded rewards."""
    table = []
    for step in range(1, steps + 1):
        h = logged[step]
        if step not in truth:  # the step trained on an earlier generation batch: neither logs
            assert "sigmaudit/silent_observed" not in h and "frac_reward_zero_std" not in h, h
            table.append((step, None, None, None))
            continue
        t = truth[step]
        assert h["sigmaudit/groups"] == t["groups"]
        assert h["sigmaudit/silent_observed"] == pytest.approx(t["silent"], abs=1e-12)
        assert h["sigmaudit/silent_observed"] == pytest.approx(h["frac_reward_zero_std"], abs=1e-6)
        assert h["sigmaudit/all_wrong_observed"] == pytest.approx(t["wrong"], abs=1e-12)
        assert h["sigmaudit/all_correct_observed"] == pytest.approx(t["right"], abs=1e-12)
        table.append((step, h["sigmaudit/silent_observed"], h["frac_reward_zero_std"], t["silent"]))
    return table


PROMPTS = [f"w{i} w{i + 10}" for i in range(8)]  # w0, w1, w2 lead three of them (always / never / unscorable)
DISTINCT = [f"w{i} w{j}" for i in range(8) for j in range(10, 14)]  # 32 prompts, none twice in a row


def test_grpo_gradient_accumulation_counts_every_generation_batch_of_the_step(tmp_path):
    """gradient_accumulation_steps=2, steps_per_generation=1: two generation batches per optimizer
    step, both counted; two weighted reward functions; prompts no function can score."""
    funcs = [("mixed", mixed), ("half", lambda p, c: None if p.startswith("w2") else float(_digit(c) % 3 == 0))]
    weights = {"mixed": 1.0, "half": 0.5}
    trainer, callback, rec, logged = run(GRPOTrainer, GRPOConfig, funcs=funcs, weights=weights,
                                         train=PROMPTS * 4, tmp_path=tmp_path, per_device_train_batch_size=8,
                                         gradient_accumulation_steps=2, steps_per_generation=1, max_steps=4)
    assert trainer.args.generation_batch_size == 8
    truth = rec.truth(weights)
    assert all(t["groups"] == 4 for t in truth.values())  # 2 generation batches x 2 prompts
    assert any(p.startswith("w2") for c in rec.calls for p in c["prompts"])  # an unscorable prompt was drawn
    table = _check_steps(logged, truth, 4)
    print("GA=2 spg=1:", table)
    assert callback.metrics.forecaster.groups == sum(1 for c in rec.calls if c["function"] == "mixed"
                                                     for g in range(0, len(c["prompts"]), G)
                                                     if not c["prompts"][g].startswith("w2"))


def test_grpo_evaluation_between_steps_is_never_taken_for_training(tmp_path):
    """steps_per_generation=2 with an evaluation after every step; the training prompt is one
    always-solved prompt, so consecutive generation batches are identical and all silent."""
    trainer, callback, rec, logged = run(GRPOTrainer, GRPOConfig, funcs=[("mixed", mixed)], weights={"mixed": 1.0},
                                         train=["w0 w5"] * 32, eval_prompts=[f"w{i} w9" for i in range(3, 7)],
                                         tmp_path=tmp_path, per_device_train_batch_size=4,
                                         per_device_eval_batch_size=8, steps_per_generation=2, max_steps=6,
                                         eval_strategy="steps", eval_steps=1)
    assert any(c["mode"] == "eval" for c in rec.calls)
    truth = rec.truth({"mixed": 1.0})
    assert sorted(truth) == [1, 3, 5]  # a generation every second step
    table = _check_steps(logged, truth, 6)
    print("spg=2 + eval, identical batches:", table)
    assert [row[1] for row in table] == [1.0, None, 1.0, None, 1.0, None]
    assert set(callback.metrics.forecaster.per_group["prompt"].to_list()) == {"w0 w5"}
    assert callback.metrics.forecaster.steps == (1, 3, 5)


def test_rloo_clipped_rewards_and_reused_batches(tmp_path):
    """RLOOTrainer with beta=0, rewards clipped to [0, 1] (2s and 1s agree after clipping) and
    num_iterations=2 (each batch trained twice: the second step logs nothing)."""
    def graded(p, c):
        return 0.0 if p.startswith("w1") else float(1 + _digit(c) % 2)  # 1 or 2: silent once clipped

    trainer, callback, rec, logged = run(RLOOTrainer, RLOOConfig, funcs=[("graded", graded), ("mixed", mixed)],
                                         weights={"graded": 1.0, "mixed": 0.0}, train=PROMPTS * 4,
                                         tmp_path=tmp_path, per_device_train_batch_size=8, num_iterations=2,
                                         beta=0.0, reward_clip_range=(0.0, 1.0), max_steps=4)
    truth_raw = rec.truth({"graded": 1.0, "mixed": 0.0})
    assert sorted(truth_raw) == [1, 3]
    # clip by hand: every total >= 1 becomes 1, so every group is silent
    clipped = {s: {**t, "silent": 1.0} for s, t in truth_raw.items()}
    assert any(t["silent"] < 1.0 for t in truth_raw.values())  # the clip is what makes them silent
    table = _check_steps(logged, clipped, 4)
    print("RLOO clip + num_iterations=2:", table)


def test_grpo_default_and_scan_trend_on_the_completions_trl_wrote(tmp_path, capsys):
    """The default configuration (one generation per optimizer step) with log_completions: the
    per-step figures of `sigmaudit trend` and the pooled figure of `scan` on TRL's completion files
    equal the callback's and TRL's."""
    binary = [("binary", lambda p, c: 0.0 if mixed(p, c) is None else mixed(p, c))]
    trainer, callback, rec, logged = run(GRPOTrainer, GRPOConfig, funcs=binary, weights={"binary": 1.0},
                                         train=DISTINCT, tmp_path=tmp_path, per_device_train_batch_size=8,
                                         max_steps=4, log_completions=True, num_completions_to_print=0)
    truth = rec.truth({"binary": 1.0})
    table = _check_steps(logged, truth, 4)
    print("default:", table)
    completions = tmp_path / "out" / "completions"
    assert sorted(p.name for p in completions.iterdir())[:1] == ["completions_00001.parquet"]
    capsys.readouterr()
    code, out, err = run_cli(capsys, "trend", str(completions), "-f", "json")
    assert code == 0, err
    rows = {r["step"]: r for r in json.loads(out)["steps"]}
    for step, ours, trl_value, _ in table:
        assert rows[step]["observed_silent"] == pytest.approx(ours, abs=1e-12) == trl_value
    code, out, err = run_cli(capsys, "scan", str(completions), "-f", "json")
    assert code == 0, err
    pooled = np.mean([row[1] for row in table])  # every step has the same number of groups
    scanned = json.loads(out)["observed_silent"]
    assert scanned["fraction"] == pytest.approx(pooled, abs=1e-12)
    assert [s["fraction"] for s in scanned["by_step"]] == [row[1] for row in table]


def test_grpo_resumed_on_the_same_trainer_feeds_each_step_once(tmp_path):
    """trainer.train(resume_from_checkpoint=...) on the trainer that already ran: transformers restores
    step 2 before on_train_begin; step 3 runs again and must replace, not add to, the first run's."""
    rec = Recorder()
    args = GRPOConfig(output_dir=str(tmp_path / "out"), num_generations=G, max_completion_length=4, logging_steps=1,
                      report_to=[], use_cpu=True, save_strategy="steps", save_steps=2, seed=0, disable_tqdm=True,
                      per_device_train_batch_size=8, max_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        binary = rec.func("binary", lambda p, c: 0.0 if mixed(p, c) is None else mixed(p, c))
        trainer = GRPOTrainer(model=_model(), reward_funcs=[binary], args=args,
                              train_dataset=Dataset.from_dict({"prompt": DISTINCT}), processing_class=_tokenizer())
        rec.trainer = trainer
        callback = SigmauditCallback(trainer)
        trainer.add_callback(callback)
        trainer.train()
        first = callback.metrics.forecaster.per_group
        calls = len(rec.calls)
        trainer.train(resume_from_checkpoint=str(tmp_path / "out" / "checkpoint-2"))
    assert sorted({c["step"] for c in rec.calls[calls:]}) == [3]  # the resumed run generated step 3 again
    fed = callback.metrics.forecaster.per_group
    assert callback.metrics.forecaster.steps == (1, 2, 3)
    assert fed.height == first.height == 3 * 2  # 2 prompts per step, each step once
    assert fed.filter(pl.col("step") <= 2).equals(first.filter(pl.col("step") <= 2))
    resumed = rec.calls[calls:]
    k = [sum(r >= 1 for r in c["rewards"][g:g + G]) for c in resumed for g in range(0, len(c["rewards"]), G)]
    assert fed.filter(pl.col("step") > 2)["k"].to_list() == k  # step 3 is the resumed run's rewards


@pytest.mark.parametrize(("value", "size"), [(0.7, 8), (0.7, 16), (1.2, 8), (1.2, 16), (0.2, 8)])
def test_equal_rewards_trl_counts_as_spread_by_float32_rounding(value, size):
    """TRL's own float32 computation (trl.trainer.utils.nanstd, then isclose(std, 0): std <= 1e-8) of G
    equal rewards: their float32 mean is rounded, so the spread is above 1e-8 and TRL counts the group
    not silent; the callback's rule (all equal) counts it silent. Rewards whose G-fold float32 sums are
    exact (0, 1, 0.5) agree."""
    from trl.trainer.utils import nanstd

    from sigmaudit.integrations.core import ZERO_STD_ATOL, group_counts

    std = float(nanstd(torch.full((1, size), value, dtype=torch.float32), dim=1)[0])
    assert std > ZERO_STD_ATOL
    assert not bool(torch.isclose(torch.tensor(std), torch.tensor(0.0)))
    total = np.full(size, value, dtype=np.float32).astype(np.float64)  # the callback's total, as it computes it
    assert group_counts(["p"] * size, total, group_size=size, zero_std_atol=ZERO_STD_ATOL)[3].tolist() == [True]
    for exact in (0.0, 0.5, 1.0):
        assert float(nanstd(torch.full((1, size), exact, dtype=torch.float32), dim=1)[0]) == 0.0


def test_grpo_constant_reward_of_0_7_differs_from_frac_reward_zero_std_as_documented(tmp_path):
    """A real GRPOTrainer at G = 8 whose one reward always returns 0.7: every group is silent (equal
    rewards, zero advantages); TRL logs frac_reward_zero_std 0 (its float32 std is 6.4e-8), the
    callback 1."""
    args = GRPOConfig(output_dir=str(tmp_path / "out"), num_generations=8, max_completion_length=4, logging_steps=1,
                      report_to=[], use_cpu=True, save_strategy="no", seed=0, disable_tqdm=True,
                      per_device_train_batch_size=8, max_steps=1)

    def constant(prompts, completions, **kwargs):
        return [0.7] * len(prompts)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(model=_model(), reward_funcs=[constant], args=args,
                              train_dataset=Dataset.from_dict({"prompt": DISTINCT}), processing_class=_tokenizer())
        trainer.add_callback(SigmauditCallback(trainer, threshold=0.7))
        trainer.train()
    logged = [h for h in trainer.state.log_history if "sigmaudit/groups" in h]
    assert len(logged) == 1
    for h in logged:
        assert (h["frac_reward_zero_std"], h["sigmaudit/silent_observed"], h["sigmaudit/groups"]) == (0.0, 1.0, 1.0)
