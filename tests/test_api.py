"""The public Python API: every advertised name resolves, and the README's example holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sigmaudit

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "rollouts.parquet"


@pytest.mark.parametrize("name", sigmaudit.__all__)
def test_every_export_resolves(name):
    assert getattr(sigmaudit, name) is not None


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sigmaudit.nope  # noqa: B018


def test_readme_example():
    np.testing.assert_allclose(sigmaudit.silent_rate(np.array([0.05, 0.5]), 8), [0.95**8 + 0.05**8, 2 * 0.5**8])
    assert round(sigmaudit.fidelity(0.05, 8), 4) == 0.5390
    exact = sigmaudit.group_size_exact(np.array([0.0, 0.05]), 0.05)
    assert np.isnan(exact[0]) and exact[1] == 69
    assert sigmaudit.group_size_exact(0.0, 0.05) is None
    report = sigmaudit.audit(sigmaudit.load_counts([SAMPLE]), G=(8, 16))
    row = report.to_dict()["silent"][0]
    assert row["G"] == 8 and row["estimator"] == "unbiased" and row["estimate"] == pytest.approx(row["unbiased"])
