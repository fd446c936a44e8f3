"""Trainers' own hooks, thin over :class:`sigmaudit.Forecaster` (see docs/integrations.md).

- :mod:`.core`: what the hooks compute, trainer-independent and tested here: the silent-group metrics
  of one step's groups (:class:`~.core.SilentGroupMetrics`) and a GRESO-style skip policy with an
  exploration floor (:class:`~.core.SkipPolicy`).
- :mod:`.trl`: a ``transformers.TrainerCallback`` for TRL's ``GRPOTrainer`` / ``RLOOTrainer`` (imports transformers).
- :mod:`.verl`: a verl training dataset that skips prompts forecast silent (``data.custom_cls``; imports verl).

Importing this package imports no trainer; the trainer modules are imported only when named.
"""
