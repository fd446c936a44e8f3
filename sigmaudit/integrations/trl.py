"""TRL: a ``transformers.TrainerCallback`` adding silent-group metrics to ``GRPOTrainer``'s own logs.

NOT TESTED AGAINST TRL: transformers and TRL need torch, which does not install within this project's
CI budget. Written against huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8 (1.10.0.dev0,
``trl/trainer/grpo_trainer.py``), read with git; the metric logic it calls
(:class:`sigmaudit.integrations.core.SilentGroupMetrics`) is tested in tests/test_integrations.py.

What it reads of the trainer (all set in ``GRPOTrainer.__init__`` / ``_generate_and_score_completions``):

- ``trainer._logs["prompt"]`` and ``trainer._logs["rewards"][name]``: the latest generation batch,
  gathered over processes, one row per completion, the G completions of a prompt next to each other
  (``rewards.view(-1, num_generations)`` in the trainer);
- ``trainer.reward_func_names``, ``trainer.reward_weights``: the total reward is the weighted nansum
  over reward functions, NaN when every function returned None (as the trainer computes it);
- ``trainer.num_generations``: G;
- ``trainer._metrics["train"]``: lists of values the trainer averages into each log call, so the
  metrics reach every reporting integration (W&B, TensorBoard, Trackio) with the trainer's own.

Use::

    trainer = GRPOTrainer(...)
    trainer.add_callback(SigmauditCallback(trainer, other_G=(4, 16)))
    trainer.train()

Logged each optimizer step that follows a new generation batch: ``sigmaudit/silent_observed`` (groups
whose total rewards are all equal: TRL's ``frac_reward_zero_std`` with group scaling),
``sigmaudit/all_wrong_observed`` / ``all_correct_observed`` (every reward below / at or above
``threshold``), ``sigmaudit/silent_forecast_next_G{G}`` (mean forecast P(silent) at the next visit over
the prompts seen: a prediction) for the trainer's G and each of ``other_G``, ``sigmaudit/skip_list``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from transformers import TrainerCallback

from .core import SilentGroupMetrics


class SigmauditCallback(TrainerCallback):  # type: ignore[misc]
    """Silent-group metrics of each generation batch in the trainer's own logs (see the module docstring)."""

    def __init__(self, trainer: Any, other_G: tuple[int, ...] = (4, 16), threshold: float = 1.0,
                 forecast: bool = True, max_p_silent: float = 0.9) -> None:
        from ..audits.forecaster import Forecaster

        self.trainer = trainer
        self.metrics = SilentGroupMetrics(other_G=tuple(other_G), threshold=threshold, forecast=forecast,
                                          forecaster=Forecaster(max_p_silent=max_p_silent))
        self._seen: tuple[Any, ...] | None = None

    def _batch(self) -> tuple[list[str], np.ndarray] | None:
        """The latest generation batch (prompts, total rewards), or None when it was already counted."""
        logs = self.trainer._logs
        prompts = [str(p) for p in logs["prompt"]]
        names = list(self.trainer.reward_func_names)
        per_func = np.array([list(logs["rewards"][name]) for name in names], dtype=np.float64).T
        weights = np.asarray(self.trainer.reward_weights.cpu().numpy(), dtype=np.float64)
        total = np.nansum(per_func * weights[None, :], axis=1)
        total[np.isnan(per_func).all(axis=1)] = np.nan
        # one generation batch serves steps_per_generation optimizer steps: count it once
        fingerprint = (tuple(prompts), total.tobytes(), tuple(logs["advantages"]))
        if not prompts or fingerprint == self._seen:
            return None
        self._seen = fingerprint
        return prompts, total

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if not state.is_world_process_zero:
            return control
        batch = self._batch()
        if batch is None:
            return control
        prompts, total = batch
        values = self.metrics.step(state.global_step, prompts, total, group_size=int(self.trainer.num_generations))
        for key, value in values.items():
            self.trainer._metrics["train"][key].append(float(value))
        return control
