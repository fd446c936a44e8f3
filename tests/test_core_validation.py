"""Every public core function rejects bad arguments with a ValueError quoting the bad value."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from sigmaudit.core import estimators, fidelity, group_size, prior, sigma, silent, weighting
from sigmaudit.core.corpus import Corpus

BETA = prior.BetaPrior(a=2.0, b=3.0, log_likelihood=0.0)
GRID = prior.GridPrior(grid=np.array([0.0, 0.5, 1.0]), weights=np.full(3, 1 / 3), iterations=0, log_likelihood=0.0)
CORPUS = Corpus([8, 8, 8], [0, 4, 8])


def _quoted(bad: object, message: str) -> bool:
    """The message quotes the value (ints may be shown as floats: 0 as 0.0)."""
    if isinstance(bad, float) and math.isnan(bad):
        return "nan" in message
    forms = {str(bad), repr(bad)}
    if isinstance(bad, int | float):
        forms |= {str(float(bad)), repr(float(bad))}
    return any(form in message for form in forms)


# (name, function of the bad value) for each kind of argument
P_USERS: list[tuple[str, Callable[[object], object]]] = [
    ("all_correct_rate", lambda p: silent.all_correct_rate(p, 8)),
    ("all_wrong_rate", lambda p: silent.all_wrong_rate(p, 8)),
    ("silent_rate", lambda p: silent.silent_rate(p, 8)),
    ("dapo_groups_per_kept_group", lambda p: silent.dapo_groups_per_kept_group(p, 8)),
    ("dapo_expected_draws", lambda p: silent.dapo_expected_draws(p, 8, 3)),
    ("dapo_keep_rate", lambda p: silent.dapo_keep_rate(p, 8, 3)),
    ("expected_sigma", lambda p: fidelity.expected_sigma(p, 8)),
    ("expected_sigma_squared", lambda p: fidelity.expected_sigma_squared(p, 8)),
    ("fidelity", lambda p: fidelity.fidelity(p, 8)),
    ("attenuation", lambda p: fidelity.attenuation(p, 8)),
    ("group_size_exact", lambda p: group_size.group_size_exact(p, 0.05)),
    ("group_size_closed_form", lambda p: group_size.group_size_closed_form(p, 0.05)),
    ("difficulty_weight", lambda p: weighting.difficulty_weight(p)),
    ("gradient_mass", lambda p: weighting.gradient_mass(p)),
    ("gradient_mass finite G", lambda p: weighting.gradient_mass(p, "drgrpo", 8)),
    ("band_share", lambda p: weighting.band_share(p, 1.0, weighting.MIDDLE)),
    ("bin_shares", lambda p: weighting.bin_shares(p, 1.0)),
]
G_USERS: list[tuple[str, Callable[[object], object]]] = [
    ("group_sigma", lambda G: sigma.group_sigma(0, G)),
    ("update_gain", lambda G: sigma.update_gain(0, G, "rloo")),
    ("all_correct_rate", lambda G: silent.all_correct_rate(0.3, G)),
    ("all_wrong_rate", lambda G: silent.all_wrong_rate(0.3, G)),
    ("silent_rate", lambda G: silent.silent_rate(0.3, G)),
    ("dapo_groups_per_kept_group", lambda G: silent.dapo_groups_per_kept_group(0.3, G)),
    ("dapo_expected_draws", lambda G: silent.dapo_expected_draws(0.3, G, 3)),
    ("dapo_expected_draws max_tries", lambda m: silent.dapo_expected_draws(0.3, 8, m)),
    ("dapo_keep_rate", lambda G: silent.dapo_keep_rate(0.3, G, 3)),
    ("dapo_keep_rate max_tries", lambda m: silent.dapo_keep_rate(0.3, 8, m)),
    ("expected_sigma", lambda G: fidelity.expected_sigma(0.3, G)),
    ("expected_sigma_squared", lambda G: fidelity.expected_sigma_squared(0.3, G)),
    ("fidelity", lambda G: fidelity.fidelity(0.3, G)),
    ("attenuation", lambda G: fidelity.attenuation(0.3, G)),
    ("gradient_mass grpo", lambda G: weighting.gradient_mass(0.3, "grpo", G)),
    ("gradient_mass drgrpo", lambda G: weighting.gradient_mass(0.3, "drgrpo", G)),
    ("silent_plugin", lambda G: estimators.silent_plugin(8, 3, G)),
    ("silent_unbiased", lambda G: estimators.silent_unbiased(8, 3, G)),
    ("silent_bayes beta", lambda G: estimators.silent_bayes(8, 3, G, BETA)),
    ("silent_bayes grid", lambda G: estimators.silent_bayes(8, 3, G, GRID)),
    ("silent_estimate", lambda G: estimators.silent_estimate(8, 3, G, "plugin")),
    ("BetaPrior.silent_rate", lambda G: BETA.silent_rate(8, 3, G)),
    ("BetaPrior.branch_rates", lambda G: BETA.branch_rates(8, 3, G)),
    ("Corpus.silent", lambda G: CORPUS.silent(G, "plugin")),
]
EPS_USERS: list[tuple[str, Callable[[object], object]]] = [
    ("group_size_exact", lambda e: group_size.group_size_exact(0.3, e)),
    ("group_size_closed_form", lambda e: group_size.group_size_closed_form(0.3, e)),
]
# (name, function of (n, k))
COUNT_USERS: list[tuple[str, Callable[[object, object], object]]] = [
    ("group_sigma", lambda n, k: sigma.group_sigma(k, n)),
    ("update_gain", lambda n, k: sigma.update_gain(k, n, "drgrpo")),
    ("silent_plugin", lambda n, k: estimators.silent_plugin(n, k, 2)),
    ("silent_unbiased", lambda n, k: estimators.silent_unbiased(n, k, 2)),
    ("silent_bayes", lambda n, k: estimators.silent_bayes(n, k, 2, BETA)),
    ("silent_estimate", lambda n, k: estimators.silent_estimate(n, k, 2, "bayes", GRID)),
    ("distinct_pairs", lambda n, k: prior.distinct_pairs(n, k)),
    ("fit_grid_prior", lambda n, k: prior.fit_grid_prior(n, k)),
    ("fit_beta_prior", lambda n, k: prior.fit_beta_prior(n, k)),
    ("GridPrior.posterior", lambda n, k: GRID.posterior(n, k)),
    ("BetaPrior.silent_rate", lambda n, k: BETA.silent_rate(n, k, 2)),
    ("Corpus", lambda n, k: Corpus(n, k)),
]


def _check(fn: Callable[[], object], bad: object) -> None:
    with pytest.raises(ValueError) as info:
        fn()
    assert _quoted(bad, str(info.value)), str(info.value)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf"), -1e-300])
@pytest.mark.parametrize(("name", "fn"), P_USERS, ids=[name for name, _ in P_USERS])
def test_p_outside_unit_interval(name, fn, bad) -> None:
    _check(lambda: fn(bad), bad)
    _check(lambda: fn(np.array([0.5, bad])), bad)  # also inside an array


@pytest.mark.parametrize("bad", [0, -3, 2.5, float("nan")])
@pytest.mark.parametrize(("name", "fn"), G_USERS, ids=[name for name, _ in G_USERS])
def test_group_size_below_one_or_fractional(name, fn, bad) -> None:
    _check(lambda: fn(bad), bad)


@pytest.mark.parametrize(("name", "fn"), G_USERS, ids=[name for name, _ in G_USERS])
def test_group_size_must_be_a_number(name, fn) -> None:
    _check(lambda: fn("8"), "8")


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, float("nan")])
@pytest.mark.parametrize(("name", "fn"), EPS_USERS, ids=[name for name, _ in EPS_USERS])
def test_eps_outside_open_unit_interval(name, fn, bad) -> None:
    _check(lambda: fn(bad), bad)
    _check(lambda: fn(np.array([0.1, bad])), bad)


@pytest.mark.parametrize(("name", "fn"), COUNT_USERS, ids=[name for name, _ in COUNT_USERS])
def test_k_above_n(name, fn) -> None:
    with pytest.raises(ValueError, match=r"k=9 > (n|G)=8"):
        fn(np.array([8, 8]), np.array([3, 9]))


@pytest.mark.parametrize(("name", "fn"), COUNT_USERS, ids=[name for name, _ in COUNT_USERS])
@pytest.mark.parametrize("bad_k", [-1, 2.5])
def test_k_negative_or_fractional(name, fn, bad_k) -> None:
    _check(lambda: fn(np.array([8, 8]), np.array([3, bad_k])), bad_k)


@pytest.mark.parametrize(("name", "fn"), COUNT_USERS, ids=[name for name, _ in COUNT_USERS])
@pytest.mark.parametrize("huge_k", [np.array([3, 1e20]), np.array([3, 2**64 - 1], dtype=np.uint64)])
def test_k_too_large_for_int64(name, fn, huge_k) -> None:
    """A k past int64 is refused as above n; it wrapped to -2**63 in the int64 conversion and passed k <= n."""
    with pytest.raises(ValueError, match=r"k must not exceed (n|G), got k=(1e\+20|1\.8446744073709552e\+19)"):
        fn(np.array([8, 8]), huge_k)


@pytest.mark.parametrize(("name", "fn"), COUNT_USERS, ids=[name for name, _ in COUNT_USERS])
def test_n_below_one(name, fn) -> None:
    _check(lambda: fn(np.array([8, 0]), np.array([3, 0])), 0)


def test_valid_edges_are_accepted() -> None:
    """The bounds themselves are legal: p ∈ {0, 1}, G = 1, k ∈ {0, n}, ε just inside (0, 1)."""
    assert silent.silent_rate(0.0, 1) == 1.0
    assert fidelity.fidelity(1.0, 1) == 0.0
    assert sigma.group_sigma(8, 8) == 0.0
    assert group_size.group_size_exact(0.5, 0.999) == 2
    assert group_size.group_size_closed_form(0.5, 1e-9) == 500_000_000
    assert silent.silent_rate(0.5, 8.0) == silent.silent_rate(0.5, 8)  # whole floats are fine


@pytest.mark.parametrize(("name", "fn"), G_USERS, ids=[name for name, _ in G_USERS])
def test_group_size_too_large_for_int64(name, fn) -> None:
    # 1e20 used to wrap to -2**63 in the int64 conversion (silent_rate(0.5, 1e20) gave inf)
    _check(lambda: fn(1e20), 1e20)
