"""Issue 35 item 4: one identification rule for every command. n ≥ G needs no moment check (the unbiased
estimate exists); a thin corpus's range comes from the joint confidence region of its moments, not a box of
3 SE on each; logs of 2 or 3 samples per prompt are audited by scan, plan and report at the G they determine,
with a note naming the sizes left out. The logs are long csv files as an eval script writes them (``prompt,
reward`` per sample, Python's csv module)."""

from __future__ import annotations

import csv
import json
from math import comb

import numpy as np
import pytest
from cli_runner import run
from scipy.optimize import linprog

from sigmaudit.core.corpus import Corpus
from sigmaudit.core.identify import NotIdentifiedError, moment_covariance, silent_interval


def _write(path, k_rows):
    """One row per sample: prompt ``q{i}`` with k right answers of n."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "reward"])
        for i, (n, k) in enumerate(k_rows):
            w.writerows([f"q{i}", int(j < k)] for j in range(n))
    return path


def _thin(n: int, prompts: int = 200, seed: int = 4) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.35, 0.35, prompts)
    return [(n, int(k)) for k in rng.binomial(n, p)]


def test_two_samples_per_prompt_scan_answers_at_g2(tmp_path, capsys):
    """200 prompts x 2 samples: scan refused ("log at least 4 samples per prompt (2 for the unbiased
    estimate)") although the unbiased estimate at G = 2 exists: the share of prompts whose two answers agree,
    with SE sqrt(s(1 − s)/200)."""
    rows = _thin(2)
    log = _write(tmp_path / "two.csv", rows)
    agree = float(np.mean([k in (0, 2) for _, k in rows]))
    code, out, err = run(capsys, "scan", str(log), "-f", "json")
    assert code == 0, err
    scan = json.loads(out)
    assert [r["G"] for r in scan["silent"]] == [2]
    row = scan["silent"][0]
    assert row["estimator"] == "unbiased" and row["estimate"] == pytest.approx(agree, abs=1e-12)
    assert scan["wasted"]["G"] == 2
    assert any(n.startswith("G = 4, 8, 16, 32, 64 left out: not identified by these logs") for n in scan["notes"])
    code, out, _ = run(capsys, "scan", str(log), "--bootstrap", "400", "-f", "json")
    lo, hi = json.loads(out)["silent"][0]["estimate_ci"]
    se = np.sqrt(agree * (1 - agree) / len(rows))
    assert hi - lo == pytest.approx(2 * 1.645 * se, rel=0.25)  # the 90% interval of a share of 200
    code, out, _ = run(capsys, "scan", str(log))
    assert code == 0 and "left out: not identified by these logs" in out
    code, _, err = run(capsys, "scan", str(log), "-G", "8")  # asked for outright: still refused, with the range
    assert code == 2 and "not identified" in err
    code, _, err = run(capsys, "check", str(log), "-G", "2", "--max-silent", str(agree + 0.01), "-q")
    assert code == 0, err


def test_three_samples_per_prompt_scan_shows_g2_and_g3(tmp_path, capsys):
    rows = _thin(3, seed=5)
    log = _write(tmp_path / "three.csv", rows)
    code, out, err = run(capsys, "scan", str(log), "-f", "json")
    assert code == 0, err
    scan = json.loads(out)
    want = {g: np.mean([(comb(k, g) + comb(n - k, g)) / comb(n, g) for n, k in rows]) for g in (2, 3)}
    assert {r["G"]: r["estimate"] for r in scan["silent"]} == pytest.approx(want, abs=1e-12)
    assert scan["wasted"]["G"] == 3


@pytest.mark.parametrize("n", [2, 3])
def test_plan_and_report_audit_thin_logs(tmp_path, capsys, n):
    log = _write(tmp_path / "thin.csv", _thin(n, seed=6))
    code, out, err = run(capsys, "plan", str(log), "-f", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert max(r["G"] for r in plan["sweep"]) == n and plan["recommended_G"] <= n
    assert any("left out: not identified by these logs" in w for w in plan["warnings"])
    code, _, err = run(capsys, "report", str(log), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    assert "left out: not identified by these logs" in (tmp_path / "r.html").read_text()


def test_n_at_least_g_needs_no_moment_check():
    """A thin corpus (2 samples per prompt) at G = 2: the model-based figure is not refused; the unbiased one
    is the agreeing share."""
    n = np.full(500, 2)
    k = np.random.default_rng(7).binomial(2, 0.4, 500)
    corpus = Corpus(n, k)
    assert corpus.silent(2, "bayes").silent_rate is not None
    assert corpus.silent(2, "unbiased").silent_rate == pytest.approx(np.mean((k == 0) | (k == 2)), abs=1e-12)
    with pytest.raises(NotIdentifiedError):
        corpus.silent(8, "bayes")


def test_moment_covariance_matches_the_sample_covariance():
    """Every prompt with n ≥ 3: the covariance of the three moment estimates is the sample covariance of the
    prompts' unbiased powers over the prompt count."""
    rng = np.random.default_rng(8)
    k = rng.binomial(3, rng.beta(0.5, 0.5, 400))
    n = np.full(400, 3)
    u = np.column_stack([k / 3, k * (k - 1) / 6, k * (k - 1) * (k - 2) / 6])
    means, cov = moment_covariance(n, k, np.ones(400))
    assert means == pytest.approx(u.mean(axis=0), abs=1e-12)
    assert cov == pytest.approx(np.cov(u.T) / 400, abs=1e-12)


def _inner(f, grid, mu):
    """min and max of Σ q f over distributions q on the grid with moments exactly ``mu`` (None if none)."""
    a_eq = np.vstack([np.ones_like(grid), *[grid ** (m + 1) for m in range(mu.size)]])
    out = []
    for sign in (1, -1):
        res = linprog(sign * f, A_eq=a_eq, b_eq=np.concatenate([[1.0], mu]), bounds=(0, None), method="highs")
        if not res.success:
            return None
        out.append(sign * res.fun)
    return out


def test_the_range_is_the_joint_regions_by_brute_force():
    """Two samples per prompt (two moments): the range equals the extremes of the exact-moment range over points
    of the ellipsoid (its boundary, 24 directions, and its centre), each solved on its own."""
    rng = np.random.default_rng(9)
    k = rng.binomial(2, rng.beta(0.5, 0.8, 3000))
    n, w, G = np.full(k.size, 2), np.ones(k.size), 6
    lo, hi = silent_interval(n, k, w, G)
    means, cov = moment_covariance(n, k, w)
    radius = np.sqrt(-2 * np.log(1 - 0.9973002039367398))  # χ² with 2 degrees of freedom
    chol = np.linalg.cholesky(cov)
    grid = np.linspace(0, 1, 2001)
    f = grid**G + (1 - grid) ** G
    ends = [e for t in np.linspace(0, 2 * np.pi, 24, endpoint=False)
            if (e := _inner(f, grid, means + radius * chol @ np.array([np.cos(t), np.sin(t)]))) is not None]
    ends.append(_inner(f, grid, means))
    assert lo <= min(e[0] for e in ends) + 1e-6 and hi >= max(e[1] for e in ends) - 1e-6
    assert lo == pytest.approx(min(e[0] for e in ends), abs=0.01)
    assert hi == pytest.approx(max(e[1] for e in ends), abs=0.01)


def test_the_joint_range_covers_the_truth_and_is_narrower_than_the_box():
    """6 corpora of 1,000 prompts x 3 samples, Beta(0.5, 0.8) pass rates, G = 6: the realised silent rate lies in
    every range (coverage 99.7% by construction), and the joint range is narrower than the old one (a box of
    ±3 SE on each moment, computed here as it was)."""
    rng = np.random.default_rng(10)
    grid = np.linspace(0, 1, 2001)
    f = grid**6 + (1 - grid) ** 6
    powers = np.vstack([grid, grid**2, grid**3])
    narrower = 0
    for _ in range(6):
        p = rng.beta(0.5, 0.8, 1000)
        k = rng.binomial(3, p)
        n, w = np.full(k.size, 3), np.ones(k.size)
        lo, hi = silent_interval(n, k, w, 6)
        truth = float(np.mean(p**6 + (1 - p) ** 6))
        assert lo - 1e-9 <= truth <= hi + 1e-9
        means, cov = moment_covariance(n, k, w)
        slack = 3 * np.sqrt(np.diag(cov)) + 1e-9
        box = [sign * linprog(sign * f, A_ub=np.vstack([powers, -powers]), b_ub=np.concatenate([means + slack,
                                                                                               slack - means]),
                              A_eq=np.ones((1, grid.size)), b_eq=[1.0], bounds=(0, None), method="highs").fun
               for sign in (1, -1)]
        narrower += (hi - lo) < (box[1] - box[0]) - 1e-6
    assert narrower == 6


def test_the_python_api_follows_the_same_rule(tmp_path):
    import sigmaudit

    rows = _thin(2, seed=11)
    log = _write(tmp_path / "two.csv", rows)
    report = sigmaudit.scan(str(log))
    assert [s.G for s in report.silent] == [2] and report.wasted.G == 2
    assert report.silent[0].estimate == pytest.approx(np.mean([k in (0, 2) for _, k in rows]), abs=1e-12)
    with pytest.raises(Exception, match="not identified"):
        sigmaudit.scan(str(log), G=[8])


def _ppo_dump(folder, steps=3, prompts=256, seed=1):
    """verl ``_dump_generations`` (volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7,
    verl/trainer/ppo/ray_trainer.py: ``{rollout_data_dir}/{global_steps}.jsonl``, keys input, output, gts, score,
    step) of a PPO run: one sample per prompt, each prompt drawn once."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    for step in range(1, steps + 1):
        lines = [json.dumps({"input": f"q{step}-{i}", "output": "a", "gts": "1", "score": float(rng.random() < p),
                             "step": step}) for i, p in enumerate(rng.random(prompts))]
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_check_on_a_one_sample_per_prompt_log_refuses_as_scan_and_plan_do(tmp_path, capsys):
    """Issue 43, n = 1 logs: check gated "at G = 1" and failed at 1.0 (a group of one sample is always silent)
    where scan and plan refuse; now one line, exit 2, plan's words, nothing on stdout."""
    dump = _ppo_dump(tmp_path / "rollout_data")
    _, _, plan_err = run(capsys, "plan", str(dump), "-q")
    for extra in ((), ("-G", "1")):
        code, out, err = run(capsys, "check", str(dump), "--max-silent", "0.5", "-q", *extra)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert err == plan_err
        assert "the silent rate at G = 2 is not identified by these logs: 768 prompts with a median of 1 sample" in err


def test_check_at_one_sample_per_group_of_a_rich_log_names_g(tmp_path, capsys):
    """Prompts drawn at many steps, one sample each time: G = 2 is determined, G = 1 still says nothing."""
    path = tmp_path / "x.csv"
    rng = np.random.default_rng(2)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", "prompt", "reward"])
        w.writerows([s, f"q{i}", int(rng.random() < (i + 0.5) / 40)] for s in range(8) for i in range(40))
    code, out, err = run(capsys, "check", str(path), "--max-silent", "0.5", "-q")
    assert code == 2 and out == ""
    assert "error: -G/--group-size: a group of G = 1 sample is silent whatever the pass rates" in err
    assert "(the logged group size: one sample per prompt per step); give the run's group size, e.g. -G 8" in err
