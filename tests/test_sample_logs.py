"""Every framework's bundled dump reads with no flags and gives the true counts.

The truth comes from scripts/make_sample_logs.py, which counts the rewards it generated (never
through sigmaudit); each generator follows its framework's writer (see docs/trainers.md).
"""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from pathlib import Path

import pytest

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import load_counts

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = ROOT / "sample_logs"
_spec = importlib.util.spec_from_file_location("make_sample_logs",
                                               ROOT / "scripts" / "make_sample_logs.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)

LAYOUT = {"verl-v1": "verl", "inspect_ai": "inspect-ai"}
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
    assert sum("logged again" in n for n in lc.notes) == 3


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
