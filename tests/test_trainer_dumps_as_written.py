"""Issue 22 (items 1, 2, 6), issue 23 item 6, issue 20 item 1: trainer dumps read exactly as their
writers write them, one test per defect. The dumps come from scripts/make_sample_logs.py, whose
generators follow each writer's code (their truth is counted from the generated rewards)."""

from __future__ import annotations

import gzip
import importlib.util
import inspect
import json
import shutil
from pathlib import Path

import pytest

from sigmaudit.loaders import LoadOptions, load_counts, trainers
from sigmaudit.loaders.trainers import TrainerReader

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = ROOT / "sample_logs"
_spec = importlib.util.spec_from_file_location("make_sample_logs", ROOT / "scripts" / "make_sample_logs.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)


def _silent(lc) -> float:
    pg = lc.per_group
    return float(((pg["k"] == 0) | (pg["k"] == pg["n"])).mean())


def test_open_instruct_without_filtering_dataset_string_then_list_reads(tmp_path):
    """'ComputeError: could not append value: ["gsm8k"] of type: list[str]': the record shape comes
    from RolloutRecord, and ``dataset`` (unused by the layout) never fails a read."""
    import numpy as np

    truth = make.open_instruct(np.random.default_rng(3), tmp_path, "oi", filter_zero_std=False).counts()
    shard = next((tmp_path / "oi").rglob("*_rollouts_000000.jsonl"))
    kinds = {type(json.loads(line)["dataset"]).__name__ for line in shard.read_text().splitlines()}
    assert kinds == {"str", "list"}  # the defect's shape is really there
    lc = load_counts([tmp_path / "oi"])
    assert lc.layout == "open-instruct" and lc.filtered is None  # unfiltered: silent groups present
    assert (lc.per_prompt.height, lc.n_rows, lc.per_group.height) == \
        (truth["prompts"], truth["rollouts"], truth["groups"])
    assert _silent(lc) == pytest.approx(truth["silent"], abs=1e-12) and truth["silent"] > 0.2
    filtered = load_counts([SAMPLE_LOGS / "open-instruct"])  # with filtering (the default)
    assert filtered.filtered is not None and filtered.filtered.source == "structure"


JSONL_DUMPS = ["areal", "nemo-rl", "open-instruct", "prime-rl", "roll", "skyrl", "verl", "verl-v1"]


@pytest.mark.parametrize("name", JSONL_DUMPS)
def test_gzipped_trainer_dump_reads_as_its_framework(name, tmp_path):
    """``gzip -r`` on an archived run: open-instruct gave an internal error, AReaL read as a generic
    long log. Every jsonl trainer dump gzipped reads as its framework, with the same counts."""
    shutil.copytree(SAMPLE_LOGS / name, tmp_path / name)
    for f in (tmp_path / name).rglob("*.jsonl"):
        with open(f, "rb") as src, gzip.open(f.with_name(f.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        f.unlink()
    plain, packed = load_counts([SAMPLE_LOGS / name]), load_counts([tmp_path / name])
    assert packed.layout == plain.layout
    order = ["step", "prompt", "n", "k"]
    assert packed.per_group.sort(order).equals(plain.per_group.sort(order))
    assert packed.filtered == plain.filtered
    skipped = [n for n in plain.notes if n.startswith("skipped")]
    assert len(skipped) == len([n for n in packed.notes if n.startswith("skipped")])


def test_zstd_trainer_dump_reads_as_its_framework(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    shutil.copytree(SAMPLE_LOGS / "areal", tmp_path / "areal")
    for f in (tmp_path / "areal").rglob("*.jsonl"):
        f.with_name(f.name + ".zst").write_bytes(zstandard.ZstdCompressor().compress(f.read_bytes()))
        f.unlink()
    lc = load_counts([tmp_path / "areal"])
    assert lc.layout == "areal" and lc.n_rows == load_counts([SAMPLE_LOGS / "areal"]).n_rows


def test_gzipped_trainer_dump_bomb_is_refused(tmp_path):
    line = json.dumps({"task_id": 0, "sample_idx": 0, "seqlen": 1, "prompt_len": 1, "head_version": 1,
                       "tail_version": 1, "reward": 1.0, "prompt": "p", "completion": "x" * 1000})
    with gzip.open(tmp_path / "0.jsonl.gz", "wt") as fh:
        fh.write((line + "\n") * 3000)  # ~3 MB from a few kB
    from sigmaudit.errors import InputError

    with pytest.raises(InputError) as err:
        load_counts([tmp_path / "0.jsonl.gz"])
    assert "compression bomb" in err.value.one_line()


def _verl_appended_to_itself(tmp_path: Path) -> Path:
    src = next((SAMPLE_LOGS / "verl").rglob("1.jsonl"))
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "1.jsonl").write_text(src.read_text() * 2)
    return tmp_path / "verl"


def _copies(tmp_path: Path) -> Path:
    shutil.copytree(SAMPLE_LOGS / "roll", tmp_path / "roll")
    first = sorted((tmp_path / "roll").rglob("*.jsonl"))[0]
    # a copy the ROLL reader also claims (a copy named otherwise fits another layout and is skipped anyway)
    shutil.copy(first, first.parent / "rollout_dump_data.step_9.jsonl")
    return tmp_path / "roll"


@pytest.mark.parametrize("case", ["trl", "verl", "copies"])
def test_keep_duplicates_changes_every_reader_that_drops(case, tmp_path):
    """``--keep-duplicates`` did nothing for framework readers: every reader that drops rows (TRL's
    re-logged batches, a log appended to itself, a byte copy) reads them with it."""
    folder = {"trl": lambda: SAMPLE_LOGS / "trl", "verl": lambda: _verl_appended_to_itself(tmp_path),
              "copies": lambda: _copies(tmp_path)}[case]()
    dropped, kept = load_counts([folder]), load_counts([folder], LoadOptions(keep_duplicates=True))
    assert kept.n_rows == 2 * dropped.n_rows if case != "copies" else kept.n_rows > dropped.n_rows
    assert any("--keep-duplicates" in n for n in dropped.notes)


def test_trainer_readers_implement_one_protocol():
    """Issue 20 item 1: no getattr(module, "recognize"); every framework is a TrainerReader whose
    methods the loader calls unconditionally."""
    assert all(isinstance(f, TrainerReader) for f in trainers.FRAMEWORKS)
    assert {f.name for f in trainers.FRAMEWORKS} == set(trainers.BY_LAYOUT)
    source = inspect.getsource(trainers)
    assert "getattr(" not in source
    for f in trainers.FRAMEWORKS:  # each overrides at least one way to read or refuse a dump
        own = {m for m in ("recognize", "claims_path", "claims", "read") if m in type(f).__dict__}
        assert own, f.name
        assert ("read" in own) == bool({"claims_path", "claims"} & own)


def test_watch_counts_a_relogged_trl_batch_once():
    """``watch`` reads file by file: a batch logged again (num_iterations = 2) is still counted once."""
    from sigmaudit.loaders.follow import Follower

    with Follower([SAMPLE_LOGS / "trl"], LoadOptions()) as follower:
        snap = follower.poll()
    assert int(snap.per_group["n"].sum()) == load_counts([SAMPLE_LOGS / "trl"]).n_rows == 288


def test_prime_rl_effective_glob_over_step_folders_reads():
    """'glob matches no supported files' for ``…/rollouts/step_*/train/effective``: a glob whose
    matches are folders reads the folders' files."""
    lc = load_counts([str(SAMPLE_LOGS / "prime-rl" / "rollouts" / "step_*" / "train" / "effective")])
    files = sorted((SAMPLE_LOGS / "prime-rl").rglob("effective/traces.jsonl"))
    assert len(lc.files) == len(files) == 4
    assert lc.per_group.equals(load_counts(files).per_group)
    assert lc.filtered is not None and lc.filtered.source == "structure"


def test_prime_rl_env_of_another_json_type_later_never_fails_a_read(tmp_path):
    """A pass-through field (``env.name``) that is a string on early lines and an object later: was
    'internal error: ComputeError: could not append value ... struct[2]'."""
    src = sorted((SAMPLE_LOGS / "prime-rl").rglob("all/traces.jsonl"))[0]
    episodes = [json.loads(line) for line in src.read_text().splitlines()]
    for e in episodes[4:]:
        e["env"] = {"name": {"id": "gsm8k", "version": 2}}
    target = tmp_path / "rollouts" / "step_0" / "train" / "all" / "traces.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    assert load_counts([tmp_path]).per_group.equals(load_counts([src]).per_group)


def test_nemo_rl_reward_that_is_not_one_number_is_one_line_not_an_internal_error(tmp_path):
    (tmp_path / "train_data_step1.jsonl").write_text(
        json.dumps({"content": [["q", "a"]], "rewards": [1.0, 0.0], "idx": [0]}) + "\n")
    from sigmaudit.errors import SchemaError

    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path])
    assert "train_data_step1.jsonl:1" in err.value.one_line() and "not one number" in err.value.one_line()
