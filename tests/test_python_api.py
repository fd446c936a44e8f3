"""The Python API on paths (``sigmaudit.scan``, ``check``, ``forecast_logs``, ``backtest_logs``) and the
incremental ``sigmaudit.Forecaster``: each equals its command's JSON; docs/python-api.md runs as written."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run

import sigmaudit
from sigmaudit.render.json import _clean

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")
VERL = str(ROOT / "sample_logs" / "verl")


def _cli_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "-f", "json", "-q")
    assert code in (0, 1), err
    data = json.loads(out)
    del data["schema_version"]
    return data


def test_docs_page_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 25 and result.failed == 0


def test_backtest_through_the_api_equals_the_command(capsys):
    assert _clean(sigmaudit.backtest_logs(SAMPLE).to_dict()) == _cli_json(capsys, "backtest", SAMPLE)
    assert _clean(sigmaudit.backtest_logs(VERL, G=4, max_lost=0.1).to_dict()) == _cli_json(
        capsys, "backtest", VERL, "-G", "4", "--max-lost", "0.1")


def test_scan_and_check_through_the_api_equal_the_commands(capsys):
    assert _clean(sigmaudit.scan(VERL, G=[4, 8]).to_dict()) == _cli_json(capsys, "scan", VERL, "-G", "4", "-G", "8")
    api = sigmaudit.check(VERL, max_silent=0.5, min_fidelity=0.5, bootstrap=0)
    cli = _cli_json(capsys, "check", VERL, "--max-silent", "0.5", "--min-fidelity", "0.5", "--bootstrap", "0")
    assert _clean(api.to_dict()) == cli and api.passed is False and api.G == 8


def test_forecaster_fed_step_by_step_equals_forecast_on_the_dump(capsys):
    loaded = sigmaudit.load_counts([VERL])
    f = sigmaudit.Forecaster(max_p_silent=0.8)
    for step in sorted(set(loaded.per_group["step"].to_list())):
        part = loaded.per_group.filter(loaded.per_group["step"] == step)
        f.update_counts(step, part["prompt"].to_list(), part["n"], part["k"])
    cli = _cli_json(capsys, "forecast", VERL, "--max-p-silent", "0.8")
    assert _clean(f.to_dict()) == cli
    assert f.skip_list() == [r["prompt"] for r in cli["per_prompt"] if r["skip"]]
    assert f.expected_silent_share() == pytest.approx(cli["expected_silent"] / cli["prompts"], rel=1e-12)


def test_update_with_rewards_equals_update_counts():
    rng = np.random.default_rng(0)
    by_rewards, by_counts = sigmaudit.Forecaster(G=4), sigmaudit.Forecaster(G=4)
    for step in range(1, 5):
        prompts = [f"q{i}" for i in rng.choice(12, size=6, replace=False)]
        rewards = rng.random((6, 4)) < rng.random((6, 1))
        by_rewards.update(step, np.repeat(prompts, 4)[::-1], rewards.ravel()[::-1])  # any row order
        by_counts.update_counts(step, prompts, n=[4] * 6, k=rewards.sum(axis=1))
    assert by_rewards.per_group.sort("step", "prompt").equals(by_counts.per_group.sort("step", "prompt"))
    assert by_rewards.p_silent() == by_counts.p_silent()
    shares = by_counts.observed(4)
    k = by_counts.per_group.filter(by_counts.per_group["step"] == 4)["k"].to_numpy()
    assert shares.groups == 6 and shares.silent == float(((k == 0) | (k == 4)).mean())


def test_suggested_n_is_the_smallest_size_that_gets_below_the_limit():
    f = sigmaudit.Forecaster(G=8)
    loaded = sigmaudit.load_counts([VERL])
    for step in sorted(set(loaded.per_group["step"].to_list())):
        part = loaded.per_group.filter(loaded.per_group["step"] == step)
        f.update_counts(step, part["prompt"].to_list(), part["n"], part["k"])
    sizes = (4, 8, 16)
    table = {g: f.p_silent(g) for g in sizes}
    for prompt, n in f.suggested_n(sizes, max_p_silent=0.4).items():
        ok = [g for g in sizes if table[g][prompt] <= 0.4]
        assert n == (min(ok) if ok else None)


@pytest.mark.parametrize(("call", "message"), [
    (lambda f: f.update(1, ["a", "b"], [1.0]), "2 prompt ids but 1 rewards"),
    (lambda f: f.update(1, ["a"], [0.5]), "rewards must be 0/1"),
    (lambda f: f.update(1, ["a"], [float("nan")]), "a reward is NaN"),
    (lambda f: f.update_counts(1, ["a"], [4], [5]), "0 <= k <= n"),
    (lambda f: f.update_counts(1.5, ["a"], [4], [1]), "step must be a whole number"),
    (lambda f: f.observed(), "nothing fed yet"),
])
def test_forecaster_refuses_bad_input(call, message):
    with pytest.raises(sigmaudit.ConfigError, match=message):
        call(sigmaudit.Forecaster())


def test_graded_rewards_need_a_threshold():
    f = sigmaudit.Forecaster(threshold=0.5)
    f.update(1, ["a", "a", "b", "b"], [0.2, 0.7, 0.9, 0.6])
    assert f.per_group.sort("prompt")["k"].to_list() == [1, 2]


def test_import_is_light_and_typed():
    code = "import sys, sigmaudit; print(sorted(m for m in ('numpy', 'polars', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert out.strip() == "[]"
    assert (ROOT / "sigmaudit" / "py.typed").is_file()
    assert '"sigmaudit" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
    for name in ("scan", "check", "forecast_logs", "backtest_logs", "Forecaster"):
        assert name in sigmaudit.__all__
