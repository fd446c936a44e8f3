"""Run the CLI in-process for tests: exit code, stdout and stderr apart."""

from __future__ import annotations

from sigmaudit.cli.app import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    """``sigmaudit ARGS``: (exit code, stdout, stderr) captured by pytest's ``capsys``."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
