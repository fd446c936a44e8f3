"""`sigmaudit curate` at the edge without a training set: the JSON contract against the audit, -G, the drop list,
the formats, and a thin log refused in one line."""

from __future__ import annotations

import json

import polars as pl
import pytest
from cli_runner import run

import sigmaudit
from sigmaudit.audits import corpus_of
from sigmaudit.audits.curation import value_curation
from sigmaudit.core.value import DEFAULT_CONFIDENCE, DEFAULT_MIN_VALUE

ROLLOUTS = "sample_logs/rollouts.parquet"


def test_json_is_the_audit_and_the_classes_cover_every_prompt(capsys):
    code, out, _ = run(capsys, "curate", ROLLOUTS, "-q", "-f", "json", "-G", "16")
    d = json.loads(out)
    assert code == 0 and (d["G"], d["G_source"], d["G_logged"], d["prompts"]) == (16, "given", 8, 200)
    v = d["value"]
    assert sum(c["prompts"] for c in v["classes"]) == 200 and [a["G"] for a in v["at"]] == [8, 16]
    want = value_curation(corpus_of(sigmaudit.load_counts([ROLLOUTS])), 16, [8], min_value=DEFAULT_MIN_VALUE,
                          confidence=DEFAULT_CONFIDENCE)
    assert [c["prompts"] for c in v["classes"]] == [c.prompts for c in want.classes]
    assert v["threshold"] == pytest.approx(0.5 * v["corpus_value"])
    for a in v["at"]:
        assert a["silent_after"] < a["silent_before"] and a["snr_change"] > 0 and 0 < a["signal_cost"] < 0.1
    assert d["dataset"] is None


def test_the_drop_list_without_a_training_set(capsys, tmp_path):
    dest = tmp_path / "drop.parquet"
    code, _, _ = run(capsys, "curate", ROLLOUTS, "-q", "--drop-out", str(dest), "--min-value", "0.25")
    table = pl.read_parquet(dest)
    assert code == 0 and table.height == 200
    assert table.columns == ["prompt", "samples", "k", "value", "p_below", "decision", "settle_samples"]
    low = table.filter(pl.col("decision") == "drop")
    assert low["value"].max() < 0.25 * table["value"].mean() and low["p_below"].min() >= 0.9


@pytest.mark.parametrize("fmt", ["csv", "markdown", "html"])
def test_every_format_writes(capsys, fmt):
    code, out, _ = run(capsys, "curate", ROLLOUTS, "-q", "-f", fmt)
    assert code == 0 and "drop" in out and "reprobe" in out


@pytest.mark.slow
def test_a_log_too_thin_for_G_is_refused_in_one_line(capsys, tmp_path):
    path = tmp_path / "thin.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},2,{i % 3}\n" for i in range(300)))
    code, out, err = run(capsys, "curate", str(path), "-q", "-G", "8")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "not identified" in err


@pytest.mark.parametrize(("flag", "value"), [("--min-value", "0"), ("--min-value", "1.5"),
                                             ("--drop-confidence", "0.3"), ("--drop-confidence", "1")])
def test_settings_out_of_range_are_refused_before_reading(capsys, flag, value):
    code, out, err = run(capsys, "curate", "no-such-file.parquet", flag, value)
    assert code == 2 and flag in err and "no-such-file" not in err


def test_the_flags_defaults_are_the_cores():
    import inspect

    from sigmaudit.cli.commands.curate import curate

    params = inspect.signature(curate).parameters
    assert (params["min_value"].default, params["confidence"].default) == (DEFAULT_MIN_VALUE, DEFAULT_CONFIDENCE)


def test_curate_and_plan_give_one_answer(capsys):
    """By default curate values prompts at plan's recommended G, and plan's data lever is the same drop class."""
    _, out, _ = run(capsys, "curate", "sample_logs/verl", "-q", "-f", "json")
    cur = json.loads(out)
    _, out, _ = run(capsys, "plan", "sample_logs/verl", "-q", "-f", "json")
    plan = json.loads(out)
    assert cur["G_source"] == "recommended" and cur["G"] == cur["G_recommended"] == plan["recommended_G"]
    value = next(r for r in plan["curation"]["rows"] if r["rule"] == "value")
    drop = next(c for c in cur["value"]["classes"] if c["decision"] == "drop")
    assert plan["curation"]["value_G"] == cur["G"] and value["prompts_dropped"] == drop["prompts"]
    at_plan = next(a for a in value["at"] if a["G"] == cur["G"])
    at_cur = next(a for a in cur["value"]["at"] if a["G"] == cur["G"])
    assert at_plan["silent_after"] == pytest.approx(at_cur["silent_after"], rel=1e-9)
    assert at_plan["signal_cost"] == pytest.approx(at_cur["signal_cost"], rel=1e-9)


def test_a_thin_log_is_valued_at_a_G_its_counts_fix(capsys, tmp_path):
    """Two samples per prompt fix the silent rate at G = 2 only: -G 2 answers (without the step SNR, whose noise
    ratio is read at G = 8), and the refusal of plan's search does not stop it."""
    path = tmp_path / "thin.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},2,{i % 3}\n" for i in range(300)))
    code, out, err = run(capsys, "curate", str(path), "-q", "-G", "2", "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["G"] == 2 and [a["G"] for a in d["value"]["at"]] == [2]
    assert d["value"]["at"][0]["snr_change"] is None and d["value"]["at"][0]["silent_before"] == pytest.approx(
        1 - d["value"]["corpus_value"])
