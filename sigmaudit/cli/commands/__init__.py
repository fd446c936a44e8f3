"""CLI commands, one module each; ``sigmaudit.cli.app`` registers them."""
