"""Every framework's bundled dump reads with no flags and gives the true counts.

The truth comes from scripts/make_sample_logs.py, which counts the rewards it generated (never
through sigmaudit); each generator follows its framework's writer (see docs/trainers.md).
"""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import LoadOptions, load_counts

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = ROOT / "sample_logs"
_spec = importlib.util.spec_from_file_location("make_sample_logs",
                                               ROOT / "scripts" / "make_sample_logs.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)

LAYOUT = {"verl-v1": "verl", "inspect_ai": "inspect-ai", "trl-one-prompt": "trl"}
POST_FILTER = {"open-instruct"}


def observed(lc) -> dict:
    pp, pg = lc.per_prompt, lc.per_group
    return {"prompts": pp.height, "rollouts": int(pp["n"].sum()), "groups": pg.height,
            "silent": float(((pg["k"] == 0) | (pg["k"] == pg["n"])).mean()),
            "never": float((pp["k"] == 0).mean()), "always": float((pp["k"] == pp["n"]).mean())}


@pytest.mark.parametrize("name", sorted(make.FRAMEWORKS))
def test_framework_dump_reads_with_true_counts(name, tmp_path):
    truth = make.make_framework(name, tmp_path).counts()
    for folder in (SAMPLE_LOGS / name, tmp_path / name):  # bundled, and freshly generated
        lc = load_counts([folder])
        assert lc.layout == LAYOUT.get(name, name)
        got = observed(lc)
        assert {k: got[k] for k in ("prompts", "rollouts", "groups")} == \
            {k: truth[k] for k in ("prompts", "rollouts", "groups")}
        for share in ("silent", "never", "always"):
            assert got[share] == pytest.approx(truth[share], abs=1e-12), share
        assert lc.missing_rewards == 0
        assert (lc.filtered is not None) == (name in POST_FILTER)
    assert truth["groups"] > 20 and 0 < truth["silent"] < 1 or name in POST_FILTER  # not degenerate


def test_the_folder_above_reads_too(tmp_path):
    lc = load_counts([SAMPLE_LOGS / "areal" / "logs"])
    truth = make.make_framework("areal", tmp_path).counts()
    assert observed(lc)["groups"] == truth["groups"]
    assert any("eval-rollout" in n and n.startswith("skipped") for n in lc.notes)


def test_non_rollout_files_are_skipped_with_a_note():
    notes = " | ".join(load_counts([SAMPLE_LOGS / "prime-rl"]).notes)
    assert "skipped" in notes and "metrics.jsonl: prime-rl metrics" in notes
    assert "`effective` subset" in notes
    notes = " | ".join(load_counts([SAMPLE_LOGS / "skyrl"]).notes)
    assert "aggregated_results.jsonl and 1 more: SkyRL aggregated eval metrics" in notes
    notes = " | ".join(load_counts([SAMPLE_LOGS / "open-instruct"]).notes)
    assert "_metadata.jsonl: open-instruct run metadata" in notes


def test_prime_rl_effective_alone_is_a_post_filter_dump(tmp_path):
    effective = sorted((SAMPLE_LOGS / "prime-rl").rglob("effective/traces.jsonl"))
    lc = load_counts(effective)
    assert lc.filtered is not None and lc.filtered.source == "structure"
    assert "filter_zero_advantages" in lc.filtered.message
    pg = lc.per_group
    assert int(((pg["k"] == 0) | (pg["k"] == pg["n"])).sum()) == 0  # only mixed groups kept


def test_trl_relogged_batches_are_counted_once():
    lc = load_counts([SAMPLE_LOGS / "trl"])
    assert lc.n_rows == 3 * 12 * 8  # three generations of 12 prompts x 8, each logged twice
    note = next(n for n in lc.notes if "logs again" in n or "log again" in n)
    assert note.startswith("TRL: completions_00002.parquet and 2 more (288 rows) log again the generation batch")
    assert "the same prompts in the same order over a whole block of groups" in note
    assert "--keep-duplicates reads them" in note
    kept = load_counts([SAMPLE_LOGS / "trl"], LoadOptions(keep_duplicates=True))
    assert kept.n_rows == 2 * 288


def test_trl_steps_whose_completions_are_all_identical_read_every_row(tmp_path):
    """Issue 22: a step whose G completions are identical is a silent group, not a repeat."""
    lc = load_counts([SAMPLE_LOGS / "trl-one-prompt"])
    assert lc.n_rows == 40 * 6 and lc.per_group.height == 40
    assert not any("duplicate" in n or "counted once" in n for n in lc.notes)
    # two steps that drew the same easy prompt and answered it the same way: kept, and said
    assert any(n.startswith("TRL: completions_00008.parquet holds the same rows as the file logged "
                            "before") and "kept" in n for n in lc.notes)
    silent = lc.per_group.filter((pl.col("k") == 0) | (pl.col("k") == pl.col("n")))
    assert silent.height == make.make_framework("trl-one-prompt", tmp_path).counts()["silent"] * 40


def test_trl_one_prompt_num_iterations_2_dump_still_reads_once(tmp_path):
    """One prompt per batch: the repeat is proven by the run's period (every 2nd file new)."""
    truth = make.trl_one_prompt(np.random.default_rng(5), tmp_path, "run", num_iterations=2).counts()
    lc = load_counts([tmp_path / "run"])
    assert len(lc.files) == 20 and lc.n_rows == truth["rollouts"] == 20 * 6
    note = next(n for n in lc.notes if "counted once" in n)
    assert "a new batch every 2 files over the run" in note
    assert load_counts([tmp_path / "run"], LoadOptions(keep_duplicates=True)).n_rows == 40 * 6


def test_inspect_members_are_zstd_compressed_as_inspect_writes_them():
    log = next((SAMPLE_LOGS / "inspect_ai" / "logs").glob("*gsm8k*.eval"))
    with zipfile.ZipFile(log) as zf:
        info = zf.getinfo("samples/0_epoch_1.json")
        assert info.compress_type == 93
        with pytest.raises(NotImplementedError):
            zf.read(info)  # what Python < 3.14 does with inspect's logs
    assert load_counts([log]).per_prompt.height == 30


def test_lm_eval_is_refused_in_one_line():
    with pytest.raises(SchemaError) as err:
        load_counts([SAMPLE_LOGS / "lm-eval"])
    line = err.value.one_line()
    assert "\n" not in line
    assert "k of n is not in the file" in line and "counts file (doc_id, n, k)" in line


def test_an_unrelated_file_in_a_dump_folder_does_not_abort(tmp_path):
    shutil.copytree(SAMPLE_LOGS / "roll", tmp_path / "roll")
    (tmp_path / "roll" / "notes.csv").write_text("author,comment\nme,first try\n")
    lc = load_counts([tmp_path / "roll"])
    assert lc.layout == "roll"
    assert any("notes.csv: fits no layout" in n for n in lc.notes)
    with pytest.raises(SchemaError):  # named, it is an error
        load_counts([tmp_path / "roll" / "notes.csv"])
