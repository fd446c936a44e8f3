"""sigmaudit: audit RL-with-verifiable-rewards rollout logs.

The Python API exposes the closed forms of docs/theory.md, vectorised over NumPy
arrays, and the audit itself::

    >>> import sigmaudit
    >>> round(sigmaudit.silent_rate(0.05, 8), 4)
    0.6634
    >>> round(sigmaudit.fidelity(0.05, 8), 4)
    0.539

The commands run on paths (``sigmaudit.scan``, ``sigmaudit.check``, ``sigmaudit.forecast_logs``,
``sigmaudit.backtest_logs``) and ``sigmaudit.Forecaster`` updates a forecast step by step inside a
training loop; see docs/python-api.md.

Names are imported lazily (PEP 562), so ``import sigmaudit`` and the CLI's
``--help`` stay fast (``import sigmaudit`` imports neither NumPy nor Polars).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

_EXPORTS: dict[str, str] = {
    # σ and per-rule update gains
    "group_sigma": "sigmaudit.core.sigma",
    "update_gain": "sigmaudit.core.sigma",
    # advantages
    "grpo_advantages": "sigmaudit.core.advantages",
    "drgrpo_advantages": "sigmaudit.core.advantages",
    "dapo_advantages": "sigmaudit.core.advantages",
    "dapo_keep_mask": "sigmaudit.core.advantages",
    "rloo_advantages": "sigmaudit.core.advantages",
    "sign_advantages": "sigmaudit.core.advantages",
    "centered_rewards": "sigmaudit.core.advantages",
    "policy_update": "sigmaudit.core.advantages",
    # silent groups
    "silent_rate": "sigmaudit.core.silent",
    "all_correct_rate": "sigmaudit.core.silent",
    "all_wrong_rate": "sigmaudit.core.silent",
    "dapo_groups_per_kept_group": "sigmaudit.core.silent",
    "dapo_expected_draws": "sigmaudit.core.silent",
    "dapo_keep_rate": "sigmaudit.core.silent",
    # expected update and fidelity
    "expected_sigma": "sigmaudit.core.fidelity",
    "expected_sigma_squared": "sigmaudit.core.fidelity",
    "fidelity": "sigmaudit.core.fidelity",
    "attenuation": "sigmaudit.core.fidelity",
    # group-size law
    "group_size_closed_form": "sigmaudit.core.group_size",
    "group_size_exact": "sigmaudit.core.group_size",
    # difficulty weighting
    "difficulty_weight": "sigmaudit.core.weighting",
    "gradient_mass": "sigmaudit.core.weighting",
    "band_share": "sigmaudit.core.weighting",
    "bin_shares": "sigmaudit.core.weighting",
    "EXTREME": "sigmaudit.core.weighting",
    "MIDDLE": "sigmaudit.core.weighting",
    # estimators from finite logs
    "silent_plugin": "sigmaudit.core.estimators",
    "silent_unbiased": "sigmaudit.core.estimators",
    "silent_bayes": "sigmaudit.core.estimators",
    "silent_estimate": "sigmaudit.core.estimators",
    "fit_grid_prior": "sigmaudit.core.prior",
    "fit_beta_prior": "sigmaudit.core.prior",
    "Corpus": "sigmaudit.core.corpus",
    # commands as library calls on paths (docs/python-api.md)
    "scan": "sigmaudit.api",
    "check": "sigmaudit.api",
    "backtest_logs": "sigmaudit.api",
    "forecast_logs": "sigmaudit.api",
    "Forecaster": "sigmaudit.audits.forecaster",
    # commands as library calls on loaded counts
    "closed_forms": "sigmaudit.audits.calc:calc",
    "load_counts": "sigmaudit.loaders",
    "load_by": "sigmaudit.loaders",
    "check_logs": "sigmaudit.audits.check",
    "plan_logs": "sigmaudit.audits.plan",
    "LoadOptions": "sigmaudit.loaders",
    "audit": "sigmaudit.audits.scan",
    "forecast": "sigmaudit.audits.forecast",
    "backtest": "sigmaudit.audits.backtest",
    # errors
    "SigmauditError": "sigmaudit.errors",
    "InputError": "sigmaudit.errors",
    "SchemaError": "sigmaudit.errors",
    "ConfigError": "sigmaudit.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sigmaudit' has no attribute {name!r}")
    module, _, attr = module.partition(":")
    value = getattr(import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
