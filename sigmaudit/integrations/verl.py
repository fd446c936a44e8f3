"""verl: a training dataset that skips (GRESO-style) the prompts sigmaudit forecasts silent.

Tested against verl 0.9.1 (the PyPI release, with torch 2.13.0+cpu, transformers 5.10.4):
tests/test_trainers_verl.py runs verl's own ``RayPPOTrainer.fit`` (the worker group, rollout and
weight sync replaced by CPU stand-ins) with its own checkpoint save and load, and audits the run's
own rollout dump with ``sigmaudit scan``. Line numbers below are the verl 0.9.1 wheel's
``verl/trainer/ppo/ray_trainer.py`` unless a tag is named; read in verl-project/verl at the tags v0.4.1
(8d9e350ea58c7ad4b50dd14d9dcb50577242c55f), v0.5.0 (8fdc4d3f202f41461f4de9f42a637228e342668b), v0.7.1
(bec9ef74768dd201881cd4e54cd0385e87caae27), v0.9.0 (483b8a009ba3a97563edee3a19887e4862b8094a), at main
1dda039b9c6311889a9c9a26040677e1254814f9, and in the verl 0.7.1 wheel.

- The hook: ``RayPPOTrainer.fit`` calls ``train_dataset.on_batch_end(batch=batch)`` after every step
  but the last (l.1818–1820; v0.5.0 l.1419–1421, the 0.7.1 wheel l.1625–1627; v0.4.1 has none), and
  ``data.custom_cls.{path,name}`` loads this class (``get_dataset_class``; ``main_ppo.py`` in v0.5.0).
  verl's v1 trainer (``trainer.use_v1=True``, the default from 0.9.0) never calls it: refused, as is
  verl < 0.5.0, ``data.dataloader_num_workers`` > 0 (each worker holds its own copy of the dataset,
  which never hears of the rewards) and ``algorithm.filter_groups.enable`` (DAPO's filtering is done
  by the v1 trainer's replay buffer and by the DAPO recipe's trainer, neither of which calls the hook;
  ``RayPPOTrainer`` never reads ``filter_groups``: it would be silently off).
- Resume: verl saves ``StatefulDataLoader.state_dict()`` (which holds this dataset's
  :meth:`state_dict`) as ``global_step_S/data.pt`` (l.1032–1034) while step S's batch is drawn but
  before ``on_batch_end`` feeds it, and on resume skips restoring it when S ends an epoch
  (l.1102–1111, from 0.8.0). So this class keeps its own state: when verl has just saved a
  checkpoint, ``on_batch_end`` writes ``global_step_S/sigmaudit.pt`` (everything fed, step S's
  rewards included; the skip list; the random states); the training dataset built for a resumed
  run (the first built from the config, on the train files: verl builds it before the validation
  one, ``main_ppo_v0.py`` l.199/207, ``_create_dataloader`` l.376/384) finds verl's resume folder as
  ``_load_checkpoint`` does (l.1052–1083) and restores that file, else the state in its ``data.pt``
  (a run's last step has no ``on_batch_end``: that step's rewards are then missing). Before 0.8.0 verl
  restores ``data.pt`` at any step (l.973–976 in the 0.7.1 wheel), also the exhausted dataloader of an
  epoch's end: it then trains nothing more in that epoch (its own behaviour; this dataset's state is
  restored all the same, and kept over ``data.pt``'s older copy of it).

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
skip list and not already in the batch (drawn without replacement, seeded; the whole batch is known
through ``__getitems__``, which the dataloader calls once per batch): no prompt is served twice in a
step, so verl's rollout dump (no group id in the legacy trainer) keeps one group per (step, prompt)
and ``sigmaudit scan`` / ``watch`` read it. When too few such rows remain, the skipped row is served.
An epoch keeps ``len(dataset)`` draws: verl plans its steps from ``len()`` once at start-up, and an
epoch that shrank would end training before its last-step checkpoint and validation.
"""

from __future__ import annotations

import inspect
import os
import weakref
from typing import Any

import numpy as np
import torch
from packaging.version import Version
from verl.utils.dataset.rl_dataset import RLHFDataset

from ..errors import ConfigError
from .core import SkipPolicy

ROW = "sigmaudit_row"
"""The key this dataset adds to each row's ``extra_info``: the row's index in the dataset."""

STATE_FILE = "sigmaudit.pt"
"""This dataset's state in verl's checkpoint folder ``global_step_S`` (see the module docstring)."""

OPTIONS = {"G": None, "max_p_silent": 0.9, "floor": 0.05, "threshold": 1.0}
"""``data.sigmaudit.*`` options and their defaults (G: the next visit's group size; None: as logged)."""

FIRST_HOOKED = (0, 5)
"""The first verl release whose ``RayPPOTrainer.fit`` calls ``on_batch_end`` (v0.5.0 l.1419–1421)."""

_BUILT: dict[int, weakref.ref] = {}
"""Per data config object, whether a dataset was built from it already (the first is the training one)."""


def check_version(version: str) -> None:
    """Refuse a verl whose ``RayPPOTrainer.fit`` never calls ``on_batch_end`` (before 0.5.0)."""
    if Version(version).release < FIRST_HOOKED:
        raise ConfigError(f"verl {version}'s RayPPOTrainer never calls train_dataset.on_batch_end (it does from "
                          "0.5.0): sigmaudit would skip nothing", location="data.custom_cls",
                          remedy="install verl >= 0.5.0")


def _root(config: Any) -> Any:
    return config._get_root() if hasattr(config, "_get_root") else config


def _section(root: Any, name: str) -> Any:
    return root.get(name, None) if hasattr(root, "get") else None


def check_hook(config: Any) -> None:
    """Refuse, at start-up, a configuration where sigmaudit would skip nothing, or one that
    silently turns off what the user asked for (see the module docstring)."""
    import verl

    check_version(verl.__version__)
    if int(config.get("dataloader_num_workers", 0) or 0) != 0:
        raise ConfigError("each dataloader worker holds its own copy of the dataset, which never hears of the "
                          "rewards: sigmaudit would skip nothing", location="data.dataloader_num_workers",
                          remedy="set data.dataloader_num_workers=0")
    root = _root(config)
    trainer = _section(root, "trainer")
    if trainer is not None and bool(trainer.get("use_v1", False)):
        raise ConfigError("verl's v1 trainer never calls train_dataset.on_batch_end: sigmaudit would skip "
                          "nothing", location="trainer.use_v1",
                          remedy="set trainer.use_v1=False (verl's RayPPOTrainer calls it after every step)")
    algorithm = _section(root, "algorithm")
    groups = algorithm.get("filter_groups", None) if algorithm is not None else None
    if groups is not None and bool(groups.get("enable", False)):
        raise ConfigError("verl's RayPPOTrainer, the only trainer that calls train_dataset.on_batch_end, never "
                          "reads algorithm.filter_groups: DAPO's zero-variance filtering would be silently off",
                          location="algorithm.filter_groups.enable",
                          remedy="set algorithm.filter_groups.enable=False (sigmaudit's skipping replaces it "
                                 "before the rollout), or run DAPO without SigmauditDataset")


def options(config: Any) -> dict[str, Any]:
    """``data.sigmaudit.*``, every key known (a misspelt one would be silently ignored otherwise)."""
    given = dict(config.get("sigmaudit", None) or {})
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"unknown option {', '.join(unknown)}; known: {', '.join(OPTIONS)}",
                          location="data.sigmaudit")
    return {**OPTIONS, **given}


def checkpoint_root(config: Any) -> str | None:
    """``trainer.default_local_dir`` made absolute as verl does (l.1060–1063), or None."""
    trainer = _section(_root(config), "trainer")
    folder = trainer.get("default_local_dir", None) if trainer is not None else None
    if folder is None:
        return None
    return folder if os.path.isabs(folder) else os.path.join(os.getcwd(), folder)


def resume_folder(config: Any) -> str | None:
    """The ``global_step_S`` folder verl's ``_load_checkpoint`` resumes from (l.1052–1083), or None."""
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    trainer = _section(_root(config), "trainer")
    mode = trainer.get("resume_mode", "auto") if trainer is not None else "disable"
    if mode == "disable" or trainer.get("default_hdfs_dir", None) is not None:
        return None  # verl raises NotImplementedError for hdfs itself
    if mode == "resume_path":
        path = trainer.get("resume_from_path", None)
        if not isinstance(path, str) or "global_step_" not in path:
            return None  # verl's own assertion refuses it
        return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    root = checkpoint_root(config)
    return find_latest_ckpt_path(root) if mode == "auto" and root is not None else None


def _files(files: Any) -> list[str]:
    if files is None:
        return []
    return [str(files)] if isinstance(files, (str, os.PathLike)) else [str(f) for f in files]


def _first_for(config: Any, data_files: Any) -> bool:
    """Whether this is the training dataset: built from the train files, and the first built from this
    config object (verl builds the training dataset before the validation one)."""
    if _files(data_files) != _files(config.get("train_files", None)):
        return False
    ref = _BUILT.get(id(config))
    if ref is not None and ref() is config:
        return False
    _BUILT[id(config)] = weakref.ref(config)
    return True


class SigmauditDataset(RLHFDataset):  # type: ignore[misc]
    """verl's ``RLHFDataset`` whose draws skip the prompts forecast silent (see the module docstring)."""

    def __init__(self, data_files: Any, tokenizer: Any, config: Any, processor: Any = None,
                 max_samples: int = -1) -> None:
        check_hook(config)
        opts = options(config)
        extra = {"max_samples": max_samples} if "max_samples" in inspect.signature(RLHFDataset.__init__).parameters \
            else {}  # verl < 0.6.1 has no max_samples
        super().__init__(data_files=data_files, tokenizer=tokenizer, config=config, processor=processor, **extra)
        seed = int(config.get("seed", 0) or 0)
        self.policy = SkipPolicy(G=opts["G"], max_p_silent=float(opts["max_p_silent"]), floor=float(opts["floor"]),
                                 threshold=float(opts["threshold"]), seed=seed)
        self._draws = np.random.default_rng([seed, 1])
        self.steps = 0
        """Training steps fed (``on_batch_end`` calls, over resumes)."""
        self.global_step = 0
        """verl's global step of the last batch drawn (one ``__getitems__`` call per step)."""
        self._free: tuple[frozenset[str], np.ndarray] | None = None
        self._checkpoints = checkpoint_root(config)
        self._saved_at: int | None = None  # the step whose state verl's checkpoint just took
        self.resumed_from: str | None = None
        """The file this dataset's state was restored from when it was built, if any."""
        if _first_for(config, data_files):
            self._resume(resume_folder(config))

    def _resume(self, folder: str | None) -> None:
        """Restore the state of verl's resume folder: ``sigmaudit.pt``, else the one in ``data.pt``."""
        if folder is None:
            return
        own, data = os.path.join(folder, STATE_FILE), os.path.join(folder, "data.pt")
        if os.path.exists(own):
            self.load_state_dict(torch.load(own, weights_only=False))
            self.resumed_from = own
        elif os.path.exists(data):
            state = torch.load(data, weights_only=False).get("dataset_state")
            if state:
                self.load_state_dict(state)
                self.resumed_from = data

    def _rows(self, drawn: list[int]) -> list[int]:
        """The rows served for the sampler's draws of one batch: each itself unless skipped; a skipped
        draw goes to a row off the skip list and not in the batch, without replacement."""
        kept = [d if self.policy.keep(d) else None for d in drawn]
        need = sum(k is None for k in kept)
        if not need:
            return drawn
        skipped = self.policy.skipped
        if self._free is None or self._free[0] is not skipped:  # the rows not on the skip list, once per list
            listed = np.fromiter((int(p) for p in skipped), dtype=np.int64)
            self._free = (skipped, np.setdiff1d(np.arange(len(self)), listed))
        pool = np.setdiff1d(self._free[1], np.asarray([k for k in kept if k is not None], dtype=np.int64))
        picks = iter(self._draws.choice(pool, size=min(need, pool.size), replace=False).tolist())
        return [k if k is not None else next(picks, d) for k, d in zip(kept, drawn, strict=True)]

    def _serve(self, row: int) -> dict:
        out = super().__getitem__(row)
        out["extra_info"] = {**(out.get("extra_info") or {}), ROW: row}
        return out

    def __getitem__(self, item: int) -> dict:
        return self._serve(self._rows([int(item)])[0])

    def __getitems__(self, items: list[int]) -> list[dict]:
        """One batch (torch's fetcher calls this once per batch when it exists)."""
        self.global_step += 1
        return [self._serve(r) for r in self._rows([int(i) for i in items])]

    def on_batch_end(self, batch: Any) -> None:
        """verl's RayPPOTrainer calls this after each training step with the step's ``DataProto``."""
        infos = batch.non_tensor_batch.get("extra_info")
        if infos is None or any(not isinstance(e, dict) or ROW not in e for e in infos):
            raise ConfigError(f"a batch sample has no extra_info.{ROW}: the batch was not drawn from this dataset",
                              location="SigmauditDataset.on_batch_end")
        rows = [int(e[ROW]) for e in infos]
        scores = batch.batch["token_level_scores"].sum(-1).float().cpu().numpy()
        self.steps += 1
        self.policy.observe(self.global_step, rows, scores, group_ids=list(batch.non_tensor_batch["uid"]))
        if self._saved_at == self.global_step:
            self._save_own()

    def _save_own(self) -> None:
        """``global_step_S/sigmaudit.pt``, when verl has just written that folder's ``data.pt``."""
        self._saved_at = None
        if self._checkpoints is None:
            return
        folder = os.path.join(self._checkpoints, f"global_step_{self.global_step}")
        if not os.path.exists(os.path.join(folder, "data.pt")):
            return
        path = os.path.join(folder, STATE_FILE)
        torch.save(self._state(), path + ".tmp")
        os.replace(path + ".tmp", path)

    def state_dict(self) -> dict[str, Any]:
        """Saved by ``StatefulDataLoader.state_dict()`` (verl's ``data.pt``, l.1032–1034)."""
        self._saved_at = self.global_step
        return self._state()

    def _state(self) -> dict[str, Any]:
        return {"policy": self.policy.state_dict(), "draws": self._draws.bit_generator.state, "steps": self.steps,
                "global_step": self.global_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; a ``data.pt`` state of the checkpoint already restored from its
        ``sigmaudit.pt`` (verl restores ``data.pt`` inside an epoch) is not taken over it."""
        step = int(state.get("global_step", state["steps"]))
        if self.resumed_from is not None and self.resumed_from.endswith(STATE_FILE) and step == self.global_step \
                and int(state["steps"]) < self.steps:
            return
        self.policy.load_state_dict(state["policy"])
        self._draws.bit_generator.state = state["draws"]
        self.steps = int(state["steps"])
        self.global_step = step
