"""``python -m sigmaudit``."""

from sigmaudit.cli import run

run()
