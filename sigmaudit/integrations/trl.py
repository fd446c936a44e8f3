"""TRL: a ``transformers.TrainerCallback`` adding silent-group metrics to ``GRPOTrainer``'s and
``RLOOTrainer``'s own logs.

Tested against trl 1.16.0 (the PyPI release; its source read from the installed wheel, since
huggingface/trl's newest commit in reach, f2cd57710ae345ea6428ae95363267fcf38a3dc8, is 1.10.0.dev0)
with transformers 5.10.4 and torch 2.13.0+cpu: tests/test_trainers_trl.py runs real trainers.
What it reads (``trl/trainer/grpo_trainer.py`` and ``rloo_trainer.py``, 1.16.0):

- a **generation event**: ``_generate_and_score_completions`` appends one value to
  ``trainer._metrics["train"]["frac_reward_zero_std"]`` per training generation batch (evaluation
  appends to ``_metrics["eval"]``), and ``log()`` clears the dict. The callback counts those values
  (the list's identity and length) after every micro-step (``on_substep_end``, ``on_step_end``), so it
  sees each generation batch once: none is skipped because it looks like the previous one, and an
  evaluation's completions are never taken for training;
- ``trainer._logs["prompt"]`` and ``trainer._logs["rewards"][name]``: deques of
  ``args.generation_batch_size`` entries (gathered over processes, the G completions of a prompt next to
  each other): right after a generation they hold exactly that batch;
- ``trainer.reward_func_names``, ``trainer.reward_weights``: the total reward is the weighted nansum in
  float32, NaN when every function returned None (as the trainers compute it), clipped to
  ``trainer.reward_clip_range`` when RLOO sets one;
- ``trainer.num_generations``: G; ``trainer._metrics["train"]``: the callback appends its values there
  at each optimizer step, so they are averaged and logged with the trainer's own (W&B, TensorBoard,
  Trackio).

Every generation batch of an optimizer step is pooled into that step (``gradient_accumulation_steps``
greater than ``steps_per_generation`` generates several); a step that trains on an earlier batch
(``steps_per_generation`` or ``num_iterations`` > 1) logs nothing, as TRL logs no
``frac_reward_zero_std`` then. ``sigmaudit/silent_observed`` is the share of the step's groups whose
total rewards have zero spread by TRL's own test (``isclose(std, 0)``: at least two scored rewards,
sample std <= 1e-8; a prompt no reward function could score counts as a group, not silent), the std
taken in float64 of the float32 totals. TRL takes it in float32 (``trl.trainer.utils.nanstd``), where G
equal rewards whose G-fold float32 sum is inexact get a rounding spread above 1e-8 (0.7 at G = 8: 6.4e-8)
and are counted not silent; the callback counts them silent (docs/integrations.md lists the cases).
Otherwise it is TRL's ``frac_reward_zero_std`` exactly when its std is per group (``scale_rewards`` "group" or "none",
``multi_objective_aggregation`` "sum_then_normalize"; for ``RLOOTrainer``, ``beta`` 0, since its KL
penalty enters the reward). Use::

    trainer = GRPOTrainer(...)
    trainer.add_callback(SigmauditCallback(trainer, other_G=(4, 16)))
    trainer.train()

Also logged: ``sigmaudit/groups``, ``sigmaudit/all_wrong_observed`` / ``all_correct_observed`` (every
scored reward below / at or above ``threshold``), ``sigmaudit/silent_forecast_next_G{G}`` (mean forecast
P(silent) at the next visit over the prompts seen: a prediction) for the trainer's G and each of
``other_G``, ``sigmaudit/skip_list``. Resuming the same trainer object: the steps after the one ``train()`` starts
from are dropped from the forecaster at ``on_train_begin``, so each step is fed once.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from transformers import TrainerCallback

from ..errors import ConfigError
from .core import ZERO_STD_ATOL, SilentGroupMetrics, refeed

_READS = ("_logs", "_metrics", "reward_func_names", "reward_weights", "num_generations")


class SigmauditCallback(TrainerCallback):  # type: ignore[misc]
    """Silent-group metrics of each optimizer step's generation batches in the trainer's own logs
    (see the module docstring)."""

    def __init__(self, trainer: Any, other_G: tuple[int, ...] = (4, 16), threshold: float = 1.0,
                 forecast: bool = True, max_p_silent: float = 0.9) -> None:
        from ..audits.forecaster import Forecaster

        missing = [name for name in _READS if not hasattr(trainer, name)]
        if missing or getattr(getattr(trainer, "args", None), "generation_batch_size", None) is None:
            raise ConfigError(f"{type(trainer).__name__} has no {', '.join(missing) or 'args.generation_batch_size'}"
                              ": not a TRL GRPOTrainer / RLOOTrainer this callback was written for (trl 1.16.0)",
                              location="SigmauditCallback")
        self.trainer = trainer
        self.max_p_silent = max_p_silent
        self.metrics = SilentGroupMetrics(other_G=tuple(other_G), threshold=threshold, forecast=forecast,
                                          forecaster=Forecaster(max_p_silent=max_p_silent),
                                          zero_std_atol=ZERO_STD_ATOL)
        self._events: tuple[Any, int] = (None, 0)  # the frac_reward_zero_std list seen last, its length
        self._pending: list[tuple[list[str], np.ndarray]] = []

    def _new_generations(self) -> int:
        """Training generation batches since the last look (TRL appends one zero-std value per batch)."""
        values = self.trainer._metrics["train"].get("frac_reward_zero_std")
        seen, length = self._events
        current = 0 if values is None else len(values)
        new = current if values is not seen else current - length
        self._events = (values, current)
        return new

    def _latest_batch(self) -> tuple[list[str], np.ndarray] | None:
        """The generation batch in ``trainer._logs``: prompts and total rewards, one per completion."""
        logs, size = self.trainer._logs, int(self.trainer.args.generation_batch_size)
        prompts = [str(p) for p in list(logs["prompt"])[-size:]]
        names = list(self.trainer.reward_func_names)
        per_func = np.array([list(logs["rewards"][name])[-size:] for name in names], dtype=np.float32).T
        if len(prompts) != size or per_func.shape != (size, len(names)):
            warnings.warn(f"sigmaudit: the trainer's logs hold {len(prompts)} completions where a generation batch "
                          f"has {size}; this batch is not counted", RuntimeWarning, stacklevel=3)
            return None
        weights = np.asarray(self.trainer.reward_weights.detach().cpu().numpy(), dtype=np.float32)
        total = np.nansum(per_func * weights[None, :], axis=1, dtype=np.float32)
        total[np.isnan(per_func).all(axis=1)] = np.nan
        clip = getattr(self.trainer, "reward_clip_range", None)
        if clip:
            total = np.clip(total, clip[0], clip[1])
        return prompts, total

    def _collect(self, state: Any) -> None:
        new = self._new_generations()
        if not state.is_world_process_zero or new == 0:
            return
        if new > 1:
            warnings.warn(f"sigmaudit: {new} generation batches in one micro-step; only the last is in the "
                          "trainer's logs and counted", RuntimeWarning, stacklevel=3)
        batch = self._latest_batch()
        if batch is not None:
            self._pending.append(batch)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """A ``train()`` call: the steps after the one it starts from (``resume_from_checkpoint`` on the
        same trainer, whose state transformers restores before this event) are dropped from the
        forecaster, so a resumed step is fed once; nothing pending from an earlier call is kept."""
        from ..audits.forecaster import Forecaster

        fed = self.metrics.forecaster.per_group
        if fed.height and int(fed["step"].max()) > state.global_step:
            groups = {c: fed[c].to_list() for c in ("step", "prompt", "n", "k")}
            fresh = Forecaster(max_p_silent=self.max_p_silent)
            self.metrics.forecaster = refeed(fresh, groups, up_to=state.global_step)
        values = self.trainer._metrics["train"].get("frac_reward_zero_std")  # only values appended from now on
        self._events, self._pending = (values, 0 if values is None else len(values)), []
        return control

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._collect(state)
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self._collect(state)
        if not self._pending:
            return control
        prompts = [p for batch, _ in self._pending for p in batch]
        total = np.concatenate([t for _, t in self._pending]).astype(np.float64)
        self._pending = []
        values = self.metrics.step(state.global_step, prompts, total, group_size=int(self.trainer.num_generations))
        for key, value in values.items():
            self.trainer._metrics["train"][key].append(float(value))
        return control
