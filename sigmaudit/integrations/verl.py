"""verl: a curriculum sampler that skips (GRESO-style) the prompts sigmaudit forecasts silent.

NOT TESTED AGAINST VERL: verl needs torch (and ray), which do not install within this project's CI
budget. Written against volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7, read with git:
``verl/experimental/dataset/sampler.py`` (``AbstractCurriculumSampler``: ``__init__(data_source,
data_config)``, ``update(batch)``), ``verl/trainer/main_ppo.py::create_rl_sampler`` (loads
``data.sampler.class_path`` / ``class_name``; needs ``data.dataloader_num_workers=0``) and
``verl/trainer/ppo/ray_trainer.py`` (calls ``sampler.update(batch=batch)`` after each training step).
The policy it applies (:class:`sigmaudit.integrations.core.SkipPolicy`) is tested in
tests/test_integrations.py.

Config::

    data.sampler.class_path=pkg://sigmaudit.integrations.verl
    data.sampler.class_name=SigmauditSampler
    data.dataloader_num_workers=0
    +data.sampler.max_p_silent=0.9 +data.sampler.floor=0.05 +data.sampler.threshold=1.0

What it reads of each batch: ``non_tensor_batch["index"]`` (the dataset row, from each row's
``extra_info.index``, which verl's preprocessing scripts set to the row number; rows without it all
read 0, so the sampler refuses a batch whose indices are all equal), ``non_tensor_batch["uid"]`` (the
group of each sample) and ``batch["token_level_scores"].sum(-1)`` (the sample's reward, before the KL
penalty). A prompt whose forecast P(silent) exceeds ``max_p_silent`` is drawn with probability
``floor``; an epoch is then shorter than the dataset (skipped prompts are not replaced).
"""

from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any

import numpy as np
from verl.experimental.dataset.sampler import AbstractCurriculumSampler

from .core import SkipPolicy


class SigmauditSampler(AbstractCurriculumSampler):  # type: ignore[misc]
    """Random order each epoch (seeded), skipping prompts the forecast calls silent (see the module docstring)."""

    def __init__(self, data_source: Sized, data_config: Any) -> None:
        cfg = data_config.get("sampler", {}) or {}
        self.size = len(data_source)
        self.seed = int(data_config.get("seed", 0) or 0)
        self.epoch = 0
        self.steps = 0
        self.policy = SkipPolicy(G=cfg.get("G"), max_p_silent=float(cfg.get("max_p_silent", 0.9)),
                                 floor=float(cfg.get("floor", 0.05)), threshold=float(cfg.get("threshold", 1.0)),
                                 seed=self.seed)

    def __iter__(self) -> Iterator[int]:
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.size)
        self.epoch += 1
        for i in order:
            if self.policy.keep(int(i)):
                yield int(i)

    def __len__(self) -> int:
        return self.size

    def update(self, batch: Any) -> None:
        index = np.asarray(batch.non_tensor_batch["index"])
        if index.size > 1 and (index == index[0]).all():
            raise ValueError("every sample's non_tensor_batch['index'] is the same: set extra_info.index to the "
                             "dataset row in the data files (verl's preprocessing scripts do)")
        scores = batch.batch["token_level_scores"].sum(-1).float().cpu().numpy()
        self.steps += 1
        self.policy.observe(self.steps, [int(i) for i in index], scores,
                            group_ids=list(batch.non_tensor_batch["uid"]))
