"""core/special.py (numpy-only log-gamma, digamma, log-beta, Beta cell masses) against scipy.special
and mpmath, over the ranges the fits use (shapes in [e^-7, e^7], plus counts up to 10^6), and the
commands that must not import scipy at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.core import special
from sigmaudit.core.prior import default_grid

ROOT = Path(__file__).resolve().parents[1]
shape = st.floats(np.exp(-7.0), np.exp(7.0))
count = st.integers(0, 10**6)
EDGES = [np.exp(-7.0), 1e-3, 0.25, 0.5 - 1e-12, 0.5, 1.0 - 1e-9, 1.0, 1.0 + 1e-9, 1.4616321449683622, 1.5, 2.0 - 1e-9,
         2.0, 2.0 + 1e-9, 2.5, 9.999999, 10.0, 10.5, 171.6, 1097.0, 1e6, 1e6 + 1097.0]


def _close(ours, ref, scale):
    """|ours − ref| ≤ 1e-13 · |ref| + 2e-15 · scale: relative accuracy, except where the function is
    near a zero and the reference's own rounding is an absolute error on the scale of its terms."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert np.all(np.abs(ours - ref) <= 1e-13 * np.abs(ref) + 2e-15 * np.asarray(scale)), (ours, ref)


@pytest.mark.parametrize("x", EDGES)
def test_edge_values_against_mpmath(x):
    mpmath.mp.dps = 40
    _close(special.gammaln(x), float(mpmath.loggamma(x)), 1.0)
    _close(special.digamma(x), float(mpmath.digamma(x)), 1.0)


@settings(max_examples=300, deadline=None)
@given(x=st.one_of(shape, count.map(lambda n: n + 1.0), st.tuples(shape, count).map(sum)))
def test_gammaln_digamma_against_scipy(x):
    # |log Γ| of its own size: scipy's rounding on large x is relative to the value
    _close(special.gammaln(x), sp.gammaln(x), 1.0)
    _close(special.digamma(x), sp.digamma(x), 1.0)


@settings(max_examples=300, deadline=None)
@given(a=shape, b=shape, k=count, f=count)
def test_betaln_against_scipy(a, b, k, f):
    x, y = a + k, b + f
    # scipy's betaln subtracts log-gammas of the larger argument (or uses Γ products below 171):
    # its error is relative to the largest log-gamma involved, which is the scale here
    scale = 1.0 + abs(sp.gammaln(max(x, y))) + abs(sp.gammaln(x + y))
    _close(special.betaln(x, y), sp.betaln(x, y), scale)
    _close(special.betaln(a, b), sp.betaln(a, b), 1.0 + abs(sp.gammaln(max(a, b))) + abs(sp.gammaln(a + b)))


@settings(max_examples=60, deadline=None)
@given(a=shape, k=count, b=st.floats(np.exp(-7.0), 1.0))
def test_betaln_lopsided_against_mpmath(a, k, b):
    """A large and a small argument: log B ≈ log Γ(b) − b log a, far smaller than log Γ(a)."""
    mpmath.mp.dps = 40
    x = a + k
    ref = float(mpmath.log(mpmath.beta(mpmath.mpf(x), mpmath.mpf(b))))
    _close(special.betaln(x, b), ref, 1.0 + abs(sp.gammaln(b)))


def test_vectorised_shapes_and_domain():
    x = np.array([[0.5, 3.0], [12.0, 0.0]])
    assert special.gammaln(x).shape == (2, 2)
    assert special.gammaln(0.0) == np.inf and np.isnan(special.gammaln(-1.0))
    assert special.betaln(np.array([1.0, 2.0]), 3.0).shape == (2,)
    np.testing.assert_allclose(special.betaln([1.0, 2.0], 3.0), np.log([1 / 3, 1 / 12]), rtol=1e-15)


def _edges():
    inner = default_grid()[1:-1]
    return np.concatenate([[0.0], 0.5 * (inner[1:] + inner[:-1]), [1.0]])


@settings(max_examples=40, deadline=None)
@given(a=shape, b=shape)
def test_beta_cell_masses_against_scipy_betainc(a, b):
    """Masses integrated per cell against differences of scipy's betainc: within 1e-14 absolute plus
    1e-9 relative. A difference of betainc near 1 keeps only ~1e-16 absolute accuracy (its small
    masses are noise below that); ours are integrals of the density, cell by cell."""
    e = _edges()
    ref = np.maximum(np.diff(sp.betainc(a, b, e)), 0.0)
    ref /= ref.sum()
    ours = special.beta_cell_masses(a, b, e)
    assert ours.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.all(np.abs(ours - ref) <= 1e-14 + 1e-9 * ref)


@pytest.mark.parametrize(("a", "b"), [(0.5, 2.0), (1e-3, 1e-3), (3.0, 40.0), (60.0, 3.0), (1097.0, 1097.0)])
def test_beta_cell_masses_against_mpmath(a, b):
    """Relative accuracy per cell (1e-11) wherever the cell holds more than 1e-20 of the mass."""
    mpmath.mp.dps = 30
    e = _edges()
    cells = np.r_[0:e.size - 1:5, e.size - 2]  # every fifth cell and both end cells
    ref = np.array([float(mpmath.betainc(a, b, e[i], e[i + 1], regularized=True)) for i in cells])
    ours = special.beta_cell_masses(a, b, e)[cells]
    big = ref > 1e-20
    np.testing.assert_allclose(ours[big], ref[big], rtol=1e-11)
    assert np.all(np.abs(ours - ref) <= 1e-20 + 1e-11 * ref)


NO_SCIPY = """
import sys
from sigmaudit.cli.app import main
code = main({args!r})
assert code == 0, code
loaded = sorted(m for m in sys.modules if m == "scipy" or m.startswith("scipy."))
assert not loaded, loaded
"""


@pytest.mark.parametrize("args", [
    ["scan", "sample_logs/verl", "-f", "json"],
    ["scan", "sample_logs/rollouts.parquet"],
    ["plan", "sample_logs/verl"],
    ["check", "sample_logs/verl", "--max-silent", "0.9"],
    ["trend", "sample_logs/verl"],
    ["calc", "-p", "0.05", "-G", "8"],
], ids=lambda a: " ".join(a[:2]))
def test_commands_import_no_scipy(args, tmp_path):
    result = subprocess.run([sys.executable, "-c", NO_SCIPY.format(args=args)], cwd=ROOT, capture_output=True,
                            text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
