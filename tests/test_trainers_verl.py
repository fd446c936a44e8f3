"""The verl integration through verl's own code (the ``[trainers]`` extra): its ``ppo_trainer`` config
composed by Hydra with the documented overrides, the dataset loaded by ``create_rl_dataset``
(``data.custom_cls``), the dataloader built by ``RayPPOTrainer._create_dataloader`` (which also plans
the run's steps from ``len()``), batches turned into ``DataProto`` and repeated per rollout as
``RayPPOTrainer.fit`` does, then fed to ``on_batch_end``. Rewards are drawn from known per-row
success rates, so which rows must end on the skip list is known independently."""

from __future__ import annotations

import os
import uuid
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("verl", reason="the [trainers] extra is not installed (pip install -e '.[trainers]')")

import polars as pl  # noqa: E402
import torch  # noqa: E402
import verl  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402
from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler  # noqa: E402
from verl.utils.dataset.rl_dataset import collate_fn  # noqa: E402

from sigmaudit.errors import ConfigError  # noqa: E402
from sigmaudit.integrations.verl import ROW, SigmauditDataset  # noqa: E402

ROWS, BATCH, N = 40, 8, 4
SOLVED = range(0, 6)  # always right: forecast silent, skip-listed after two steps
FLOOR = 0.1
HOOK = ["data.custom_cls.path=pkg://sigmaudit.integrations.verl", "data.custom_cls.name=SigmauditDataset",
        "data.dataloader_num_workers=0", "trainer.use_v1=False", f"data.train_batch_size={BATCH}",
        f"actor_rollout_ref.rollout.n={N}", "trainer.total_epochs=3", "data.seed=3",
        "+data.sigmaudit.max_p_silent=0.8", f"+data.sigmaudit.floor={FLOOR}"]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("verl") / "train.parquet"
    pl.DataFrame({"prompt": [[{"role": "user", "content": f"w{i % 20} w{i // 20}"}] for i in range(ROWS)],
                  "data_source": ["toy"] * ROWS,
                  "reward_model": [{"style": "rule", "ground_truth": str(i)} for i in range(ROWS)],
                  "extra_info": [{"index": i, "split": "train"} for i in range(ROWS)]}).write_parquet(path)
    return str(path)


def _config(data_file, *overrides):
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"),
                               version_base=None):
        return compose("ppo_trainer", overrides=[f"data.train_files={data_file}", f"data.val_files={data_file}",
                                                 *overrides])


def _tokenizer():
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["<pad>"] + [f"w{i}" for i in range(20)])},
                                     unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>")


def _trainer(config):
    """verl's own dataset and dataloader construction (RayPPOTrainer.__init__ calls _create_dataloader)."""
    trainer = SimpleNamespace(config=config, tokenizer=_tokenizer(), processor=None)
    train = create_rl_dataset(config.data.train_files, config.data, trainer.tokenizer, None)
    val = create_rl_dataset(config.data.val_files, config.data, trainer.tokenizer, None)
    RayPPOTrainer._create_dataloader(trainer, train, val, collate_fn, create_rl_sampler(config.data, train))
    return trainer


def _rate(row: int) -> float:
    return 1.0 if row in SOLVED else 0.5


def _step(trainer, batch_dict, rng):
    """One training step's batch as RayPPOTrainer.fit builds it, rewards from the rows' rates."""
    batch = DataProto.from_single_dict(batch_dict)
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    batch = batch.repeat(repeat_times=N, interleave=True)
    rows = [e[ROW] for e in batch.non_tensor_batch["extra_info"]]
    scores = torch.zeros(len(batch), 3)
    scores[:, -1] = torch.tensor([float(rng.random() < _rate(r)) for r in rows])
    batch.batch["token_level_scores"] = scores
    trainer.train_dataset.on_batch_end(batch=batch)
    return rows[::N]


def test_skips_the_silent_rows_and_keeps_every_epochs_length(data_file):
    """In order (data.shuffle=False: the sampler draws rows 0..39 each epoch), so each draw is known:
    a row off the skip list is served as drawn; a listed one is served with probability floor, else
    its draw goes to a row off the list. No epoch shrinks; verl's planned steps are the steps run."""
    trainer = _trainer(_config(data_file, *HOOK, "data.shuffle=False"))
    assert isinstance(trainer.train_dataset, SigmauditDataset)
    assert len(trainer.train_dataloader) == ROWS // BATCH
    assert trainer.total_training_steps == 3 * (ROWS // BATCH)  # verl's plan, from len()
    rng = np.random.default_rng(0)
    steps, listed_draws, kept = 0, 0, 0
    for _epoch in range(3):
        batches = 0
        for b, batch_dict in enumerate(trainer.train_dataloader):
            listed = trainer.train_dataset.policy.skipped  # as the batch was drawn
            rows = _step(trainer, batch_dict, rng)
            assert [p[0]["content"] for p in batch_dict["raw_prompt"]] == [f"w{r % 20} w{r // 20}" for r in rows]
            for drawn, row in zip(range(b * BATCH, (b + 1) * BATCH), rows, strict=True):
                if str(drawn) not in listed:
                    assert row == drawn
                else:
                    listed_draws += 1
                    kept += row == drawn
                    assert row == drawn or str(row) not in listed
            batches += 1
        steps += batches
        assert batches == len(trainer.train_dataloader) == ROWS // BATCH  # the epoch did not shrink
    assert steps == trainer.total_training_steps
    assert trainer.train_dataset.policy.skipped == {str(r) for r in SOLVED}  # exactly the always-solved rows
    assert listed_draws >= len(SOLVED)
    assert abs(kept - listed_draws * FLOOR) <= 4 * np.sqrt(listed_draws * FLOOR * (1 - FLOOR)) + 1


def test_resume_restores_the_skip_state_with_the_dataloaders(data_file, tmp_path):
    rng = np.random.default_rng(1)
    first = _trainer(_config(data_file, *HOOK))
    for _epoch in range(2):
        for batch_dict in first.train_dataloader:
            _step(first, batch_dict, rng)
    assert first.train_dataset.policy.skipped  # skipping has begun
    it = iter(first.train_dataloader)
    for _ in range(2):  # into the third epoch
        _step(first, next(it), rng)
    torch.save(first.train_dataloader.state_dict(), tmp_path / "data.pt")  # as RayPPOTrainer._save_checkpoint
    state = rng.bit_generator.state
    went_on = [_step(first, next(it), rng) for _ in range(3)]
    resumed = _trainer(_config(data_file, *HOOK))
    resumed.train_dataloader.load_state_dict(torch.load(tmp_path / "data.pt", weights_only=False))
    assert resumed.train_dataset.policy.skipped == frozenset()  # restored when iteration starts, as verl does
    rng.bit_generator.state = state
    it = iter(resumed.train_dataloader)
    assert [_step(resumed, next(it), rng) for _ in range(3)] == went_on
    assert resumed.train_dataset.policy.skipped == first.train_dataset.policy.skipped != frozenset()
    assert resumed.train_dataset.steps == first.train_dataset.steps == 15


@pytest.mark.parametrize(("overrides", "message"), [
    (["trainer.use_v1=True"], "v1 trainer never calls train_dataset.on_batch_end"),
    (["data.dataloader_num_workers=2"], "each dataloader worker holds its own copy"),
    (["+data.sigmaudit.max_psilent=0.5"], "unknown option max_psilent"),
])
def test_a_verl_it_cannot_hook_into_is_refused_at_start_up(data_file, overrides, message):
    config = _config(data_file, *HOOK, *overrides)
    with pytest.raises(ConfigError, match=message):
        create_rl_dataset(config.data.train_files, config.data, _tokenizer(), None)


def test_verls_default_trainer_is_refused(data_file):
    """With only the dataset named (verl 0.9's default trainer is v1), start-up fails, not training."""
    config = _config(data_file, *HOOK[:3])
    assert config.trainer.use_v1
    with pytest.raises(ConfigError) as refused:
        create_rl_dataset(config.data.train_files, config.data, _tokenizer(), None)
    assert refused.value.one_line() == ("trainer.use_v1: verl's v1 trainer never calls train_dataset.on_batch_end: "
                                        "sigmaudit would skip nothing; set trainer.use_v1=False (verl's "
                                        "RayPPOTrainer calls it after every step)")
