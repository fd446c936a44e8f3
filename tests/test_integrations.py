"""The trainer hooks' own logic (sigmaudit/integrations/core.py), with no trainer installed.

The TRL callback and the verl dataset themselves are tested inside the real trainers in
tests/test_trainers_trl.py and tests/test_trainers_verl.py (the [trainers] extra); what is tested here,
with no trainer installed, is every number they log or act on, computed from the rewards they read.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sigmaudit.audits.forecast import forecast
from sigmaudit.errors import ConfigError
from sigmaudit.integrations.core import SilentGroupMetrics, SkipPolicy, group_counts

ROOT = Path(__file__).resolve().parents[1]


def test_group_counts_by_blocks_and_by_ids():
    rewards = [1, 1, 1, 0, 0, 0, 1, 0.5, np.nan]
    prompts = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    p, n, k, silent = group_counts(prompts, rewards, group_size=3, threshold=1.0)
    assert (p, n.tolist(), k.tolist(), silent.tolist()) == (["a", "b", "c"], [3, 3, 2], [3, 0, 1],
                                                            [True, True, False])
    shuffled = [4, 0, 8, 2, 6, 1, 3, 5, 7]
    p2, n2, k2, s2 = group_counts([prompts[i] for i in shuffled], [rewards[i] for i in shuffled],
                                  group_ids=[f"g{i // 3}" for i in shuffled], threshold=1.0)
    assert (p2, n2.tolist(), k2.tolist(), s2.tolist()) == (p, n.tolist(), k.tolist(), silent.tolist())
    with pytest.raises(ConfigError, match="not whole groups of 4"):
        group_counts(prompts, rewards, group_size=4)


def _steps(seed: int = 1, steps: int = 5, prompts: int = 12, G: int = 4):
    """Rewards of a GRPO-like run, TRL's layout: G completions of a prompt next to each other; prompts
    q0 to q3 drawn at every step (never / always solved), 4 of the others at random."""
    rng = np.random.default_rng(seed)
    ability = rng.uniform(0, 1, size=prompts)
    ability[:4] = (0.0, 0.0, 1.0, 1.0)  # never / always solved: silent at every visit
    for step in range(1, steps + 1):
        drawn = np.r_[0:4, rng.choice(np.arange(4, prompts), size=4, replace=False)]
        ids = np.repeat([f"q{i}" for i in drawn], G).tolist()
        rewards = (rng.random((8, G)) < ability[drawn, None] ** (1 / step)).astype(float).ravel()
        yield step, ids, rewards


def test_silent_group_metrics_are_the_trainers_zero_std_share_and_sigmaudits_forecast():
    m = SilentGroupMetrics(other_G=(8,))
    fed = []
    for step, ids, rewards in _steps():
        out = m.step(step, ids, rewards, group_size=4)
        grouped = rewards.reshape(-1, 4)
        zero_std = np.isclose(grouped.std(axis=1, ddof=1), 0.0)  # TRL: nanstd(rewards.view(-1, G)) == 0
        assert out["sigmaudit/silent_observed"] == zero_std.mean()
        assert out["sigmaudit/all_wrong_observed"] == (grouped.sum(axis=1) == 0).mean()
        assert out["sigmaudit/all_correct_observed"] == (grouped.sum(axis=1) == 4).mean()
        fed.append((step, ids[::4], grouped.sum(axis=1)))
        if step == 1:
            assert "sigmaudit/silent_forecast_next_G4" not in out
            continue
        import polars as pl

        per_group = pl.DataFrame({"step": [s for s, p, _ in fed for _ in p],
                                  "prompt": [x for _, p, _ in fed for x in p],
                                  "n": [4] * sum(len(p) for _, p, _ in fed),
                                  "k": [int(x) for _, _, k in fed for x in k]})
        for G in (4, 8):
            r = forecast(per_group, G, max_p_silent=0.9)
            assert out[f"sigmaudit/silent_forecast_next_G{G}"] == pytest.approx(r.expected_silent / r.prompts,
                                                                                rel=1e-12)
        assert out["sigmaudit/skip_list"] == forecast(per_group, 4, max_p_silent=0.9).skipped


def test_skip_policy_draws_skip_listed_prompts_at_the_floor():
    policy = SkipPolicy(max_p_silent=0.5, floor=0.1, seed=3)
    for step, ids, rewards in _steps(seed=2):
        policy.observe(step, ids, rewards, group_ids=[f"{step}-{i // 4}" for i in range(len(ids))])
    assert policy.skipped == frozenset(policy.forecaster.skip_list())
    listed = sorted(policy.skipped)
    free = sorted({f"q{i}" for i in range(12)} - policy.skipped)
    assert listed and free
    draws = 20_000
    kept = sum(policy.keep(listed[0]) for _ in range(draws)) / draws
    assert abs(kept - 0.1) < 4 * np.sqrt(0.1 * 0.9 / draws)
    assert all(policy.keep(p) for p in free for _ in range(50))
    assert (policy.weight(listed[0]), policy.weight(free[0])) == (0.1, 1.0)
    with pytest.raises(ConfigError, match="floor must lie in"):
        SkipPolicy(floor=1.5)


def test_the_integrations_package_imports_no_trainer():
    """In a fresh interpreter (the trainer tests import the trainers into this one)."""
    code = ("import sys, sigmaudit.integrations, sigmaudit.integrations.core; "
            "print(sorted({'transformers', 'trl', 'verl', 'torch'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_docs_name_the_trainer_commits_and_the_versions_tested():
    """The adapters, docs/integrations.md and the [trainers] extra name the same commits and releases."""
    import tomllib

    page = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for module, package in (("trl", "trl"), ("verl", "verl")):
        source = (ROOT / "sigmaudit" / "integrations" / f"{module}.py").read_text(encoding="utf-8")
        commits = set(re.findall(r"\b[0-9a-f]{40}\b", source))
        assert commits and all(c in page for c in commits)
        (version,) = {r.split(";")[0].split("==")[1].strip() for r in pins["trainers"] if r.startswith(f"{package}==")}
        assert f"{package} {version}" in source and f"{package} **{version}**" in page
    (torch,) = {r.split("==")[1] for r in pins["trainers"] if r.startswith("torch==")}
    assert f"torch **{torch}+cpu**" in page


def test_steps_with_no_scored_group_or_no_group_at_all():
    """An all-NaN step (every prompt unscorable) counts its groups, none silent (TRL's rule); an
    empty step has no share to give (NaN), with group ids or a group size alike."""
    for kwargs in ({"group_ids": ["g1"] * 4 + ["g2"] * 4}, {"group_size": 4}):
        m = SilentGroupMetrics()
        out = m.step(1, ["a"] * 4 + ["b"] * 4, [np.nan] * 8, **kwargs)
        assert out["sigmaudit/groups"] == 2.0
        assert (out["sigmaudit/silent_observed"], out["sigmaudit/all_wrong_observed"],
                out["sigmaudit/all_correct_observed"]) == (0.0, 0.0, 0.0)
        assert m.forecaster.groups == 0
        empty = m.step(2, [], [], **{key: [] if key == "group_ids" else v for key, v in kwargs.items()})
        assert empty["sigmaudit/groups"] == 0.0
        assert all(np.isnan(empty[f"sigmaudit/{k}_observed"]) for k in ("silent", "all_wrong", "all_correct"))
    m = SilentGroupMetrics()
    m.step(1, ["a"] * 4, [1, 1, 1, 1], group_ids=["x"] * 4)
    m.step(2, ["a"] * 4, [0, 1, 0, 1], group_ids=["y"] * 4)
    out = m.step(3, ["a"] * 4, [np.nan] * 4, group_ids=["z"] * 4)  # no scored group: G from what was fed
    assert out["sigmaudit/silent_forecast_next_G4"] == m.forecaster.expected_silent_share(4)


@pytest.mark.parametrize("bad", [-4, 0, 2.5, True, "4"])
def test_group_size_must_be_a_whole_number_of_at_least_one(bad):
    with pytest.raises(ConfigError, match="group_size must be a whole number"):
        group_counts(["a"] * 4, [1, 0, 1, 0], group_size=bad)
    with pytest.raises(ConfigError, match="group_size must be a whole number"):
        SilentGroupMetrics().step(1, ["a"] * 4, [1, 0, 1, 0], group_size=bad)


def test_the_zero_std_rule_is_trls_on_every_group():
    """TRL's frac_reward_zero_std rule, brute force per group: two or more scored rewards whose
    sample std (ddof 1) is <= 1e-8; unscorable and single-scored groups are not silent."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        G = int(rng.integers(1, 6))
        groups = int(rng.integers(0, 6))
        r = rng.choice([0.0, 1.0, 0.5, np.nan, 1.0 + 1e-9], size=groups * G)
        _, n, k, silent = group_counts(["p"] * r.size, r, group_size=G, zero_std_atol=1e-8)
        for g in range(groups):
            block = r[g * G:(g + 1) * G]
            scored = block[~np.isnan(block)]
            want = scored.size >= 2 and np.std(scored, ddof=1) <= 1e-8
            assert (bool(silent[g]), int(n[g]), int(k[g])) == (want, scored.size, int((scored >= 1).sum()))
        _, n2, _, equal = group_counts(["p"] * r.size, r, group_size=G)
        for g in range(groups):
            block = r[g * G:(g + 1) * G]
            scored = block[~np.isnan(block)]
            assert bool(equal[g]) == (scored.size >= 1 and np.unique(scored).size == 1)


def test_skip_policy_state_round_trips():
    policy = SkipPolicy(max_p_silent=0.5, floor=0.3, seed=5)
    for step, ids, rewards in _steps(seed=4):
        policy.observe(step, ids, rewards, group_size=4)
    copy = SkipPolicy(max_p_silent=0.5, floor=0.3, seed=99)
    copy.load_state_dict(policy.state_dict())
    assert copy.skipped == policy.skipped and copy.forecaster.per_group.equals(policy.forecaster.per_group)
    listed = sorted(policy.skipped)
    assert [copy.keep(p) for p in listed * 20] == [policy.keep(p) for p in listed * 20]


def _scaled(rewards_of_right: float, wrong: float = 0.0):
    """_steps with right answers scoring ``rewards_of_right`` and wrong ones ``wrong``."""
    return [(step, ids, np.where(np.asarray(r) >= 1, rewards_of_right, wrong)) for step, ids, r in _steps(seed=2)]


def test_rewards_that_never_reach_the_threshold_but_vary_are_warned_and_skip_nothing():
    """Right answers scoring 0.7 at the default threshold 1.0: every group counts all-wrong, so the
    forecast calls every prompt silent (with no warning before: every prompt skip-listed). The same
    rewards at threshold 0.7 give the skip list of the binary run exactly."""
    binary = SkipPolicy(max_p_silent=0.5)
    for step, ids, rewards in _steps(seed=2):
        binary.observe(step, ids, rewards, group_size=4)
    assert binary.skipped and not binary.scale.mismatch
    low = SkipPolicy(max_p_silent=0.5)
    said = (r"below threshold 1 \(rewards 0 to 0.7\), yet \d+ group\(s\) had rewards that differ: "
            r"every group is counted all-wrong")
    with pytest.warns(RuntimeWarning, match=said):
        for step, ids, rewards in _scaled(0.7):
            low.observe(step, ids, rewards, group_size=4)
    assert low.scale.mismatch and low.skipped == frozenset()
    assert low.forecaster.skip_list() == sorted({f"q{i}" for i in range(12)})  # what it would have skipped: all
    fitted = SkipPolicy(max_p_silent=0.5, threshold=0.7)
    for step, ids, rewards in _scaled(0.7):
        fitted.observe(step, ids, rewards, group_size=4)
    assert fitted.skipped == binary.skipped and not fitted.scale.mismatch
    above = SkipPolicy(max_p_silent=0.5)  # 1 (wrong) and 1.2 (right): every group all-correct
    with pytest.warns(RuntimeWarning, match="at or above threshold 1 .* counted all-correct"):
        for step, ids, rewards in _scaled(1.2, wrong=1.0):
            above.observe(step, ids, rewards, group_size=4)
    assert above.skipped == frozenset()
    metrics = SilentGroupMetrics(zero_std_atol=1e-8)
    with pytest.warns(RuntimeWarning, match="below threshold 1"):
        for step, ids, rewards in _scaled(0.7):
            metrics.step(step, ids, rewards, group_size=4)


def test_binary_rewards_never_meet_the_threshold_warning():
    """0/1 rewards at threshold 1: a group whose rewards differ holds a 1, so the warning's condition
    (rewards differ, none at or above the threshold) cannot hold, whatever the draws."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        policy = SkipPolicy()
        r = (rng.random(24) < rng.random()).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            policy.observe(1, [f"q{i // 4}" for i in range(24)], r, group_size=4)
        assert not policy.scale.mismatch
