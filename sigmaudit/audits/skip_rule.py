"""The one skip rule: which prompts to leave out of the next step, by their forecast P(silent)."""

DEFAULT_MAX_P_SILENT = 0.9
"""The one skip rule's default (``forecast``, ``watch``, the Python API's ``Forecaster`` and the trainer
integrations): a prompt is skipped when its forecast P(silent) at the next visit exceeds this, i.e. when at most
1 in 10 of its groups would carry a gradient. Not derived from a cost (what a skipped informative group is worth
against G rollouts depends on the run): ``sigmaudit backtest`` prints, on the user's own log, what each threshold
avoids and loses, and ``--max-p-silent`` (or ``--target-saving``) changes it."""
