"""Drift (issue 21 item 4): the observed-vs-pooled silent gap test is silent on stationary logs and fires on
drifting ones; the gate and the headline read what happened; a window's prediction lands on its observed rate.

Measured false-alarm rate (z ≥ 3.5 and gap ≥ 0.02): 0 of 1,000 stationary simulated logs (20–300 prompts,
2–40 steps, G ∈ {2, 4, 8, 16}; largest z 3.0), none of 200 logs whose logits move by 4 over the run missed;
``test_false_alarm_rate`` re-measures it on 200 logs every run.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.audits.drift import MIN_GAP, Z_DRIFT, Drift, current_window, drift_of, silent_gap
from sigmaudit.loaders.options import LoadedCounts, Window
from sigmaudit.loaders.window import cut
from sigmaudit.views.drift import message, worded


def _log(seed: int, prompts: int, steps: int, G: int, shift: float) -> pl.DataFrame:
    """Logged groups of a run whose prompts' logits move by ``shift`` in all from the first step to the last."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 2.0, prompts)
    t = np.arange(steps)[:, None] / max(steps - 1, 1)
    p = 1.0 / (1.0 + np.exp(-(theta[None, :] + shift * t)))
    k = rng.binomial(G, p)
    return pl.DataFrame({"step": np.repeat(np.arange(1, steps + 1), prompts),
                         "prompt": np.tile([f"q{i}" for i in range(prompts)], steps),
                         "n": np.full(steps * prompts, G), "k": k.ravel()})


def _loaded(groups: pl.DataFrame) -> LoadedCounts:
    pp = groups.group_by("prompt").agg(pl.col("n").sum(), pl.col("k").sum()).sort("prompt")
    return cut(LoadedCounts(per_prompt=pp, per_group=groups, layout="long", files=("sim",),
                            n_rows=int(pp["n"].sum()), missing_rewards=0, n_single_sample_prompts=0, notes=(),
                            reward_source="reward", has_steps=True))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), prompts=st.integers(20, 200), steps=st.integers(2, 30),
       G=st.sampled_from([2, 4, 8, 16]))
def test_stationary_logs_raise_no_drift(seed, prompts, steps, G):
    assert drift_of(_loaded(_log(seed, prompts, steps, G, 0.0))) is None


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), prompts=st.integers(60, 200), steps=st.integers(10, 30),
       G=st.sampled_from([4, 8, 16]))
def test_drifting_logs_raise_drift(seed, prompts, steps, G):
    loaded = _loaded(_log(seed, prompts, steps, G, 4.0))
    d = drift_of(loaded)
    assert d is not None and d.statistic >= Z_DRIFT and d.observed - d.predicted >= MIN_GAP
    assert d.message is None and d.window == loaded.window  # the audit returns numbers; views write the words
    assert message(d).startswith(f"warning: pass rates moved within steps 1–{steps}: ")
    groups = loaded.per_group
    assert d.observed == pytest.approx(float(((groups["k"] == 0) | (groups["k"] == groups["n"])).mean()))


def test_the_warning_is_written_from_the_drifts_numbers():
    d = Drift(13.849, 0.62345, 0.42655, 18000, Window(1, 60, 60))
    assert message(d) == (
        "warning: pass rates moved within steps 1–60: 62.3% of its 18,000 logged groups were silent, pooling "
        "each prompt's samples predicts 42.7% (z = 13.8); figures from pooled counts understate what happened: "
        "read the observed figures, or cut a window (--last-steps N) for the current difficulty")
    assert message(Drift(4.0, 0.5, 0.25, 1234, None)).startswith(
        "warning: pass rates moved within the log: 50.0% of its 1,234 logged groups were silent, pooling each "
        "prompt's samples predicts 25.0% (z = 4.0); ")
    assert worded(d).message == message(d) and worded(None) is None


def test_false_alarm_rate():
    rng = np.random.default_rng(7)
    fired = 0
    for i in range(200):
        obs, pred, z, _ = silent_gap(_log(i, int(rng.integers(20, 150)), int(rng.integers(2, 20)),
                                          int(rng.choice([2, 4, 8, 16])), 0.0))
        fired += z >= Z_DRIFT and obs - pred >= MIN_GAP
    assert fired <= 2  # ≤ 1 %; a normal tail at z = 3.5 alone is 0.02 %


def test_gap_matches_brute_force():
    """The pooled prediction is the hypergeometric chance each group's size drawn from its prompt's pooled
    answers agree, checked against counting subsets."""
    from itertools import combinations

    groups = pl.DataFrame({"step": [1, 2, 3, 1, 2], "prompt": ["a", "a", "a", "b", "b"], "n": [3, 3, 2, 2, 2],
                           "k": [3, 0, 1, 2, 1]})
    answers = {"a": [1, 1, 1, 0, 0, 0, 1, 0], "b": [1, 1, 1, 0]}
    want = []
    for prompt, n in zip(groups["prompt"], groups["n"], strict=True):
        subsets = list(combinations(answers[prompt], n))
        want.append(sum(len(set(s)) == 1 for s in subsets) / len(subsets))
    obs, pred, _, count = silent_gap(groups)
    assert count == 5 and obs == pytest.approx(3 / 5) and pred == pytest.approx(np.mean(want))


def test_current_window_is_the_last_tenth():
    loaded = _loaded(_log(1, 50, 60, 8, 4.0))
    now = current_window(loaded)
    assert (now.window.first_step, now.window.last_step, now.window.steps) == (55, 60, 6)
    assert now.window.asked == "--last-steps 6"
    short = _loaded(_log(1, 50, 4, 8, 4.0))
    assert current_window(short) is short


@pytest.fixture(scope="module")
def drift_log(tmp_path_factory):
    """The issue's log: ``sigmaudit simulate --prompts 500 --num-steps 100 --log-out drift.parquet``."""
    path = tmp_path_factory.mktemp("drift") / "drift.parquet"
    from sigmaudit.cli.app import main

    assert main(["simulate", "--prompts", "500", "--num-steps", "100", "--log-out", str(path), "-o",
                 str(path.with_suffix(".json"))]) == 0
    return str(path)


def _json(capsys, *args):
    code, out, err = run(capsys, *args, "-f", "json", "-q")
    return code, json.loads(out) if out.strip() else None


def test_the_gate_reads_what_happened(capsys, drift_log):
    code, d = _json(capsys, "check", drift_log, "--max-silent", "0.6", "--bootstrap", "0")
    assert code == 1 and d["basis"] == "observed" and d["checks"][0]["value"] == pytest.approx(0.72258)
    assert d["drift"] is not None and d["drift"]["statistic"] > 10
    code, d = _json(capsys, "check", drift_log, "--last-steps", "10", "--max-silent", "0.85", "--bootstrap", "0")
    assert code == 1 and d["checks"][0]["value"] == pytest.approx(0.9074) and d["drift"] is None
    assert d["window"] == {"first_step": 91, "last_step": 100, "steps": 10, "asked": "--last-steps 10"}
    code, d = _json(capsys, "check", drift_log, "--max-silent", "0.6", "--basis", "model", "--bootstrap", "0")
    assert code == 0 and d["basis"] == "model" and round(d["checks"][0]["value"], 4) == 0.4883
    code, d = _json(capsys, "check", drift_log, "--max-silent", "0.8", "--consecutive", "5", "--bootstrap", "0")
    assert code == 1 and d["checks"][0]["tested"] == pytest.approx(0.898)
    code, d = _json(capsys, "check", drift_log, "--max-silent", "0.95", "--consecutive", "5", "--bootstrap", "0")
    assert code == 0


def test_the_report_page_says_the_pass_rates_moved(capsys, drift_log, tmp_path):
    """The HTML report showed only a post-filter warning: the drift line was in its JSON, never on the page."""
    page = tmp_path / "r.html"
    code, _, _ = run(capsys, "report", drift_log, "-o", str(page), "-q")
    html = page.read_text(encoding="utf-8")
    assert code == 0 and html.count('<p class="warn">') == 1
    assert ('<p class="warn"><b>Warning:</b> pass rates moved within steps 1–100: 72.3% of its 50,000 logged '
            "groups were silent, pooling each prompt&#x27;s samples predicts 48.8% (z = ") in html
    code, _, _ = run(capsys, "report", drift_log, "--last-steps", "10", "-o", str(page), "-q")
    assert code == 0 and '<p class="warn">' not in page.read_text(encoding="utf-8")


def test_observed_basis_refused_where_it_cannot_be(capsys, drift_log):
    code, _, err = run(capsys, "check", drift_log, "-G", "16", "--max-silent", "0.6", "--basis", "observed", "-q")
    assert code == 2 and "which have G = 8, not 16" in err
    code, d = _json(capsys, "check", drift_log, "-G", "16", "--max-silent", "0.6", "--bootstrap", "0")
    assert code == 0 and d["basis"] == "model"


def test_headline_is_observed_and_a_window_prediction_lands_on_it(capsys, drift_log):
    code, whole = _json(capsys, "scan", drift_log, "-G", "8")
    w = whole["wasted"]
    assert w["basis"] == "observed" and w["silent_rollout_share"] == pytest.approx(0.72258)
    assert round(w["predicted"], 4) == 0.4883 and whole["drift"]["observed"] == pytest.approx(0.72258)
    assert list(whole["drift"]) == ["statistic", "message", "observed", "predicted", "groups"]
    assert whole["drift"]["message"].startswith("warning: pass rates moved within steps 1–100: 72.3% of its "
                                                "50,000 logged groups were silent, pooling each prompt's samples "
                                                "predicts 48.8% (z = ")
    _, table, _ = run(capsys, "scan", drift_log, "-G", "8", "-q", "-f", "markdown")
    assert whole["drift"]["message"] in table
    import sigmaudit
    assert sigmaudit.scan(drift_log, G=[8]).to_dict()["drift"] == whole["drift"]
    assert len(whole["observed_silent"]["by_step"]) == 100
    code, last = _json(capsys, "scan", drift_log, "-G", "8", "--last-steps", "10")
    o = last["observed_silent"]
    assert last["drift"] is None and abs(last["silent"][0]["estimate"] - o["fraction"]) < 0.01
    for step in (1, 50):
        code, win = _json(capsys, "scan", drift_log, "-G", "8", "--steps", f"{step}:{step + 4}")
        assert abs(win["silent"][0]["estimate"] - win["observed_silent"]["fraction"]) < 0.02
