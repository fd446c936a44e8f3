"""verl: a training dataset that skips (GRESO-style) the prompts sigmaudit forecasts silent.

Tested against verl 0.9.1 (the PyPI release, with torch 2.13.0+cpu, transformers 5.10.4):
tests/test_trainers_verl.py composes verl's own ``ppo_trainer`` config, loads this class through
``create_rl_dataset`` / ``data.custom_cls``, iterates verl's ``StatefulDataLoader`` and sampler, and
feeds real ``DataProto`` batches. Read in verl-project/verl at
1dda039b9c6311889a9c9a26040677e1254814f9 (main, 0.10.0.dev) and at the v0.8.0 / v0.9.0 tags:

- verl 0.8.0 removed the curriculum-sampler hook sigmaudit used before
  (``verl.experimental.dataset.sampler``, ``data.sampler.class_path``, ``sampler.update(batch)``).
- What remains: ``data.custom_cls.{path,name}`` (``verl/utils/dataset/rl_dataset.py::get_dataset_class``)
  loads the training dataset class, and ``RayPPOTrainer.fit`` (``verl/trainer/ppo/ray_trainer.py``)
  calls ``train_dataset.on_batch_end(batch=batch)`` after every training step, from 0.8.0 on.
- verl's v1 trainer (``trainer.use_v1=True``, the default from 0.9.0) never calls ``on_batch_end``;
  nor does 0.7.x's RayPPOTrainer. There this class would train with no skipping, so it refuses to
  start (one :class:`sigmaudit.errors.ConfigError`), as it does with ``data.dataloader_num_workers``
  > 0 (each worker holds its own copy of the dataset, which never hears of the rewards).

Config::

    data.custom_cls.path=pkg://sigmaudit.integrations.verl
    data.custom_cls.name=SigmauditDataset
    data.dataloader_num_workers=0
    trainer.use_v1=False
    +data.sigmaudit.max_p_silent=0.9 +data.sigmaudit.floor=0.05 +data.sigmaudit.threshold=1.0

What it reads of each batch: ``non_tensor_batch["extra_info"][i]["sigmaudit_row"]`` (the dataset row
of the sample; this class adds it to each row's ``extra_info``, which verl keeps in the driver's batch
for the reward), ``non_tensor_batch["uid"]`` (the group) and ``batch["token_level_scores"].sum(-1)``
(the sample's reward, before any KL penalty). A row whose forecast P(silent) at its next visit exceeds
``max_p_silent`` is served with probability ``floor``; otherwise its draw is given to a row not on the
skip list (drawn uniformly; seeded). So an epoch keeps ``len(dataset)`` draws: verl plans its steps
from ``len()`` once at start-up, and an epoch that shrank would end training before its last-step
checkpoint and validation. Its state (everything fed, the skip list, the random states) is part of
``StatefulDataLoader.state_dict()``, which verl saves as ``data.pt`` with each checkpoint; verl saves
it before calling ``on_batch_end`` for that step, so a resumed run lacks that one step's rewards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from packaging.version import Version
from verl.utils.dataset.rl_dataset import RLHFDataset

from ..errors import ConfigError
from .core import SkipPolicy

ROW = "sigmaudit_row"
"""The key this dataset adds to each row's ``extra_info``: the row's index in the dataset."""

OPTIONS = {"G": None, "max_p_silent": 0.9, "floor": 0.05, "threshold": 1.0}
"""``data.sigmaudit.*`` options and their defaults (G: the next visit's group size; None: as logged)."""


def check_hook(config: Any) -> None:
    """Refuse, at start-up, a verl that would never call ``on_batch_end`` (see the module docstring)."""
    import verl

    if Version(verl.__version__).release < (0, 8):
        raise ConfigError(f"verl {verl.__version__}'s RayPPOTrainer never calls train_dataset.on_batch_end "
                          "(it does from 0.8.0): sigmaudit would skip nothing", location="data.custom_cls",
                          remedy="install verl >= 0.8.0")
    if int(config.get("dataloader_num_workers", 0) or 0) != 0:
        raise ConfigError("each dataloader worker holds its own copy of the dataset, which never hears of the "
                          "rewards: sigmaudit would skip nothing", location="data.dataloader_num_workers",
                          remedy="set data.dataloader_num_workers=0")
    root = config._get_root() if hasattr(config, "_get_root") else config
    trainer = root.get("trainer", None) if hasattr(root, "get") else None
    if trainer is not None and bool(trainer.get("use_v1", False)):
        raise ConfigError("verl's v1 trainer never calls train_dataset.on_batch_end: sigmaudit would skip "
                          "nothing", location="trainer.use_v1",
                          remedy="set trainer.use_v1=False (verl's RayPPOTrainer calls it after every step)")


def options(config: Any) -> dict[str, Any]:
    """``data.sigmaudit.*``, every key known (a misspelt one would be silently ignored otherwise)."""
    given = dict(config.get("sigmaudit", None) or {})
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"unknown option {', '.join(unknown)}; known: {', '.join(OPTIONS)}",
                          location="data.sigmaudit")
    return {**OPTIONS, **given}


class SigmauditDataset(RLHFDataset):  # type: ignore[misc]
    """verl's ``RLHFDataset`` whose draws skip the prompts forecast silent (see the module docstring)."""

    def __init__(self, data_files: Any, tokenizer: Any, config: Any, processor: Any = None,
                 max_samples: int = -1) -> None:
        check_hook(config)
        opts = options(config)
        super().__init__(data_files=data_files, tokenizer=tokenizer, config=config, processor=processor,
                         max_samples=max_samples)
        seed = int(config.get("seed", 0) or 0)
        self.policy = SkipPolicy(G=opts["G"], max_p_silent=float(opts["max_p_silent"]), floor=float(opts["floor"]),
                                 threshold=float(opts["threshold"]), seed=seed)
        self._draws = np.random.default_rng([seed, 1])
        self.steps = 0
        self._free: tuple[frozenset[str], np.ndarray] | None = None

    def _row(self, item: int) -> int:
        """The row served for the sampler's draw ``item``: itself, unless it is skipped."""
        if self.policy.keep(item):
            return item
        skipped = self.policy.skipped
        if self._free is None or self._free[0] is not skipped:  # the rows not on the skip list, once per list
            listed = np.fromiter((int(p) for p in skipped), dtype=np.int64)
            self._free = (skipped, np.setdiff1d(np.arange(len(self)), listed))
        free = self._free[1]
        return int(free[self._draws.integers(free.size)]) if free.size else item

    def __getitem__(self, item: int) -> dict:
        row = self._row(int(item))
        out = super().__getitem__(row)
        out["extra_info"] = {**(out.get("extra_info") or {}), ROW: row}
        return out

    def on_batch_end(self, batch: Any) -> None:
        """verl's RayPPOTrainer calls this after each training step with the step's ``DataProto``."""
        infos = batch.non_tensor_batch.get("extra_info")
        if infos is None or any(not isinstance(e, dict) or ROW not in e for e in infos):
            raise ConfigError(f"a batch sample has no extra_info.{ROW}: the batch was not drawn from this dataset",
                              location="SigmauditDataset.on_batch_end")
        rows = [int(e[ROW]) for e in infos]
        scores = batch.batch["token_level_scores"].sum(-1).float().cpu().numpy()
        self.steps += 1
        self.policy.observe(self.steps, rows, scores, group_ids=list(batch.non_tensor_batch["uid"]))

    def state_dict(self) -> dict[str, Any]:
        """Saved by ``StatefulDataLoader.state_dict()`` (verl's ``data.pt``)."""
        return {"policy": self.policy.state_dict(), "draws": self._draws.bit_generator.state, "steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_state_dict(state["policy"])
        self._draws.bit_generator.state = state["draws"]
        self.steps = int(state["steps"])
