"""The bounded Newton minimiser of the prior fits (core/optimize.py) against scipy's L-BFGS-B, the
optimiser it replaced: on random corpora (hypothesis) and on real ones (the sample logs, the
published pass-rate files in tests/data/real) its negative log-likelihood is
never above L-BFGS-B's from the same start and box (up to 1e-9 · |nll|), and the corpus prior
chosen by AIC is the same kind."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from sigmaudit.core.optimize import minimize_box
from sigmaudit.core.prior import (
    AtomsBetaObjective,
    GridPrior,
    _choose_by_aic,
    _minimize_from_starts,
    _pairs,
    _scaled_lik,
    atoms_beta_prior,
    default_grid,
    fit_corpus_prior,
    fit_smooth_prior,
    resolution_bandwidth,
    smooth_effective_parameters,
    smoothing_matrix,
    thin_pairs,
)

ROOT = Path(__file__).resolve().parents[1]
REAL = Path(__file__).parent / "data" / "real"
SAMPLES = ["sample_logs/counts.csv", "sample_logs/long.csv", "sample_logs/rollouts.parquet",
           "sample_logs/grouped.parquet", "sample_logs/verl", "sample_logs/verl-v1", "sample_logs/areal",
           "sample_logs/nemo-rl", "sample_logs/open-instruct", "sample_logs/prime-rl", "sample_logs/roll",
           "sample_logs/skyrl", "sample_logs/trl", "sample_logs/inspect_ai"]
"""Every sample log with per-prompt counts (dapo_fig3b is a series, lm-eval has no k of n)."""


def _thinned(n, k, c):
    return thin_pairs(*_pairs(n, k, c))


def _lbfgsb(objective: AtomsBetaObjective):
    lo, hi = objective.bounds()
    return minimize(objective.nll, objective.start(), method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)))


def _scipy_kind(n, k, c) -> str:
    """fit_corpus_prior's choice (AIC) with the Beta-plus-atoms candidates fitted by L-BFGS-B (the code before)."""
    g = default_grid()
    lik, shift = _scaled_lik(n, k, g)
    fits = []
    for components in (1, 2):
        objective = AtomsBetaObjective(n, k, c, components)
        candidate, _ = atoms_beta_prior(objective, _lbfgsb(objective).x, 0, g, (lik, shift))
        fits.append((candidate, 1.0 + 3.0 * components))
    h = resolution_bandwidth(n, c)
    w, _ = fit_smooth_prior(lik, c, smoothing_matrix(g, h))
    smooth = GridPrior(g, w, 0, float(c @ (np.log(lik @ w) + shift[:, 0])), "smooth-grid", bandwidth=h)
    fits.append((smooth, smooth_effective_parameters(lik, c, w, h, g)))
    return _choose_by_aic(fits).kind


def _assert_not_worse(n, k, c):
    for components in (1, 2):
        objective = AtomsBetaObjective(n, k, c, components)
        ref = _lbfgsb(objective)
        lo, hi = objective.bounds()
        ours = _minimize_from_starts(objective)
        assert np.all(ours.x >= lo) and np.all(ours.x <= hi)
        assert ours.fun == pytest.approx(objective.nll(ours.x), rel=1e-12)
        assert ours.fun <= ref.fun + 1e-9 * abs(ref.fun), (components, ours.fun, ref.fun, ours.x, ref.x)


@cache
def _real_corpora() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    import polars as pl

    import sigmaudit
    from sigmaudit.audits import corpus_of

    out = {}
    for path in SAMPLES:
        corpus = corpus_of(sigmaudit.load_counts([ROOT / path]))
        out[path] = (corpus.n, corpus.k, corpus.weight)
    if REAL.is_dir():
        for name in ("cruxeval_codellama7b_t0.2_input_n10.csv", "cruxeval_codellama7b_t0.2_output_n10.csv"):
            d = pl.read_csv(REAL / name).group_by("problem_id").agg(pl.len().alias("n"),
                                                                    pl.col("correct").sum().alias("k"))
            out[name] = (d["n"].to_numpy(), d["k"].to_numpy(), np.ones(d.height))
        rates = pl.read_csv(REAL / "evalperf_per_task_pass_rates.csv")
        for (run,), d in sorted(rates.group_by("run"), key=lambda kv: str(kv[0]))[:2]:
            out[f"evalperf {run}"] = (d["n_samples"].to_numpy(), d["n_correct"].to_numpy(), np.ones(d.height))
        aime = pl.read_csv(REAL / "pika_aime_1983_2024_pass_rates.csv")
        for (model,), d in sorted(aime.group_by("model"), key=lambda kv: str(kv[0])):
            out[f"aime {model}"] = (d["n_samples"].to_numpy(), d["n_correct"].to_numpy(), np.ones(d.height))
    return out


def _named(name: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The thinned corpus of one sample log, or (``real``) every real data set; skips when there are none."""
    corpora = _real_corpora()
    names = [m for m in corpora if m not in SAMPLES] if name == "real" else [name]
    if not names:
        pytest.skip("no real corpora")
    return {m: _thinned(*corpora[m]) for m in names}


@pytest.mark.parametrize("name", [*SAMPLES, "real"])
def test_real_corpora_not_worse_and_same_choice(name):
    for m, (n, k, c) in _named(name).items():
        _assert_not_worse(n, k, c)
        assert fit_corpus_prior(n, k, c).kind == _scipy_kind(n, k, c), m


def _mixture_corpus(seed: int, prompts: int, n_max: int, w0: float, w1: float, a: float, b: float, a2: float, b2: float,
                    v2: float):
    rng = np.random.default_rng(seed)
    u = rng.random(prompts)
    second = rng.random(prompts) < v2
    p = np.where(second, rng.beta(a2, b2, prompts), rng.beta(a, b, prompts))
    p = np.where(u < w0, 0.0, np.where(u < w0 + w1, 1.0, p))
    n = rng.integers(1, n_max + 1, prompts) if rng.random() < 0.5 else np.full(prompts, n_max)
    return n, rng.binomial(n, p)


shape = st.floats(0.02, 50.0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(seed=st.integers(0, 2**31), prompts=st.integers(5, 1500), n_max=st.sampled_from([1, 2, 4, 8, 16, 64, 300]),
       w0=st.floats(0.0, 0.6), w1=st.floats(0.0, 0.4), a=shape, b=shape, a2=shape, b2=shape, v2=st.floats(0.0, 0.7))
@example(seed=2266, prompts=215, n_max=64, w0=0.484375, w1=0.296875, a=50.0, b=49.0, a2=0.625, b2=5.0, v2=0.0)
def test_random_corpora_not_worse(seed, prompts, n_max, w0, w1, a, b, a2, b2, v2):
    n, k = _mixture_corpus(seed, prompts, n_max, w0, w1, a, b, a2, b2, v2)
    _assert_not_worse(*_thinned(n, k, None))


@pytest.mark.parametrize("seed", range(6))
def test_random_corpora_same_choice(seed):
    rng = np.random.default_rng(1000 + seed)
    n, k = _mixture_corpus(seed, int(rng.integers(200, 5000)), int(rng.choice([4, 8, 16, 64])), rng.uniform(0, 0.5),
                           rng.uniform(0, 0.3), *np.exp(rng.uniform(-1.5, 2.5, 4)), rng.uniform(0, 0.6))
    n_u, k_u, c_u = _thinned(n, k, None)
    assert fit_corpus_prior(n_u, k_u, c_u).kind == _scipy_kind(n_u, k_u, c_u)


def test_minimize_box_on_a_quadratic_with_active_bounds():
    """min (x − t)ᵀ A (x − t) over [0, 1]³ with t outside the box: the exact constrained optimum
    (found by brute force over the faces) and its active set."""
    A = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])
    t = np.array([-0.5, 0.4, 1.7])

    def fg(x):
        d = x - t
        return float(d @ A @ d), 2.0 * A @ d

    fit = minimize_box(fg, np.array([0.9, 0.9, 0.1]), np.zeros(3), np.ones(3))
    grid = np.linspace(0.0, 1.0, 201)
    best = min(fg(np.array([0.0, y, 1.0]))[0] for y in grid)
    assert fit.x[0] == 0.0 and fit.x[2] == 1.0
    assert fit.fun <= best + 1e-12
    # the free coordinate: d/dy = 0 with x0 = 0, x2 = 1
    y = t[1] - (A[1, 0] * (0.0 - t[0]) + A[1, 2] * (1.0 - t[2])) / A[1, 1]
    assert fit.x[1] == pytest.approx(y, abs=1e-9)


def test_minimize_box_rosenbrock_interior():
    def fg(x):
        f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
        return float(f), g

    fit = minimize_box(fg, np.array([-1.2, 1.0]), np.full(2, -5.0), np.full(2, 5.0))
    np.testing.assert_allclose(fit.x, [1.0, 1.0], atol=1e-7)


def _central(fun, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences of a (vector-valued) function, column i = d/dx_i."""
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h * max(1.0, abs(x[i]))
        cols.append((np.asarray(fun(x + e)) - np.asarray(fun(x - e))) / (2.0 * e[i]))
    return np.stack(cols, axis=-1)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), prompts=st.integers(5, 800), n_max=st.sampled_from([1, 2, 8, 64, 300]),
       components=st.sampled_from([1, 2]), jitter=st.floats(0.0, 2.0))
def test_exact_hessian_and_gradient_against_central_differences(seed, prompts, n_max, components, jitter):
    """nll_grad against central differences of nll, nll_hessian against central differences of
    nll_grad, at random parameters (inside the box) of random mixture corpora."""
    rng = np.random.default_rng(seed)
    n, k = _mixture_corpus(seed, prompts, n_max, 0.2, 0.1, 0.7, 1.5, 4.0, 0.5, 0.3)
    objective = AtomsBetaObjective(*_thinned(n, k, None), components)
    theta = objective.start() + rng.normal(0.0, jitter, objective.start().size)
    f, g = objective.nll_grad(theta)
    H = objective.nll_hessian(theta)
    assert H is not None and np.array_equal(H, H.T)
    scale = max(1.0, abs(f))
    np.testing.assert_allclose(g, _central(objective.nll, theta), rtol=1e-6, atol=1e-7 * scale)
    numeric = _central(lambda x: objective.nll_grad(x)[1], theta)
    np.testing.assert_allclose(H, 0.5 * (numeric + numeric.T), rtol=1e-5, atol=1e-6 * np.abs(H).max())


def test_exact_hessian_is_none_past_the_rising_sums_and_the_fit_falls_back(monkeypatch):
    """Above _RISING_MAX samples a prompt's beta-binomial terms are log-gammas: no exact Hessian, and
    minimize_box takes forward differences instead (same optimum as with L-BFGS-B). The threshold is
    lowered to 50 here so that the log-gamma path runs on small arrays."""
    import sigmaudit.core.prior as prior_mod

    monkeypatch.setattr(prior_mod, "_RISING_MAX", 50)
    n = np.array([64, 40, 40, 40, 12, 60, 64])
    k = np.array([21, 0, 40, 17, 5, 60, 3])
    objective = AtomsBetaObjective(n, k, np.ones(n.size), 1)
    assert objective.nll_hessian(objective.start()) is None
    _assert_not_worse(n, k, np.ones(n.size))


def test_minimize_box_with_an_exact_hessian_rosenbrock():
    def fg(x):
        f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
        return float(f), g

    def hess(x):
        return np.array([[2 - 400 * (x[1] - 3 * x[0] ** 2), -400 * x[0]], [-400 * x[0], 200.0]])

    fit = minimize_box(fg, np.array([-1.2, 1.0]), np.full(2, -5.0), np.full(2, 5.0), hessian=hess)
    np.testing.assert_allclose(fit.x, [1.0, 1.0], atol=1e-7)
    assert fit.nit < 40


@pytest.mark.parametrize("name", [*SAMPLES, "real"])
def test_the_pace_rule_keeps_the_optimum(name, monkeypatch):
    """Stopping runs that cannot reach the best value so far at their pace (minimize_box's ``beat``)
    finds the same optimum as following every start for all of max_iter, on every real corpus."""
    import sigmaudit.core.prior as prior_mod

    for m, (n, k, c) in _named(name).items():
        for components in (1, 2):
            objective = AtomsBetaObjective(n, k, c, components)
            fast = _minimize_from_starts(objective)
            with monkeypatch.context() as patch:
                patch.setattr(prior_mod, "minimize_box",
                              lambda *a, beat=None, **kw: minimize_box(*a, **kw))  # noqa: ARG005
                full = _minimize_from_starts(objective)
            assert fast.fun == pytest.approx(full.fun, rel=1e-12, abs=1e-9), (m, components)


def test_minimize_box_beat_stops_a_slow_run_only():
    """f(x) = 1 + e^(−x) on [0, 50]: a steepest-descent-like crawl (the Newton step is capped).
    With nothing to beat it runs its iterations; asked to beat 0.5 (unreachable at a gain of at most
    ~0.1·e^(−x) per step) it stops once its pace cannot get there; asked to beat a value it reaches, it
    does not stop."""
    from sigmaudit.core.optimize import PACE_WINDOW

    def fg(x):
        return 1.0 + float(np.exp(-x[0])), np.array([-np.exp(-x[0])])

    def run(**kw):
        return minimize_box(fg, np.array([0.0]), np.zeros(1), np.full(1, 50.0), max_step=0.1, max_iter=60, **kw)

    free, stopped, kept = run(), run(beat=0.5), run(beat=1.0 + np.exp(-5.0))
    assert free.nit == 60 and free.x[0] == pytest.approx(6.0)
    # the iterates are x_i = 0.1·i: the first i ≥ PACE_WINDOW with f_i − 0.5 > (largest of the last
    # PACE_WINDOW gains) · (60 − i)
    f = 1.0 + np.exp(-0.1 * np.arange(61))
    gains = f[:-1] - f[1:]
    expected = next(i for i in range(PACE_WINDOW, 61) if f[i] - 0.5 > gains[i - PACE_WINDOW:i].max() * (60 - i))
    assert stopped.nit == expected < 60 and stopped.fun == pytest.approx(f[expected], rel=1e-12)
    assert kept.nit == 60 and kept.fun == free.fun


def test_the_hessian_reuses_the_gradients_responsibilities(monkeypatch) -> None:
    """The one-Beta fit asks for the exact Hessian where it has just taken the gradient: the responsibilities of
    that θ are computed once, not twice (issue 45: a third of a fit's cost), and the fit is the same to the last bit
    as one that computes them afresh at every call."""
    rng = np.random.default_rng(8)
    p = np.where(rng.random(4000) < 0.2, 0.0, rng.beta(0.8, 1.5, 4000))
    n_u, k_u, c_u = _pairs(np.full(p.size, 8), rng.binomial(8, p), None)
    real_terms = AtomsBetaObjective._terms
    seen: list[bytes] = []

    def counting(self, theta, derivative=False):
        if derivative:
            seen.append(np.asarray(theta).tobytes())
        return real_terms(self, theta, derivative)

    with monkeypatch.context() as m:
        m.setattr(AtomsBetaObjective, "_terms", counting)
        kept = _minimize_from_starts(AtomsBetaObjective(n_u, k_u, c_u, 1))
    assert kept.nit > 3 and len(seen) == len(set(seen))  # each θ's responsibilities once

    def afresh(method):
        def call(self, theta):
            self.__dict__.pop("_last_responsibilities", None)
            return method(self, theta)
        return call

    monkeypatch.setattr(AtomsBetaObjective, "nll_grad", afresh(AtomsBetaObjective.nll_grad))
    monkeypatch.setattr(AtomsBetaObjective, "nll_hessian", afresh(AtomsBetaObjective.nll_hessian))
    fresh = _minimize_from_starts(AtomsBetaObjective(n_u, k_u, c_u, 1))
    assert np.array_equal(fresh.x, kept.x) and fresh.fun == kept.fun and fresh.nit == kept.nit
