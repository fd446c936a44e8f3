"""The closed-form core: pure functions of p, k, n and G (docs/theory.md).

Nothing in this package reads files, prints, or imports the CLI. Each module is
named for the quantity it holds: ``sigma`` (the group standard deviation and
per-rule update gains), ``advantages``, ``silent`` (silent-group rates and
DAPO's resampling), ``fidelity`` (exact E[σ], φ, attenuation), ``group_size``
(the group-size law), ``weighting`` (difficulty weight and gradient mass),
``estimators`` (silent rate from finite logs) and ``prior`` (the corpus-level
prior over p used by the model-based estimator).
"""
