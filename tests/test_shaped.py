"""Shaped rewards (issue 21 item 5): reward = correct + 0.1 · format. A group is silent (no gradient) when its
raw rewards have zero spread; silence on correctness (all on one side of --threshold) is reported beside it,
each labelled, and the gate uses zero spread unless told otherwise. The truth is counted here with Polars
from the rewards written, never through sigmaudit."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run


@pytest.fixture(scope="module")
def shaped(tmp_path_factory):
    rng = np.random.default_rng(3)
    rows = []
    for step in range(1, 6):
        for i in range(60):
            p, fmt = rng.beta(0.3, 0.3), rng.choice([0.6, 0.97])
            rows.extend((step, f"q{i}", float(rng.random() < p) + 0.1 * float(rng.random() < fmt)) for _ in range(8))
    long = pl.DataFrame(rows, schema=["step", "prompt", "reward"], orient="row")
    folder = tmp_path_factory.mktemp("shaped")
    long.write_parquet(folder / "long.parquet")
    long.group_by("step", "prompt", maintain_order=True).agg(pl.col("reward").alias("rewards")).write_parquet(
        folder / "grouped.parquet")
    g = long.group_by("step", "prompt").agg((pl.col("reward") >= 1).sum().alias("k"), pl.len().alias("n"),
                                             (pl.col("reward").max() == pl.col("reward").min()).alias("flat"))
    truth = {"zero_spread": float(g["flat"].mean()),
             "correctness": float(((g["k"] == 0) | (g["k"] == g["n"])).mean())}
    assert truth["zero_spread"] < truth["correctness"] - 0.1  # the format bonus breaks many unanimous groups
    return folder, truth


@pytest.mark.parametrize("layout", ["long", "grouped"])
def test_both_fractions_reported_and_right(capsys, shaped, layout):
    folder, truth = shaped
    code, out, err = run(capsys, "scan", str(folder / f"{layout}.parquet"), "--threshold", "1", "-f", "json", "-q")
    assert code == 0, err
    d = json.loads(out)
    o, w = d["observed_silent"], d["wasted"]
    assert o["zero_spread"] == pytest.approx(truth["zero_spread"], abs=1e-12)
    assert o["fraction"] == pytest.approx(truth["correctness"], abs=1e-12)
    assert w["estimator"] == "observed, zero spread"
    assert w["silent_rollout_share"] == pytest.approx(truth["zero_spread"], abs=1e-12)  # every group has 8
    code, out, _ = run(capsys, "scan", str(folder / f"{layout}.parquet"), "--threshold", "1", "--summary", "-q")
    assert f"zero-spread groups (raw rewards all equal, no gradient): {100 * truth['zero_spread']:.1f}%" in out


def test_the_gate_uses_zero_spread_unless_told(capsys, shaped):
    folder, truth = shaped
    log = str(folder / "long.parquet")
    limit = f"{(truth['zero_spread'] + truth['correctness']) / 2:.3f}"
    code, out, _ = run(capsys, "check", log, "--threshold", "1", "--max-silent", limit, "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and d["silent_by"] == "zero-spread"
    assert d["checks"][0]["value"] == pytest.approx(truth["zero_spread"], abs=1e-12)
    code, out, _ = run(capsys, "check", log, "--threshold", "1", "--max-silent", limit, "--silent-by", "correctness",
                       "-f", "json", "-q")
    d = json.loads(out)
    assert code == 1 and d["silent_by"] == "correctness"
    assert d["checks"][0]["value"] == pytest.approx(truth["correctness"], abs=1e-12)


def test_binary_rewards_carry_no_spread(capsys):
    from pathlib import Path

    log = Path(__file__).resolve().parents[1] / "sample_logs" / "rollouts.parquet"
    code, out, _ = run(capsys, "scan", str(log), "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and d["observed_silent"]["zero_spread"] is None and d["wasted"]["estimator"] == "observed"
