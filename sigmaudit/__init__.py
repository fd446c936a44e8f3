"""sigmaudit."""
