"""The verl integration inside verl's own training loop (the ``[trainers]`` extra): verl 0.9.1's
``RayPPOTrainer.fit`` runs with its own dataset and dataloader construction (``data.custom_cls``,
``_create_dataloader``), its own checkpoint save and load (``_save_checkpoint``, ``_load_checkpoint``,
``data.pt``), its own advantage computation, metrics and rollout dump (``rollout_data_dir``); only what
runs on GPUs is replaced by CPU stand-ins: the worker group (log-probs, actor update, checkpoint
weights), the rollout (agent loop) and the weight sync. Rewards are drawn from known per-row success
rates, seeded by (step, row, sample), so which rows must end on the skip list is known independently,
and a resumed run draws the same rewards as the uninterrupted one. The run's own dump is audited with
``sigmaudit scan``."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest
import trainer_extra

trainer_extra.require("verl")

import polars as pl  # noqa: E402
import torch  # noqa: E402
import verl  # noqa: E402
from cli_runner import run as run_cli  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402
from verl.trainer.ppo.utils import Role, create_rl_dataset  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402

from sigmaudit.errors import ConfigError  # noqa: E402
from sigmaudit.integrations.verl import ROW, STATE_FILE, SigmauditDataset, check_version  # noqa: E402

pytestmark = pytest.mark.slow

ROWS, BATCH, N, RESPONSE = 32, 8, 4, 3
EPOCH = ROWS // BATCH  # steps per epoch
SOLVED = range(0, 12)  # always right: forecast silent, skip-listed after two steps
FLOOR = 0.1
HOOK = ["data.custom_cls.path=pkg://sigmaudit.integrations.verl", "data.custom_cls.name=SigmauditDataset",
        "data.dataloader_num_workers=0", "trainer.use_v1=False", f"data.train_batch_size={BATCH}",
        f"actor_rollout_ref.rollout.n={N}", "trainer.total_epochs=3", "data.seed=3",
        "+data.sigmaudit.max_p_silent=0.8", f"+data.sigmaudit.floor={FLOOR}"]
FIT = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=False", "trainer.val_before_train=False",
       "trainer.test_freq=-1", "trainer.logger=[console]", f"actor_rollout_ref.actor.ppo_mini_batch_size={BATCH}"]


def _rate(row: int) -> float:
    return 1.0 if row in SOLVED else 0.5


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


class Workers:
    """The actor worker group's stand-in: what ``fit`` asks of it through verl's own conversions
    (``left_right_2_no_padding`` in, ``no_padding_2_padding`` out), and checkpoint weights on disk."""

    _dispatch_info = {"actor": [0]}  # one data-parallel rank (for _balance_batch)

    def save_checkpoint(self, local_path, remote_path=None, global_step=0, max_ckpt_to_keep=None):
        os.makedirs(local_path, exist_ok=True)
        with open(os.path.join(local_path, "weights"), "w") as f:
            f.write(str(global_step))

    def load_checkpoint(self, path, del_local_after_load=False):
        with open(os.path.join(path, "weights")) as f:
            self.loaded = int(f.read())

    @staticmethod
    def _zeros(td):
        ids = td["input_ids"]
        return torch.nested.nested_tensor_from_jagged(torch.zeros(ids.values().shape[0]), offsets=ids.offsets())

    def compute_log_prob(self, td):
        out = TensorDict({"log_probs": self._zeros(td), "entropy": self._zeros(td)}, batch_size=td.batch_size)
        tu.assign_non_tensor(out, metrics={"mfu": 0.0})
        return out

    def update_actor(self, td):
        out = TensorDict({}, batch_size=[])
        tu.assign_non_tensor(out, metrics={"mfu": 0.0, "pg_loss": 0.0})
        return out


class Weights:
    def update_weights(self, step):
        pass

    def sleep_replicas(self):
        pass


class Pools:
    def get_n_gpus(self):
        return 1


class Rollout:
    """The agent loop's stand-in: responses and rewards (``rm_scores``, as verl's reward loop returns
    them) for each sample; records per step the rows served and the skip list they were drawn under."""

    def __init__(self, dataset):
        self.dataset, self.tokenizer, self.steps = dataset, _tokenizer(), {}

    def generate_sequences(self, gen):
        rows = [int(e[ROW]) for e in gen.non_tensor_batch["extra_info"]]
        step = int(gen.meta_info["global_steps"])
        self.steps[step] = {"rows": rows[::N], "skipped": self.dataset.policy.skipped}
        raw = gen.non_tensor_batch["raw_prompt"]
        prompts = torch.tensor([self.tokenizer(p[0]["content"])["input_ids"] for p in raw])
        size, length = len(rows), prompts.shape[1] + RESPONSE
        scores, seen = torch.zeros(size, RESPONSE), {}
        for i, row in enumerate(rows):
            seen[row] = j = seen.get(row, -1) + 1
            scores[i, -1] = float(np.random.default_rng([step, row, j]).random() < _rate(row))
        responses = torch.ones(size, RESPONSE, dtype=prompts.dtype)
        return DataProto.from_dict(
            {"prompts": prompts, "responses": responses, "input_ids": torch.cat([prompts, responses], 1),
             "attention_mask": torch.ones(size, length, dtype=torch.long),
             "position_ids": torch.arange(length).expand(size, -1).clone(),
             "response_mask": torch.ones(size, RESPONSE, dtype=torch.long), "rm_scores": scores},
            non_tensors={"multi_modal_inputs": np.array([{} for _ in range(size)], dtype=object)},
            meta_info={"timing": {}})


class Trainer(RayPPOTrainer):
    """verl's RayPPOTrainer; ``init_workers`` (Ray worker groups, vLLM servers) gives CPU stand-ins."""

    def init_workers(self):
        self.actor_rollout_wg = Workers()
        self.async_rollout_manager = Rollout(self.train_dataset)
        self.checkpoint_manager = Weights()


def fit(config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # verl deprecates its legacy trainer
        trainer = Trainer(config=config, tokenizer=_tokenizer(), role_worker_mapping={Role.ActorRollout: object},
                          resource_pool_manager=Pools())
    trainer.init_workers()
    trainer.fit()
    return trainer


def _run(data_file, tmp, *overrides):
    return fit(_config(data_file, *HOOK, *FIT, f"trainer.default_local_dir={tmp}/ckpt",
                       f"+trainer.rollout_data_dir={tmp}/rollout", *overrides))


def _groups(trainer, up_to=None):
    """Every group fed (within a step in the order of verl's random uids: sorted here)."""
    g = trainer.train_dataset.policy.forecaster.per_group.sort("step", "prompt", "n", "k")
    return g if up_to is None else g.filter(pl.col("step") <= up_to)


def _scan(capsys, folder):
    capsys.readouterr()
    code, out, err = run_cli(capsys, "scan", str(folder), "-f", "json")
    assert code == 0, err
    return json.loads(out)


def _dumped(folder):
    """The run's own dump, per step: the prompts and whether each (step, prompt) group is silent."""
    rows = [json.loads(line) for f in sorted(os.listdir(folder)) for line in open(os.path.join(folder, f))]
    frame = pl.DataFrame(rows).group_by("step", "input").agg(pl.len().alias("n"), pl.col("score").n_unique().alias("u"))
    return frame


@pytest.fixture(scope="module")
def uninterrupted(data_file, tmp_path_factory):
    """Three epochs in order (data.shuffle=False: the sampler draws rows 0..31 each epoch, so each draw
    is known, and a resumed run's sampler continues as the uninterrupted one's), a checkpoint after
    every step."""
    tmp = tmp_path_factory.mktemp("whole")
    return tmp, _run(data_file, tmp, "data.shuffle=False", "trainer.save_freq=1")


def test_fit_skips_the_silent_rows_keeps_every_epoch_and_stays_auditable(uninterrupted, capsys):
    """A row off the skip list is served as drawn; a listed one is served with probability floor, else
    its draw goes to a row off the list not already in the batch. No row twice in a step, so
    ``sigmaudit scan`` reads the run's own dump: one group per (step, prompt), as fed to the forecaster."""
    whole, trainer = uninterrupted
    assert isinstance(trainer.train_dataset, SigmauditDataset)
    assert trainer.total_training_steps == 3 * EPOCH  # verl's plan, from len()
    steps = trainer.async_rollout_manager.steps
    assert sorted(steps) == list(range(1, 3 * EPOCH + 1))  # every planned step ran: no epoch shrank
    listed_draws = kept = 0
    for step, seen in steps.items():
        b = (step - 1) % EPOCH
        assert len(set(seen["rows"])) == BATCH  # no row twice in a step
        for drawn, row in zip(range(b * BATCH, (b + 1) * BATCH), seen["rows"], strict=True):
            if str(drawn) not in seen["skipped"]:
                assert row == drawn
            else:
                listed_draws += 1
                kept += row == drawn
                assert row == drawn or str(row) not in seen["skipped"]
    listed = trainer.train_dataset.policy.skipped
    assert {str(r) for r in range(BATCH)} <= listed <= {str(r) for r in SOLVED}  # always-solved rows only
    assert listed_draws >= 2 * BATCH
    assert abs(kept - listed_draws * FLOOR) <= 4 * np.sqrt(listed_draws * FLOOR * (1 - FLOOR)) + 1
    assert trainer.train_dataset.steps == 3 * EPOCH - 1  # fit returns before on_batch_end on its last step
    fed = _groups(trainer)
    assert fed.height == (3 * EPOCH - 1) * BATCH
    assert sorted(fed["step"].unique().to_list()) == list(range(1, 3 * EPOCH))  # verl's global steps
    scanned = _scan(capsys, whole / "rollout")
    dump = _dumped(whole / "rollout")
    assert dump.height == 3 * EPOCH * BATCH and set(dump["n"].to_list()) == {N}
    assert scanned["observed_silent"]["groups"] == dump.height
    silent = dump.filter(pl.col("u") == 1).height
    assert scanned["observed_silent"]["fraction"] == pytest.approx(silent / dump.height, abs=1e-12)
    code, out, err = run_cli(capsys, "watch", str(whole / "rollout"), "--once", "-f", "json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [e["step"] for e in events if "step" in e] == list(range(1, 3 * EPOCH + 1))  # then its summary


def _resume(data_file, tmp, whole, step, *overrides):
    shutil.copytree(whole / "ckpt" / f"global_step_{step}", tmp / "from" / f"global_step_{step}")
    return _run(data_file, tmp, "data.shuffle=False", "trainer.save_freq=-1", "trainer.resume_mode=resume_path",
                f"trainer.resume_from_path={tmp}/from/global_step_{step}", *overrides)


def _same_run_from(resumed, first, step, whole, tmp):
    """From ``step`` on, the resumed run drew, rewarded, fed and dumped exactly what the uninterrupted one did."""
    assert sorted(resumed.async_rollout_manager.steps) == list(range(step + 1, 3 * EPOCH + 1))
    for s, seen in resumed.async_rollout_manager.steps.items():
        assert seen == first.async_rollout_manager.steps[s], s
        assert (tmp / "rollout" / f"{s}.jsonl").read_text() == (whole / "rollout" / f"{s}.jsonl").read_text()
    assert _groups(resumed).equals(_groups(first))
    assert resumed.train_dataset.policy.skipped == first.train_dataset.policy.skipped
    assert resumed.train_dataset.steps == first.train_dataset.steps == 3 * EPOCH - 1


def test_fit_resumed_at_an_epoch_boundary_continues_with_the_skip_state(data_file, uninterrupted, tmp_path, capsys):
    """verl does not restore ``data.pt`` at an epoch boundary (global step 8 = 2 epochs of 4): the
    dataset restores its own ``sigmaudit.pt``, with step 8's rewards, and skips from its first batch on."""
    whole, first = uninterrupted
    own = {int(p.parent.name.split("_")[-1]) for p in (whole / "ckpt").glob(f"global_step_*/{STATE_FILE}")}
    assert own == set(range(1, 3 * EPOCH))  # every checkpoint (any interval) but the last step's: it is never fed
    resumed = _resume(data_file, tmp_path, whole, 2 * EPOCH)
    assert resumed.actor_rollout_wg.loaded == 2 * EPOCH
    assert resumed.train_dataset.resumed_from.endswith(f"global_step_{2 * EPOCH}/{STATE_FILE}")
    assert resumed.async_rollout_manager.steps[2 * EPOCH + 1]["skipped"]  # skipping from the first batch on
    assert resumed.val_dataset.resumed_from is None and not resumed.val_dataset.policy.skipped  # same file, not train
    _same_run_from(resumed, first, 2 * EPOCH, whole, tmp_path)
    assert _scan(capsys, tmp_path / "rollout")["observed_silent"]["groups"] == EPOCH * BATCH


def test_fit_resumed_inside_an_epoch_replays_the_uninterrupted_run(data_file, uninterrupted, tmp_path):
    """Inside an epoch verl restores ``data.pt`` too (taken before the step's rewards were fed); the
    dataset keeps its fuller ``sigmaudit.pt`` state."""
    whole, first = uninterrupted
    resumed = _resume(data_file, tmp_path, whole, EPOCH + 2)
    assert resumed.train_dataset.resumed_from.endswith(f"global_step_{EPOCH + 2}/{STATE_FILE}")
    _same_run_from(resumed, first, EPOCH + 2, whole, tmp_path)


def test_fit_extended_from_its_final_checkpoint_restores_data_pt(data_file, uninterrupted, tmp_path):
    """The last step is never fed (fit returns before on_batch_end), so its folder has no sigmaudit.pt:
    a run extended by an epoch from it restores the state verl saved in data.pt, without that step."""
    whole, first = uninterrupted
    resumed = _resume(data_file, tmp_path, whole, 3 * EPOCH, "trainer.total_epochs=4")
    assert resumed.train_dataset.resumed_from.endswith(f"global_step_{3 * EPOCH}/data.pt")
    assert _groups(resumed, 3 * EPOCH).equals(_groups(first))  # steps 1..11, as the first run fed them
    assert resumed.async_rollout_manager.steps[3 * EPOCH + 1]["skipped"] == first.train_dataset.policy.skipped
    assert resumed.train_dataset.steps == 4 * EPOCH - 2


def test_the_version_gate_refuses_only_a_verl_that_never_calls_the_hook():
    """RayPPOTrainer.fit calls on_batch_end from v0.5.0 (v0.5.0 l.1419–1421, the 0.7.1 wheel l.1625–1627,
    0.9.1 l.1818–1820); v0.4.1's has no such call."""
    for version in ("0.5.0", "0.6.1", "0.7.1", "0.8.0", "0.9.1", "0.10.0.dev0"):
        check_version(version)
    for version in ("0.4.1", "0.3.0.post1", "0.2"):
        with pytest.raises(ConfigError, match="never calls train_dataset.on_batch_end"):
            check_version(version)


@pytest.mark.parametrize(("overrides", "message"), [
    (["trainer.use_v1=True"], "v1 trainer never calls train_dataset.on_batch_end"),
    (["data.dataloader_num_workers=2"], "each dataloader worker holds its own copy"),
    (["+data.sigmaudit.max_psilent=0.5"], "unknown option max_psilent"),
    (["algorithm.filter_groups.enable=True"], "never reads algorithm.filter_groups"),
])
def test_a_configuration_it_cannot_serve_is_refused_at_start_up(data_file, overrides, message):
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
