"""Issue 33 item 4: labels that say what they mean. The summary's extreme-band share at the scan's G (the
G → ∞ limit labelled in the full view); an informative group-size line instead of "G = 8 meets 0 of N"
(every φ at G = 8 is below 0.95); the large-G attenuation flagged outside its range, not printed; what
"silent" means with a KL loss or an entropy bonus. Checked against direct binomial sums."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run

from sigmaudit.core.fidelity import ATTENUATION_RANGE, attenuation, attenuation_in_range

ROOT = Path(__file__).resolve().parents[1]
ROLLOUTS = ROOT / "sample_logs" / "rollouts.parquet"


def phi(p: float, G: int) -> float:
    """Fidelity by the binomial sum, written out (independent of sigmaudit.core.fidelity)."""
    es = sum(math.comb(G, k) * p**k * (1 - p) ** (G - k) * math.sqrt(k * (G - k)) / G for k in range(G + 1))
    return es / math.sqrt(p * (1 - p))


@pytest.mark.parametrize("p", [0.5, 0.3, 0.1])
def test_the_attenuation_series_second_term(p):
    """φ = 1 − 1/(8Gv) − (7 − 16v)/(128 G² v²) + O(1/(Gv)³): the remainder after two terms, times G², tends
    to the second coefficient (docs/theory.md's derivation)."""
    v = p * (1 - p)
    want = -(7 - 16 * v) / (128 * v * v)
    got = [(phi(p, G) - (1 - 1 / (8 * G * v))) * G * G for G in (400, 800)]
    assert got[1] == pytest.approx(want, rel=0.02)
    assert abs(got[1] - want) < abs(got[0] - want)  # converging


def test_attenuation_range_is_where_the_next_term_is_smaller():
    """In range exactly where |second term| < |first correction| (brute force over a grid)."""
    assert ATTENUATION_RANGE == 7 / 16
    for p in np.linspace(0.005, 0.995, 67):
        v = p * (1 - p)
        for G in (1, 2, 3, 4, 6, 8, 16, 32, 64, 256):
            first, second = 1 / (8 * G * v), (7 - 16 * v) / (128 * G * G * v * v)
            if abs(abs(second) - first) > 1e-12:
                assert attenuation_in_range(p, G) == (abs(second) < first), (p, G)
    # every negative attenuation (an impossible fidelity) is out of range
    for p in np.linspace(0.001, 0.999, 200):
        for G in range(1, 40):
            if attenuation(p, G) < 0:
                assert not attenuation_in_range(p, G)


def test_calc_flags_the_attenuation_outside_its_range(capsys):
    code, out, _ = run(capsys, "calc", "-p", "0.05", "-G", "2", "-f", "json")
    (r,) = json.loads(out)["results"]
    assert code == 0 and r["attenuation"] is None and r["attenuation_in_range"] is False
    assert r["fidelity"] == pytest.approx(phi(0.05, 2), abs=1e-12)  # 0.2179: the figure to read
    code, out, _ = run(capsys, "calc", "-p", "0.05", "-G", "2")
    assert "outside its range" in out and "-0.3158" not in out and "−0.3158" not in out
    code, out, _ = run(capsys, "calc", "-p", "0.3", "-G", "16", "-f", "json")
    (r,) = json.loads(out)["results"]
    assert r["attenuation_in_range"] is True
    assert r["attenuation"] == pytest.approx(1 - 1 / (8 * 16 * 0.21), abs=1e-12)


def _scan(capsys, *extra: str) -> tuple[dict, list[str]]:
    code, out, err = run(capsys, "scan", str(ROLLOUTS), "-f", "json", *extra)
    assert code == 0, err
    code, summary, err = run(capsys, "scan", str(ROLLOUTS), "--summary", *extra)
    assert code == 0, err
    return json.loads(out), summary.splitlines()


def test_summary_extreme_band_share_is_at_the_logged_G(capsys):
    d, lines = _scan(capsys)
    m = d["mass_share"]
    (line,) = [x for x in lines if x.startswith("share of the gradient signal from prompts near p = 0 or 1")]
    assert m["G"] == 8 and "at G = 8" in line
    assert f"GRPO {100 * m['grpo_finite']['extreme']:.1f}%" in line
    assert f"{100 * m['grpo']['extreme']:.1f}%" not in line  # the limit (18.8 %) is the full view's
    assert m["grpo_finite"]["extreme"] < m["grpo"]["extreme"] / 1.5
    code, full, _ = run(capsys, "scan", str(ROLLOUTS), "--full")
    assert "GRPO G→∞" in full and "GRPO G=8" in full


def test_summary_group_size_line_is_informative_where_no_prompt_can_meet_the_need(capsys):
    """At G = 8 no prompt reaches φ ≥ 0.95 (φ ≤ φ(1/2, 8) = 0.9278): the line says so and gives the φ at
    the quartiles and the median prompt's need, instead of "meets 0 of 200"."""
    d, lines = _scan(capsys)
    (line,) = [x for x in lines if x.startswith("per-prompt fidelity φ ≥ 0.95 (not G at a budget)")]
    assert "meets 0 of" not in line and "out of reach at G = 8" in line
    assert f"{phi(0.5, 8):.4f}" in line and f"{phi(0.5, 8):.4f}" == "0.9278"
    qs = d["group_size"]["quantiles"]
    for q in qs:
        assert q["fidelity"] == pytest.approx(phi(q["p_hat"], 8), abs=1e-12)
        assert f"{q['fidelity']:.4f}" in line
    need = next(G for G in range(1, 200) if phi(qs[1]["p_hat"], G) >= 0.95)
    assert line.endswith(f"the median prompt needs G = {need}")


def test_summary_group_size_line_counts_the_prompts_met_where_some_are(capsys):
    d, lines = _scan(capsys, "--g-main", "16")
    (line,) = [x for x in lines if x.startswith("per-prompt fidelity φ ≥ 0.95 (not G at a budget)")]
    import polars as pl

    df = pl.read_parquet(ROLLOUTS).group_by("prompt_id").agg(pl.len().alias("n"), pl.col("reward").sum().alias("k"))
    met = sum(1 for n, k in zip(df["n"], df["k"], strict=True) if 0 < k < n and phi(k / n, 16) >= 0.95)
    assert met > 0 and f"G = 16 meets {met:,} of {df.height:,} prompts" in line


def test_scan_says_what_silent_means_with_kl_or_entropy(capsys):
    code, out, _ = run(capsys, "scan", str(ROLLOUTS), "-f", "markdown")
    words = " ".join(out.split())
    assert code == 0 and "no advantage gradient, not no gradient" in words and "entropy bonus" in words


def test_forecast_says_its_model_in_words_and_shows_a_tie_once(capsys, monkeypatch):
    """Issue 42 item 5: forecast's "model: corpus prior (beta+atoms/1)" is said in words; its 25 identical top rows
    (the never-solved prompts, each 20 visits of k = 0) are one row naming how many prompts tie."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run(capsys, "forecast", str(ROLLOUTS), "-f", "json", "-q")
    assert code == 0, err
    rows = json.loads(out)["per_prompt"]
    values = [tuple(v for k, v in row.items() if k != "prompt") for row in rows]
    run_length = next(i for i, v in enumerate(values) if v != values[0])
    assert run_length == 42  # the 42 never-solved prompts (21.0 % of 200), every cell but the key equal
    code, out, _ = run(capsys, "forecast", str(ROLLOUTS), "-q", "--full")
    assert "beta+atoms" not in out and "corpus prior (" not in out
    assert "model: a prior fitted to all prompts (a Beta plus point masses at p = 0 and 1)" in out
    assert out.count(rows[0]["prompt"]) == 1 and f"{rows[0]['prompt']} +{run_length - 1} tied" in out
    assert rows[1]["prompt"] not in out and "KEY +N tied: N more prompts with the same values" in out


def test_tied_rows_groups_only_equal_runs():
    from sigmaudit.views.forecast import tied_rows

    rows = [("a", 1, 0.5), ("b", 1, 0.5), ("c", 1, 0.4), ("d", 2, 0.4), ("e", 2, 0.4), ("f", 3, 0.1)]
    assert tied_rows(rows, 3) == ((("a +1 tied", 1, 0.5), ("c", 1, 0.4)), [2, 1])
    assert tied_rows(rows, 4) == ((("a +1 tied", 1, 0.5), ("c", 1, 0.4), ("d +1 tied", 2, 0.4)), [2, 1, 2])
    assert tied_rows(rows, 100)[1] == [2, 1, 2, 1] and tied_rows([], 5) == ((), [])


def _few_prompts_log(tmp_path: Path) -> Path:
    """6 prompts × 3 steps × 4 samples: the bootstrap interval of the model's silent rate is wide."""
    rng = np.random.default_rng(1)
    rows = ["step,prompt,reward"]
    for step in range(1, 4):
        for j, q in enumerate((0.05, 0.3, 0.5, 0.6, 0.9, 0.97)):
            rows += [f"{step},p{j},{int(rng.random() < q)}" for _ in range(4)]
    path = tmp_path / "few.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_check_warns_only_of_an_interval_its_table_shows(capsys, monkeypatch, tmp_path):
    """Issue 42 item 5: check's table showed no interval for the observed silent share ("—") while a warning above
    it quoted the model's "90% interval [...] is wide"; the warning now quotes only intervals the table shows."""
    monkeypatch.setenv("COLUMNS", "200")
    log = str(_few_prompts_log(tmp_path))
    code, out, _ = run(capsys, "check", log, "--max-silent", "0.9", "--min-fidelity", "0.1", "-f", "json", "-q")
    d = json.loads(out)
    checks = {c["name"]: c for c in d["checks"]}
    assert checks["silent_rate"]["estimator"] == "observed" and checks["silent_rate"]["value_ci"] is None
    assert not any(w.startswith("silent_rate at G") for w in d["warnings"])
    code, model, _ = run(capsys, "check", log, "--max-silent", "0.9", "--basis", "model", "-f", "json", "-q")
    (m,) = json.loads(model)["checks"]
    lo, hi = m["value_ci"]
    wide = f"silent_rate at G = 4: the 90% interval [{lo:.3g}, {hi:.3g}] is wide"
    assert hi - lo > 0.3 and any(w.startswith(wide) for w in json.loads(model)["warnings"])


def test_check_says_how_values_are_estimated_in_words(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    log = str(_few_prompts_log(tmp_path))
    code, out, _ = run(capsys, "check", log, "--max-silent", "0.9", "--min-fidelity", "0.1", "-q", "-f", "markdown")
    assert "estimator rule:" not in out and "never solved: posterior" not in out
    assert ("how values are estimated (--estimator auto): silent shares observed (the logged groups); fidelity from "
            "each prompt's posterior (the corpus prior updated by its counts); interval: bootstrap over prompts, 200 "
            "resamples; the gate tests the point estimate") in out
    code, out, _ = run(capsys, "check", log, "--max-silent", "0.9", "-q", "-f", "markdown")
    assert "how values are estimated" in out and "fidelity" not in out  # only the checks it ran


def test_one_casing_for_warnings(capsys, monkeypatch):
    """Issue 42 item 5: warnings began "WARNING:" (drift, post-filter dumps, DAPO's loop) in some views and
    "warning:" in others; every one starts with views.labels.WARNING ("warning: ") now."""
    from sigmaudit.views.labels import WARNING

    assert WARNING == "warning: "
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "sigmaudit").rglob("*.py"))
    assert not re.search(r"""f?["']WARNING\b""", sources)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "scan", str(ROOT / "sample_logs" / "open-instruct"), "-q", "--full")
    assert "WARNING" not in out and "│ warning: post-filter dump (structure)" in out
