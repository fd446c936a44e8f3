"""CLI commands, one module each; every module registers its command on ``sigmaudit.cli.app``."""
